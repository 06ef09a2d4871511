//! Visitors, conversations and their messages.

use parley_domain::Timestamp;
use parley_domain::model::*;
use parley_domain::store::ops::{ConversationsRead, ConversationsWrite};
use parley_domain::store::{MessagePage, StoreError, StoreResult};
use parley_domain::verification::Method;

use super::row::to_json;
use super::tenancy::{TENANT_COLS, tenant};
use super::{Params, Row, Tx, statements};

pub(super) const VISITOR_COLS: &str = "v.id AS v_id, v.tenant_id AS v_tenant_id, v.site_id AS v_site_id, v.uuid AS v_uuid, v.name AS v_name, \
     v.email AS v_email, v.phone AS v_phone, v.last_url AS v_last_url, v.verified_at AS v_verified_at, \
     v.created_at AS v_created_at, v.updated_at AS v_updated_at, v.verified_method AS v_verified_method, \
     v.verified_target AS v_verified_target, v.user_id AS v_user_id, v.site_email AS v_site_email, \
     v.attributes AS v_attributes, v.locale AS v_locale";

fn visitor(r: &dyn Row) -> StoreResult<Visitor> {
    Ok(Visitor {
        id: VisitorId(r.i64("v_id")?),
        tenant_id: TenantId(r.i64("v_tenant_id")?),
        site_id: SiteId(r.i64("v_site_id")?),
        uuid: r.string("v_uuid")?,
        profile: VisitorProfile {
            name: r.text("v_name")?,
            email: r.text("v_email")?,
            phone: r.text("v_phone")?,
            last_url: r.text("v_last_url")?,
            locale: r.text("v_locale")?,
        },
        verified_at: r.opt_ts("v_verified_at")?,
        created_at: r.ts("v_created_at")?,
        updated_at: r.ts("v_updated_at")?,
        verified_method: r.opt_parsed("v_verified_method", Method::parse)?,
        verified_target: r.text("v_verified_target")?,
        user_id: r.text("v_user_id")?,
        site_email: r.text("v_site_email")?,
        attributes: r.opt_json("v_attributes")?.unwrap_or_default(),
    })
}

pub(super) const CONVERSATION_COLS: &str = "c.id AS c_id, c.public_id AS c_public_id, c.tenant_id AS c_tenant_id, c.site_id AS c_site_id, \
     c.installation_id AS c_installation_id, c.visitor_id AS c_visitor_id, c.status AS c_status, c.subject AS c_subject, \
     c.assignee_id AS c_assignee_id, c.created_at AS c_created_at, c.last_message_at AS c_last_message_at, \
     c.closed_at AS c_closed_at, c.verified_at AS c_verified_at";

fn conversation(r: &dyn Row) -> StoreResult<Conversation> {
    Ok(Conversation {
        id: ConversationId(r.i64("c_id")?),
        public_id: r.string("c_public_id")?,
        tenant_id: TenantId(r.i64("c_tenant_id")?),
        site_id: SiteId(r.i64("c_site_id")?),
        installation_id: InstallationId(r.i64("c_installation_id")?),
        visitor_id: VisitorId(r.i64("c_visitor_id")?),
        status: r.parsed("c_status", ConversationStatus::parse)?,
        subject: r.text("c_subject")?,
        assignee_id: r.int("c_assignee_id")?.map(OperatorId),
        created_at: r.ts("c_created_at")?,
        last_message_at: r.ts("c_last_message_at")?,
        closed_at: r.opt_ts("c_closed_at")?,
        verified_at: r.opt_ts("c_verified_at")?,
    })
}

/// A conversation with its visitor, site and assignee (`DETAILS_FROM`).
pub(super) fn details(r: &dyn Row) -> StoreResult<ConversationDetails> {
    let assignee = match r.int("a_id")? {
        Some(id) => Some(OperatorRef { id: OperatorId(id), name: r.string("a_name")?, email: r.string("a_email")? }),
        None => None,
    };
    Ok(ConversationDetails {
        conversation: conversation(r)?,
        visitor: visitor(r)?,
        site: SiteRef { id: SiteId(r.i64("s_id")?), name: r.string("s_name")? },
        assignee,
        unread_count: r.u64("c_unread")?,
        last_message: r.text("c_last_body")?,
        waiting_since: r.opt_ts("c_waiting_since")?,
    })
}

/// The visitor's messages of conversation `c` after the read marker of
/// the operator `$operator` names (a parameter, or a column of a statement
/// that reads for several operators): all of them when it has none. The
/// rows, for a count or an `EXISTS`. A macro, so that the constants built
/// from it stay constants.
macro_rules! unread_messages {
    ($operator:literal) => {
        concat!(
            "FROM messages um WHERE um.conversation_id = c.id AND um.sender_type = 'visitor'
               AND um.id > COALESCE((SELECT rm.message_id FROM read_markers rm
                                     WHERE rm.operator_id = ",
            $operator,
            " AND rm.conversation_id = c.id), 0)"
        )
    };
}

/// How many: the `unread_count` of conversations.
macro_rules! unread {
    ($operator:literal) => {
        concat!("(SELECT COUNT(*) ", unread_messages!($operator), ")")
    };
}

/// Whether any: what a badge counts conversations by. It stops at the
/// first unread message, where a count would read every one of a long
/// conversation's.
macro_rules! has_unread {
    ($operator:literal) => {
        concat!("EXISTS (SELECT 1 ", unread_messages!($operator), ")")
    };
}
pub(super) use {has_unread, unread_messages};
pub(super) const UNREAD: &str = unread!(":operator");
pub(super) const HAS_UNREAD: &str = has_unread!(":operator");

/// The details' columns; a visitor's scope (no `:operator`) reads no
/// unread count: the widget's streams read details with every entry and
/// show none of them. The latest line and the visitor's wait are kept on
/// the conversation's row (see `summarize`).
pub(super) const DETAILS_COLS: &str = concat!(
    "s.id AS s_id, s.name AS s_name, a.id AS a_id, a.name AS a_name, a.email AS a_email, CASE WHEN :operator IS NULL THEN 0 ELSE ",
    unread!(":operator"),
    " END AS c_unread, c.last_body AS c_last_body, c.waiting_since AS c_waiting_since"
);

/// The conversation, its visitor, site and assignee, joined within the
/// conversation's tenant.
pub(super) const DETAILS_FROM: &str = "FROM conversations c
     JOIN visitors v ON v.id = c.visitor_id AND v.tenant_id = c.tenant_id
     JOIN sites s ON s.id = c.site_id AND s.tenant_id = c.tenant_id
     LEFT JOIN operators a ON a.id = c.assignee_id AND a.tenant_id = c.tenant_id";

pub(super) const MESSAGE_COLS: &str = "m.id AS m_id, m.tenant_id AS m_tenant_id, m.conversation_id AS m_conversation_id, \
     m.sender_type AS m_sender_type, m.sender_id AS m_sender_id, m.sender_name AS m_sender_name, m.body AS m_body, \
     m.internal AS m_internal, m.created_at AS m_created_at, m.client_message_id AS m_client_message_id, \
     m.read_by_visitor_at AS m_read_by_visitor_at, m.attachments AS m_attachments";

pub(super) fn message(r: &dyn Row) -> StoreResult<Message> {
    Ok(Message {
        id: MessageId(r.i64("m_id")?),
        tenant_id: TenantId(r.i64("m_tenant_id")?),
        conversation_id: ConversationId(r.i64("m_conversation_id")?),
        sender: Sender {
            kind: r.parsed("m_sender_type", SenderKind::parse)?,
            operator_id: r.int("m_sender_id")?.map(OperatorId),
            name: r.text("m_sender_name")?,
        },
        body: r.string("m_body")?,
        internal: r.flag("m_internal")?,
        created_at: r.ts("m_created_at")?,
        client_message_id: r.text("m_client_message_id")?,
        read_by_visitor_at: r.opt_ts("m_read_by_visitor_at")?,
        attachments: r.opt_json("m_attachments")?.unwrap_or_default(),
    })
}

/// The visibility rule with its four holes: the tenant, the site (or
/// `NULL`), the operator (or `NULL`), whether that operator is an admin.
/// `SCOPE` fills them with parameters; a statement that reads for several
/// operators at once (who is pushed, a push's badge) fills them with its
/// columns, so the rule is written here alone.
macro_rules! scope {
    ($tenant:literal, $site:literal, $operator:literal, $admin:literal) => {
        concat!(
            "c.tenant_id = ",
            $tenant,
            " AND (",
            $site,
            " IS NULL OR c.site_id = ",
            $site,
            ")
             AND (",
            $operator,
            " IS NULL OR ",
            $admin,
            " OR c.site_id IN (
                 SELECT os.site_id FROM operator_sites os WHERE os.operator_id = ",
            $operator,
            " AND os.tenant_id = ",
            $tenant,
            "))"
        )
    };
}
pub(super) use scope;

/// The visibility rule of `ConversationScope`, a statement's `scope`
/// parameter, which binds four (see its `Param`): `:tenant`, `:site` (or
/// null), `:operator` (or null), and `:admin`, whether that operator is
/// an admin. An agent sees only the sites it is a member of, read from the
/// membership table at query time.
pub(super) const SCOPE: &str = scope!(":tenant", ":site", ":operator", ":admin");

/// Binds `:status` (`'all'`, `'open'`, `'mine'` or a status); `'mine'`
/// reads the scope's `:operator`.
const STATUS_FILTER: &str = "(:status = 'all' OR (:status = 'open' AND c.status <> 'closed')
     OR (:status = 'mine' AND c.status = 'assigned' AND c.assignee_id = :operator) OR c.status = :status)";

fn filter_arg(f: StatusFilter) -> &'static str {
    match f {
        StatusFilter::All => "all",
        StatusFilter::Open => "open",
        StatusFilter::Mine => "mine",
        StatusFilter::Only(s) => s.as_str(),
    }
}

/// A widget's poll: the conversation's columns come with every message
/// row (or once, with no message, through the LEFT JOIN).
fn poll(order: &str) -> String {
    format!(
        "SELECT {CONVERSATION_COLS}, {MESSAGE_COLS}
         FROM conversations c
         LEFT JOIN messages m ON m.conversation_id = c.id AND m.tenant_id = c.tenant_id
             AND m.id > :after AND (:include_internal OR m.internal = FALSE)
         WHERE {SCOPE} AND c.public_id = :public_id
         ORDER BY m.id {order} LIMIT :limit"
    )
}

/// Messages of a conversation within the caller's whole scope, not only
/// the conversation id it happened to hold.
pub(super) const MESSAGES_FROM: &str = "FROM messages m JOIN conversations c ON c.id = m.conversation_id AND c.tenant_id = m.tenant_id";

fn visitor_by_uuid() -> String {
    format!("SELECT {VISITOR_COLS} FROM visitors v WHERE v.tenant_id = :tenant AND v.site_id = :site AND v.uuid = :uuid")
}

fn visitor_by_user_id() -> String {
    format!("SELECT {VISITOR_COLS} FROM visitors v WHERE v.tenant_id = :tenant AND v.site_id = :site AND v.user_id = :user_id")
}

fn visitor_by_id() -> String {
    format!("SELECT {VISITOR_COLS} FROM visitors v WHERE v.tenant_id = :tenant AND v.site_id = :site AND v.id = :id")
}

fn conversation_where(condition: &str) -> String {
    format!("SELECT {CONVERSATION_COLS} FROM conversations c WHERE {SCOPE} AND {condition}")
}

/// A conversation joined to its visitor. Under `FOR UPDATE` PostgreSQL
/// locks both rows, the conversation's first (it locks in `FROM` order),
/// the same order as the units that read them one after the other.
fn conversation_and_visitor(condition: &str) -> String {
    format!(
        "SELECT {CONVERSATION_COLS}, {VISITOR_COLS} FROM conversations c
         JOIN visitors v ON v.id = c.visitor_id AND v.tenant_id = c.tenant_id AND v.site_id = c.site_id
         WHERE {SCOPE} AND {condition}"
    )
}

statements! {
    VISITOR_BY_UUID<'a>(tenant: TenantId, site: SiteId, uuid: &'a str) locked VISITOR_BY_UUID_LOCKED => |_| visitor_by_uuid(),
    VISITOR(tenant: TenantId, site: SiteId, id: VisitorId) locked VISITOR_LOCKED => |_| visitor_by_id(),
    VISITOR_BY_USER_ID<'a>(tenant: TenantId, site: SiteId, user_id: &'a str) locked VISITOR_BY_USER_ID_LOCKED => |_| visitor_by_user_id(),
    LATEST_CONVERSATION_OF(tenant: TenantId, site: SiteId, visitor: VisitorId) => |_| format!(
        "SELECT {CONVERSATION_COLS} FROM conversations c
         WHERE c.tenant_id = :tenant AND c.site_id = :site AND c.visitor_id = :visitor
         ORDER BY c.last_message_at DESC, c.id DESC LIMIT 1"
    ),
    CONVERSATION_BY_PUBLIC_ID<'a>(scope: ConversationScope, public_id: &'a str) locked CONVERSATION_BY_PUBLIC_ID_LOCKED => |_|
        conversation_where("c.public_id = :public_id"),
    CONVERSATION_AND_VISITOR_BY_PUBLIC_ID<'a>(scope: ConversationScope, public_id: &'a str)
        locked CONVERSATION_AND_VISITOR_BY_PUBLIC_ID_LOCKED => |_| conversation_and_visitor("c.public_id = :public_id"),
    CONVERSATION(scope: ConversationScope, id: ConversationId) locked CONVERSATION_LOCKED => |_| conversation_where("c.id = :id"),
    CONVERSATION_DETAILS(scope: ConversationScope, id: ConversationId) => |_|
        format!("SELECT {CONVERSATION_COLS}, {VISITOR_COLS}, {DETAILS_COLS} {DETAILS_FROM} WHERE {SCOPE} AND c.id = :id"),
    /// The page is chosen first, by id: the details (the unread count
    /// above all, a count per conversation) are then read for its rows
    /// only, where a sort over every conversation of the scope would
    /// compute them for all of them. Planned with the page's size, which
    /// decides how its rows are joined (`Plan`).
    CONVERSATIONS<'a>(scope: ConversationScope, status: &'a str, limit: u32, offset: u64) planned EachRun => |_| format!(
        "SELECT {CONVERSATION_COLS}, {VISITOR_COLS}, {DETAILS_COLS}
         FROM (SELECT c.id AS page_id FROM conversations c
               WHERE {SCOPE} AND {STATUS_FILTER}
               ORDER BY c.last_message_at DESC, c.id DESC LIMIT :limit OFFSET :offset) page
         {}
         ORDER BY c.last_message_at DESC, c.id DESC",
        DETAILS_FROM.replacen("FROM conversations c", "JOIN conversations c ON c.id = page.page_id", 1)
    ),
    /// The sum of the scope's rows of `conversation_counts`, which its
    /// triggers keep per tenant, site, status and assignee (the
    /// `search_at_scale` migrations): the scope and the filter read the
    /// same columns there as on a conversation, under the same alias.
    COUNT_CONVERSATIONS<'a>(scope: ConversationScope, status: &'a str) => |_| format!(
        "SELECT CAST(COALESCE(SUM(c.n), 0) AS BIGINT) AS n FROM conversation_counts c WHERE {SCOPE} AND {STATUS_FILTER}"
    ),
    /// Folds the rows of `conversation_counts` up to id `upto` into one
    /// per group (see `Dialect::fold_counts`).
    FOLD_COUNTS(upto: i64) => |d| d.fold_counts(),
    /// The rows just folded, where folding left them (SQLite).
    DROP_FOLDED_COUNTS(upto: i64) => |_| "DELETE FROM conversation_counts WHERE id <= :upto".into(),
    /// The last row of `conversation_counts` a fold will take in.
    LAST_COUNT_ID() => |_| "SELECT COALESCE(MAX(id), 0) AS last_id FROM conversation_counts".into(),
    MESSAGES_AFTER(scope: ConversationScope, conversation: ConversationId, include_internal: bool, after: MessageId, limit: u32) => |_| format!(
        "SELECT {MESSAGE_COLS} {MESSAGES_FROM}
         WHERE {SCOPE} AND m.conversation_id = :conversation AND (:include_internal OR m.internal = FALSE) AND m.id > :after
         ORDER BY m.id ASC LIMIT :limit"
    ),
    MESSAGES_LATEST(scope: ConversationScope, conversation: ConversationId, include_internal: bool, limit: u32) => |_| format!(
        "SELECT {MESSAGE_COLS} {MESSAGES_FROM}
         WHERE {SCOPE} AND m.conversation_id = :conversation AND (:include_internal OR m.internal = FALSE) ORDER BY m.id DESC LIMIT :limit"
    ),
    /// A sender's earlier message of this client id (see the unique
    /// index `messages_client_message`).
    CLIENT_MESSAGE<'a>(
        scope: ConversationScope, conversation: ConversationId, sender_type: &'a str, sender_id: i64, client_message_id: &'a str,
    ) => |_| format!(
        "SELECT {MESSAGE_COLS} {MESSAGES_FROM}
         WHERE {SCOPE} AND m.conversation_id = :conversation AND m.sender_type = :sender_type
           AND COALESCE(m.sender_id, 0) = :sender_id AND m.client_message_id = :client_message_id"
    ),
    /// The first message of one of the visitor's conversations, opened
    /// with this client id (a later message with the same id belongs to
    /// its own conversation and opens nothing).
    VISITOR_CLIENT_MESSAGE<'a>(scope: ConversationScope, visitor: VisitorId, client_message_id: &'a str) => |_| format!(
        "SELECT {MESSAGE_COLS} {MESSAGES_FROM}
         WHERE {SCOPE} AND c.visitor_id = :visitor AND m.sender_type = 'visitor' AND m.client_message_id = :client_message_id
           AND m.id = (SELECT MIN(f.id) FROM messages f WHERE f.conversation_id = c.id)
         ORDER BY m.id LIMIT 1"
    ),
    /// `after` is a message id, or -1 for the latest messages.
    POLL_AFTER<'a>(scope: ConversationScope, public_id: &'a str, include_internal: bool, after: i64, limit: u32) => |_| poll("ASC"),
    POLL_LATEST<'a>(scope: ConversationScope, public_id: &'a str, include_internal: bool, after: i64, limit: u32) => |_| poll("DESC"),
    COUNT_OPEN_CONVERSATIONS() => |_| "SELECT COUNT(*) AS n FROM conversations WHERE status <> 'closed'".into(),
    IDLE_CONVERSATIONS(cutoff: Timestamp, limit: u32) => |d| d.claim(format!(
        "SELECT {CONVERSATION_COLS}, {TENANT_COLS} FROM conversations c JOIN tenants t ON t.id = c.tenant_id
         WHERE c.status <> 'closed' AND c.last_message_at < :cutoff ORDER BY c.last_message_at LIMIT :limit"
    ), "c"),
    INSERT_VISITOR<'a>(
        tenant: TenantId, site: SiteId, uuid: &'a str, name: Option<&'a str>, email: Option<&'a str>, phone: Option<&'a str>,
        last_url: Option<&'a str>, locale: Option<&'a str>, created_at: Timestamp,
    ) => |_| "INSERT INTO visitors
         (tenant_id, site_id, uuid, name, email, phone, last_url, locale, created_at, updated_at)
         VALUES (:tenant, :site, :uuid, :name, :email, :phone, :last_url, :locale, :created_at, :created_at)
         ON CONFLICT (site_id, uuid) DO NOTHING RETURNING id".into(),
    UPDATE_VISITOR_PROFILE<'a>(
        tenant: TenantId, site: SiteId, id: VisitorId, name: Option<&'a str>, email: Option<&'a str>, phone: Option<&'a str>,
        last_url: Option<&'a str>, locale: Option<&'a str>, at: Timestamp,
    ) => |_| "UPDATE visitors SET name = :name, email = :email, phone = :phone, last_url = :last_url, locale = :locale,
         updated_at = :at
         WHERE tenant_id = :tenant AND site_id = :site AND id = :id".into(),
    /// Once until someone of the team has written since: the reply is
    /// marked, and a new one is due only after an operator's answer.
    MARK_AWAY_REPLIED(tenant: TenantId, site: SiteId, id: ConversationId, at: Timestamp) => |_|
        "UPDATE conversations SET away_replied_at = :at
         WHERE tenant_id = :tenant AND site_id = :site AND id = :id
           AND (away_replied_at IS NULL OR EXISTS (
               SELECT 1 FROM messages m WHERE m.conversation_id = conversations.id AND m.sender_type = 'operator'
                 AND m.internal = FALSE AND m.created_at > conversations.away_replied_at))".into(),
    UPDATE_VISITOR_IDENTITY<'a>(
        tenant: TenantId, site: SiteId, id: VisitorId, user_id: Option<&'a str>, site_email: Option<&'a str>,
        attributes: Option<&'a str>, at: Timestamp,
    ) => |_| "UPDATE visitors SET user_id = :user_id, site_email = :site_email, attributes = :attributes, updated_at = :at
         WHERE tenant_id = :tenant AND site_id = :site AND id = :id".into(),
    INSERT_CONVERSATION<'a>(
        public_id: &'a str, tenant: TenantId, site: SiteId, installation: InstallationId, visitor: VisitorId,
        subject: Option<&'a str>, start_url: Option<&'a str>, created_at: Timestamp,
    ) => |_| "INSERT INTO conversations
         (public_id, tenant_id, site_id, installation_id, visitor_id, status, subject, start_url, created_at, last_message_at)
         SELECT :public_id, :tenant, :site, :installation, :visitor, 'unassigned', :subject, :start_url, :created_at, :created_at
         WHERE EXISTS (SELECT 1 FROM installations WHERE id = :installation AND tenant_id = :tenant AND site_id = :site)
           AND EXISTS (SELECT 1 FROM visitors WHERE id = :visitor AND tenant_id = :tenant AND site_id = :site)
         RETURNING id".into(),
    UPDATE_CONVERSATION<'a>(
        scope: ConversationScope, id: ConversationId, status: &'a str, assignee: Option<OperatorId>, last_message_at: Timestamp,
        closed_at: Option<Timestamp>, verified_at: Option<Timestamp>,
    ) => |_| format!(
        "UPDATE conversations AS c SET status = :status, assignee_id = :assignee, last_message_at = :last_message_at,
             closed_at = :closed_at, verified_at = :verified_at
         WHERE {SCOPE} AND c.id = :id
           AND (:assignee IS NULL OR EXISTS (SELECT 1 FROM operators o WHERE o.id = :assignee AND o.tenant_id = :tenant))"
    ),
    /// Taken before a message insert on PostgreSQL: ids come from a
    /// sequence, and the lock makes the next id in a conversation wait for
    /// the commit of the one before, so ids increase in commit order.
    LOCK_CONVERSATION(scope: ConversationScope, id: ConversationId) => |d|
        d.locked(format!("SELECT c.id AS c_id FROM conversations c WHERE {SCOPE} AND c.id = :id")),
    /// What a message changes of its conversation's summary (see
    /// [`summarize`]), as a statement of its own where the insert cannot
    /// carry it (`Dialect::chains_writes`).
    SUMMARIZE_MESSAGE<'a>(
        scope: ConversationScope, conversation: ConversationId, sender_type: &'a str, internal: bool, body: &'a str,
        created_at: Timestamp,
    ) => |_| summarize(""),
    /// The message, with its conversation's summary where the dialect
    /// chains writes: a post is then one statement fewer for the database.
    INSERT_MESSAGE<'a>(
        scope: ConversationScope, conversation: ConversationId, sender_type: &'a str, sender_id: Option<OperatorId>,
        sender_name: Option<&'a str>, body: &'a str, internal: bool, created_at: Timestamp, client_message_id: Option<&'a str>,
        attachments: Option<&'a str>,
    ) => |d| {
        let insert = format!(
            "INSERT INTO messages (tenant_id, conversation_id, sender_type, sender_id, sender_name, body, internal, created_at,
                 client_message_id, attachments)
             SELECT :tenant, :conversation, :sender_type, :sender_id, :sender_name, :body, :internal, :created_at,
                 :client_message_id, :attachments
             WHERE EXISTS (SELECT 1 FROM conversations c WHERE {SCOPE} AND c.id = :conversation)
             RETURNING id"
        );
        if d.chains_writes() {
            // Every part of the statement runs, whatever the others find:
            // the summary is written only with the message.
            format!("WITH m AS ({insert}), summary AS ({}) SELECT id FROM m", summarize("AND EXISTS (SELECT 1 FROM m)"))
        } else {
            insert
        }
    },
}

/// What a message (`:sender_type`, `:internal`, `:body`, `:created_at`)
/// changes of its conversation's summary: a message the visitor and
/// operators see becomes its latest line (its first
/// [`LAST_MESSAGE_CHARS`] characters) and its last activity; the visitor
/// starts waiting with its first unanswered message, and an operator's
/// reply ends the wait. `also`: a further condition on writing it.
fn summarize(also: &str) -> String {
    let (visitor, operator, system) = (SenderKind::Visitor.as_str(), SenderKind::Operator.as_str(), SenderKind::System.as_str());
    let shown = format!("(:internal = FALSE AND :sender_type <> '{system}')");
    format!(
        "UPDATE conversations AS c SET
             last_body = CASE WHEN {shown} THEN substr(:body, 1, {LAST_MESSAGE_CHARS}) ELSE c.last_body END,
             last_message_at = CASE WHEN {shown} THEN :created_at ELSE c.last_message_at END,
             waiting_since = CASE WHEN :sender_type = '{visitor}' THEN COALESCE(c.waiting_since, :created_at)
                                  WHEN {shown} AND :sender_type = '{operator}' THEN NULL ELSE c.waiting_since END
         WHERE {SCOPE} AND c.id = :conversation {also}"
    )
}

impl ConversationsRead for Tx<'_> {
    fn visitor_by_uuid(&mut self, scope: SiteScope, uuid: &str) -> StoreResult<Option<Visitor>> {
        self.one(self.locking(VISITOR_BY_UUID { tenant: scope.tenant, site: scope.site, uuid }), visitor)
    }

    fn visitor(&mut self, scope: SiteScope, id: VisitorId) -> StoreResult<Option<Visitor>> {
        self.one(self.locking(VISITOR { tenant: scope.tenant, site: scope.site, id }), visitor)
    }

    fn visitor_by_user_id(&mut self, scope: SiteScope, user_id: &str) -> StoreResult<Option<Visitor>> {
        self.one(self.locking(VISITOR_BY_USER_ID { tenant: scope.tenant, site: scope.site, user_id }), visitor)
    }

    fn latest_conversation_of(&mut self, scope: SiteScope, visitor: VisitorId) -> StoreResult<Option<Conversation>> {
        self.one(LATEST_CONVERSATION_OF { tenant: scope.tenant, site: scope.site, visitor }, conversation)
    }

    fn conversation_by_public_id(&mut self, scope: ConversationScope, public_id: &str) -> StoreResult<Option<Conversation>> {
        let params = self.locking(CONVERSATION_BY_PUBLIC_ID { scope, public_id });
        Ok(self.conversation_row(params, |_| Ok(()))?.map(|(c, ())| c))
    }

    fn conversation_and_visitor_by_public_id(
        &mut self,
        scope: ConversationScope,
        public_id: &str,
    ) -> StoreResult<Option<(Conversation, Visitor)>> {
        self.conversation_row(self.locking(CONVERSATION_AND_VISITOR_BY_PUBLIC_ID { scope, public_id }), visitor)
    }

    fn conversation(&mut self, scope: ConversationScope, id: ConversationId) -> StoreResult<Option<Conversation>> {
        Ok(self.conversation_row(self.locking(CONVERSATION { scope, id }), |_| Ok(()))?.map(|(c, ())| c))
    }

    fn conversation_details(&mut self, scope: ConversationScope, id: ConversationId) -> StoreResult<Option<ConversationDetails>> {
        self.one(CONVERSATION_DETAILS { scope, id }, details)
    }

    fn conversations(
        &mut self,
        scope: ConversationScope,
        filter: StatusFilter,
        offset: u64,
        limit: u32,
    ) -> StoreResult<Vec<ConversationDetails>> {
        self.all(CONVERSATIONS { scope, status: filter_arg(filter), limit, offset }, details)
    }

    fn count_conversations(&mut self, scope: ConversationScope, filter: StatusFilter) -> StoreResult<u64> {
        self.count(COUNT_CONVERSATIONS { scope, status: filter_arg(filter) })
    }

    fn messages(&mut self, scope: ConversationScope, conversation: ConversationId, page: MessagePage) -> StoreResult<Vec<Message>> {
        match page.after_id {
            Some(after) => {
                let params = MESSAGES_AFTER { scope, conversation, include_internal: page.include_internal, after, limit: page.limit };
                self.all(params, message)
            }
            None => {
                let params = MESSAGES_LATEST { scope, conversation, include_internal: page.include_internal, limit: page.limit };
                let mut latest = self.all(params, message)?;
                latest.reverse();
                Ok(latest)
            }
        }
    }

    fn client_message(
        &mut self,
        scope: ConversationScope,
        conversation: ConversationId,
        sender: &Sender,
        client_message_id: &str,
    ) -> StoreResult<Option<Message>> {
        let sender_id = sender.operator_id.map_or(0, |id| id.0);
        self.one(CLIENT_MESSAGE { scope, conversation, sender_type: sender.kind.as_str(), sender_id, client_message_id }, message)
    }

    fn visitor_client_message(&mut self, scope: SiteScope, visitor: VisitorId, client_message_id: &str) -> StoreResult<Option<Message>> {
        self.one(VISITOR_CLIENT_MESSAGE { scope: scope.into(), visitor, client_message_id }, message)
    }

    fn conversation_with_messages(
        &mut self,
        scope: ConversationScope,
        public_id: &str,
        page: MessagePage,
    ) -> StoreResult<Option<(Conversation, Vec<Message>)>> {
        let (include_internal, limit) = (page.include_internal, page.limit);
        let mut found: Option<Conversation> = None;
        let mut messages = Vec::new();
        let mut each = |r: &dyn Row| {
            if found.is_none() {
                found = Some(conversation(r)?);
            }
            if r.int("m_id")?.is_some() {
                messages.push(message(r)?);
            }
            Ok(true)
        };
        match page.after_id {
            Some(after) => self.each(POLL_AFTER { scope, public_id, include_internal, after: after.0, limit }, &mut each)?,
            None => self.each(POLL_LATEST { scope, public_id, include_internal, after: -1, limit }, &mut each)?,
        }
        if page.after_id.is_none() {
            messages.reverse();
        }
        Ok(found.map(|c| (c, messages)))
    }

    fn count_open_conversations(&mut self) -> StoreResult<u64> {
        self.count(COUNT_OPEN_CONVERSATIONS {})
    }
}

impl Tx<'_> {
    /// One conversation and what `with` reads of the same row, the
    /// conversation remembered as locked when a write unit read it.
    fn conversation_row<T>(
        &mut self,
        params: impl Params,
        with: impl Fn(&dyn Row) -> StoreResult<T>,
    ) -> StoreResult<Option<(Conversation, T)>> {
        let found = self.one(params, |r| Ok((conversation(r)?, with(r)?)))?;
        if let Some((c, _)) = &found {
            self.note_locked(c.id);
        }
        Ok(found)
    }

    fn note_locked(&mut self, id: ConversationId) {
        if self.writing && !self.locked.contains(&id) {
            self.locked.push(id);
        }
    }
}

impl ConversationsWrite for Tx<'_> {
    fn fold_conversation_counts(&mut self) -> StoreResult<()> {
        let upto = self.one(LAST_COUNT_ID {}, |r| r.i64("last_id"))?.unwrap_or(0);
        self.exec(FOLD_COUNTS { upto })?;
        if !self.dialect().folds_in_one_statement() {
            self.exec(DROP_FOLDED_COUNTS { upto })?;
        }
        Ok(())
    }

    fn idle_conversations(&mut self, cutoff: Timestamp, limit: u32) -> StoreResult<Vec<(Tenant, Conversation)>> {
        let found = self.all(IDLE_CONVERSATIONS { cutoff, limit }, |r| Ok((tenant(r)?, conversation(r)?)))?;
        for (_, c) in &found {
            self.note_locked(c.id);
        }
        Ok(found)
    }

    fn insert_visitor(&mut self, scope: SiteScope, v: &NewVisitor) -> StoreResult<Visitor> {
        let p = &v.profile;
        let params = INSERT_VISITOR {
            tenant: scope.tenant,
            site: scope.site,
            uuid: &v.uuid,
            name: p.name.as_deref(),
            email: p.email.as_deref(),
            phone: p.phone.as_deref(),
            last_url: p.last_url.as_deref(),
            locale: p.locale.as_deref(),
            created_at: v.created_at,
        };
        let inserted = self.one(params, |r| r.i64("id"))?;
        let Some(id) = inserted else {
            // A unit running beside this one (PostgreSQL) registered the
            // same visitor first: it is the one.
            return self.visitor_by_uuid(scope, &v.uuid)?.ok_or_else(|| StoreError::Internal("visitor vanished after a conflict".into()));
        };
        Ok(Visitor {
            id: VisitorId(id),
            tenant_id: scope.tenant,
            site_id: scope.site,
            uuid: v.uuid.clone(),
            profile: v.profile.clone(),
            verified_at: None,
            verified_method: None,
            verified_target: None,
            user_id: None,
            site_email: None,
            attributes: Default::default(),
            created_at: v.created_at,
            updated_at: v.created_at,
        })
    }

    fn mark_away_replied(&mut self, scope: SiteScope, id: ConversationId, at: Timestamp) -> StoreResult<bool> {
        Ok(self.exec(MARK_AWAY_REPLIED { tenant: scope.tenant, site: scope.site, id, at })? == 1)
    }

    fn update_visitor_identity(&mut self, scope: SiteScope, v: &Visitor, at: Timestamp) -> StoreResult<()> {
        let attributes = if v.attributes.is_empty() { None } else { Some(to_json(&v.attributes)?) };
        self.exec(UPDATE_VISITOR_IDENTITY {
            tenant: scope.tenant,
            site: scope.site,
            id: v.id,
            user_id: v.user_id.as_deref(),
            site_email: v.site_email.as_deref(),
            attributes: attributes.as_deref(),
            at,
        })?;
        Ok(())
    }

    fn update_visitor_profile(&mut self, scope: SiteScope, id: VisitorId, p: &VisitorProfile, at: Timestamp) -> StoreResult<()> {
        self.exec(UPDATE_VISITOR_PROFILE {
            tenant: scope.tenant,
            site: scope.site,
            id,
            name: p.name.as_deref(),
            email: p.email.as_deref(),
            phone: p.phone.as_deref(),
            last_url: p.last_url.as_deref(),
            locale: p.locale.as_deref(),
            at,
        })?;
        Ok(())
    }

    fn insert_conversation(&mut self, scope: SiteScope, c: &NewConversation) -> StoreResult<Conversation> {
        let id = ConversationId(self.insert(INSERT_CONVERSATION {
            public_id: &c.public_id,
            tenant: scope.tenant,
            site: scope.site,
            installation: c.installation_id,
            visitor: c.visitor_id,
            subject: c.subject.as_deref(),
            start_url: c.start_url.as_deref(),
            created_at: c.created_at,
        })?);
        // Nobody else can see the new row before this unit commits.
        self.note_locked(id);
        Ok(Conversation {
            id,
            public_id: c.public_id.clone(),
            tenant_id: scope.tenant,
            site_id: scope.site,
            installation_id: c.installation_id,
            visitor_id: c.visitor_id,
            status: ConversationStatus::Unassigned,
            subject: c.subject.clone(),
            assignee_id: None,
            created_at: c.created_at,
            last_message_at: c.created_at,
            closed_at: None,
            verified_at: None,
        })
    }

    fn update_conversation(&mut self, scope: ConversationScope, c: &Conversation) -> StoreResult<()> {
        let params = UPDATE_CONVERSATION {
            scope,
            id: c.id,
            status: c.status.as_str(),
            assignee: c.assignee_id,
            last_message_at: c.last_message_at,
            closed_at: c.closed_at,
            verified_at: c.verified_at,
        };
        if self.exec(params)? != 1 {
            return Err(StoreError::Internal("update refused: conversation not in scope".into()));
        }
        self.note_changed(c.id);
        Ok(())
    }

    fn insert_message(&mut self, scope: ConversationScope, m: &NewMessage, attachments: &[AttachmentRef]) -> StoreResult<Message> {
        if self.dialect().locks_rows() && !self.locked.contains(&m.conversation_id) {
            self.one(LOCK_CONVERSATION { scope, id: m.conversation_id }, |_| Ok(()))?;
            self.note_locked(m.conversation_id);
        }
        let described = if attachments.is_empty() { None } else { Some(to_json(&attachments)?) };
        let id = self.insert(INSERT_MESSAGE {
            scope,
            conversation: m.conversation_id,
            sender_type: m.sender.kind.as_str(),
            sender_id: m.sender.operator_id,
            sender_name: m.sender.name.as_deref(),
            body: &m.body,
            internal: m.internal,
            created_at: m.created_at,
            client_message_id: m.client_message_id.as_deref(),
            attachments: described.as_deref(),
        })?;
        if !self.dialect().chains_writes() {
            let summary = SUMMARIZE_MESSAGE {
                scope,
                conversation: m.conversation_id,
                sender_type: m.sender.kind.as_str(),
                internal: m.internal,
                body: &m.body,
                created_at: m.created_at,
            };
            self.defer(summary, false)?;
        }
        if !m.internal {
            self.effects.messages.add(m.sender.kind);
        }
        Ok(Message {
            id: MessageId(id),
            tenant_id: scope.tenant,
            conversation_id: m.conversation_id,
            sender: m.sender.clone(),
            body: m.body.clone(),
            internal: m.internal,
            created_at: m.created_at,
            client_message_id: m.client_message_id.clone(),
            read_by_visitor_at: None,
            attachments: attachments.to_vec(),
        })
    }
}
