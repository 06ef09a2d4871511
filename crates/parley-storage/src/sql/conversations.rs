//! Visitors, conversations and their messages.

use parley_domain::Timestamp;
use parley_domain::model::*;
use parley_domain::store::ops::{ConversationsRead, ConversationsWrite};
use parley_domain::store::{MessagePage, StoreError, StoreResult};
use parley_domain::verification::Method;

use super::tenancy::{TENANT_COLS, tenant};
use super::{Arg, Row, Stmt, Tx, args, statements};

pub(super) const VISITOR_COLS: &str = "v.id AS v_id, v.tenant_id AS v_tenant_id, v.site_id AS v_site_id, v.uuid AS v_uuid, v.name AS v_name, \
     v.email AS v_email, v.phone AS v_phone, v.last_url AS v_last_url, v.verified_at AS v_verified_at, \
     v.created_at AS v_created_at, v.updated_at AS v_updated_at, v.verified_method AS v_verified_method, \
     v.verified_target AS v_verified_target";

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
        },
        verified_at: r.opt_ts("v_verified_at")?,
        created_at: r.ts("v_created_at")?,
        updated_at: r.ts("v_updated_at")?,
        verified_method: r.opt_parsed("v_verified_method", Method::parse)?,
        verified_target: r.text("v_verified_target")?,
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
    })
}

pub(super) const DETAILS_COLS: &str = "s.id AS s_id, s.name AS s_name, a.id AS a_id, a.name AS a_name, a.email AS a_email";

/// The conversation, its visitor, site and assignee, joined within the
/// conversation's tenant.
pub(super) const DETAILS_FROM: &str = "FROM conversations c
     JOIN visitors v ON v.id = c.visitor_id AND v.tenant_id = c.tenant_id
     JOIN sites s ON s.id = c.site_id AND s.tenant_id = c.tenant_id
     LEFT JOIN operators a ON a.id = c.assignee_id AND a.tenant_id = c.tenant_id";

pub(super) const MESSAGE_COLS: &str = "m.id AS m_id, m.tenant_id AS m_tenant_id, m.conversation_id AS m_conversation_id, \
     m.sender_type AS m_sender_type, m.sender_id AS m_sender_id, m.sender_name AS m_sender_name, m.body AS m_body, \
     m.internal AS m_internal, m.created_at AS m_created_at, m.client_message_id AS m_client_message_id";

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
    })
}

/// The visibility rule of `ConversationScope`, bound as ?1 to ?4 (see
/// `scope_args`): tenant, site (or null), operator (or null), and whether
/// that operator is an admin. An agent sees only the sites it is a member
/// of, read from the membership table at query time.
pub(super) const SCOPE: &str = "c.tenant_id = ?1 AND (?2 IS NULL OR c.site_id = ?2)
     AND (?3 IS NULL OR ?4 OR c.site_id IN (SELECT os.site_id FROM operator_sites os WHERE os.operator_id = ?3 AND os.tenant_id = ?1))";

pub(super) fn scope_args(s: ConversationScope) -> [Arg<'static>; 4] {
    [Arg::from(s.tenant), Arg::from(s.site), Arg::from(s.operator.map(|(o, _)| o)), Arg::from(matches!(s.operator, Some((_, Role::Admin))))]
}

/// The scope's four arguments followed by others, as one array (no
/// allocation: the widget's poll goes through here).
macro_rules! scoped {
    ($scope:expr; $($rest:expr),* $(,)?) => {{
        let [tenant, site, operator, admin] = $crate::sql::conversations::scope_args($scope);
        [tenant, site, operator, admin, $($crate::sql::Arg::from($rest)),*]
    }};
}
pub(super) use scoped;

/// Binds ?5 (`'all'`, `'open'` or a status).
const STATUS_FILTER: &str = "(?5 = 'all' OR (?5 = 'open' AND c.status <> 'closed') OR c.status = ?5)";

fn filter_arg(f: StatusFilter) -> &'static str {
    match f {
        StatusFilter::All => "all",
        StatusFilter::Open => "open",
        StatusFilter::Only(s) => s.as_str(),
    }
}

/// A widget's poll: the conversation's columns come with every message
/// row (or once, with no message, through the LEFT JOIN).
fn poll(order: &str) -> String {
    format!(
        "SELECT {CONVERSATION_COLS}, {MESSAGE_COLS}
         FROM conversations c
         LEFT JOIN messages m ON m.conversation_id = c.id AND m.tenant_id = c.tenant_id AND m.id > ?7 AND (?6 OR m.internal = FALSE)
         WHERE {SCOPE} AND c.public_id = ?5
         ORDER BY m.id {order} LIMIT ?8"
    )
}

/// Messages of a conversation within the caller's whole scope, not only
/// the conversation id it happened to hold.
const MESSAGES_FROM: &str = "FROM messages m JOIN conversations c ON c.id = m.conversation_id AND c.tenant_id = m.tenant_id";

fn visitor_by_uuid() -> String {
    format!("SELECT {VISITOR_COLS} FROM visitors v WHERE v.tenant_id = ?1 AND v.site_id = ?2 AND v.uuid = ?3")
}

fn visitor_by_id() -> String {
    format!("SELECT {VISITOR_COLS} FROM visitors v WHERE v.tenant_id = ?1 AND v.site_id = ?2 AND v.id = ?3")
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
    VISITOR_BY_UUID[Int, Int, Text](_) => visitor_by_uuid(),
    VISITOR_BY_UUID_LOCKED[Int, Int, Text](d) => d.locked(visitor_by_uuid()),
    VISITOR[Int, Int, Int](_) => visitor_by_id(),
    VISITOR_LOCKED[Int, Int, Int](d) => d.locked(visitor_by_id()),
    CONVERSATION_BY_PUBLIC_ID[Int, Int, Int, Bool, Text](_) => conversation_where("c.public_id = ?5"),
    CONVERSATION_BY_PUBLIC_ID_LOCKED[Int, Int, Int, Bool, Text](d) => d.locked(conversation_where("c.public_id = ?5")),
    CONVERSATION_AND_VISITOR_BY_PUBLIC_ID[Int, Int, Int, Bool, Text](_) => conversation_and_visitor("c.public_id = ?5"),
    CONVERSATION_AND_VISITOR_BY_PUBLIC_ID_LOCKED[Int, Int, Int, Bool, Text](d) =>
        d.locked(conversation_and_visitor("c.public_id = ?5")),
    CONVERSATION[Int, Int, Int, Bool, Int](_) => conversation_where("c.id = ?5"),
    CONVERSATION_LOCKED[Int, Int, Int, Bool, Int](d) => d.locked(conversation_where("c.id = ?5")),
    CONVERSATION_DETAILS[Int, Int, Int, Bool, Int](_) =>
        format!("SELECT {CONVERSATION_COLS}, {VISITOR_COLS}, {DETAILS_COLS} {DETAILS_FROM} WHERE {SCOPE} AND c.id = ?5"),
    CONVERSATIONS[Int, Int, Int, Bool, Text, Int, Int](_) => format!(
        "SELECT {CONVERSATION_COLS}, {VISITOR_COLS}, {DETAILS_COLS} {DETAILS_FROM}
         WHERE {SCOPE} AND {STATUS_FILTER}
         ORDER BY c.last_message_at DESC, c.id DESC LIMIT ?6 OFFSET ?7"
    ),
    COUNT_CONVERSATIONS[Int, Int, Int, Bool, Text](_) => format!("SELECT COUNT(*) AS n FROM conversations c WHERE {SCOPE} AND {STATUS_FILTER}"),
    MESSAGES_AFTER[Int, Int, Int, Bool, Int, Bool, Int, Int](_) => format!(
        "SELECT {MESSAGE_COLS} {MESSAGES_FROM}
         WHERE {SCOPE} AND m.conversation_id = ?5 AND (?6 OR m.internal = FALSE) AND m.id > ?7 ORDER BY m.id ASC LIMIT ?8"
    ),
    MESSAGES_LATEST[Int, Int, Int, Bool, Int, Bool, Int](_) => format!(
        "SELECT {MESSAGE_COLS} {MESSAGES_FROM}
         WHERE {SCOPE} AND m.conversation_id = ?5 AND (?6 OR m.internal = FALSE) ORDER BY m.id DESC LIMIT ?7"
    ),
    /// A sender's earlier message of this client id (see the unique
    /// index `messages_client_message`).
    CLIENT_MESSAGE[Int, Int, Int, Bool, Int, Text, Int, Text](_) => format!(
        "SELECT {MESSAGE_COLS} {MESSAGES_FROM}
         WHERE {SCOPE} AND m.conversation_id = ?5 AND m.sender_type = ?6 AND COALESCE(m.sender_id, 0) = ?7
           AND m.client_message_id = ?8"
    ),
    /// The first message of one of the visitor's conversations, opened
    /// with this client id (a later message with the same id belongs to
    /// its own conversation and opens nothing).
    VISITOR_CLIENT_MESSAGE[Int, Int, Int, Bool, Int, Text](_) => format!(
        "SELECT {MESSAGE_COLS} {MESSAGES_FROM}
         WHERE {SCOPE} AND c.visitor_id = ?5 AND m.sender_type = 'visitor' AND m.client_message_id = ?6
           AND m.id = (SELECT MIN(f.id) FROM messages f WHERE f.conversation_id = c.id)
         ORDER BY m.id LIMIT 1"
    ),
    POLL_AFTER[Int, Int, Int, Bool, Text, Bool, Int, Int](_) => poll("ASC"),
    POLL_LATEST[Int, Int, Int, Bool, Text, Bool, Int, Int](_) => poll("DESC"),
    COUNT_OPEN_CONVERSATIONS[](_) => "SELECT COUNT(*) AS n FROM conversations WHERE status <> 'closed'".into(),
    IDLE_CONVERSATIONS[Int, Int](d) => d.claim(format!(
        "SELECT {CONVERSATION_COLS}, {TENANT_COLS} FROM conversations c JOIN tenants t ON t.id = c.tenant_id
         WHERE c.status <> 'closed' AND c.last_message_at < ?1 ORDER BY c.last_message_at LIMIT ?2"
    ), "c"),
    INSERT_VISITOR[Int, Int, Text, Text, Text, Text, Text, Int](_) => "INSERT INTO visitors
         (tenant_id, site_id, uuid, name, email, phone, last_url, created_at, updated_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?8)
         ON CONFLICT (site_id, uuid) DO NOTHING RETURNING id".into(),
    UPDATE_VISITOR_PROFILE[Int, Int, Int, Text, Text, Text, Text, Int](_) =>
        "UPDATE visitors SET name = ?4, email = ?5, phone = ?6, last_url = ?7, updated_at = ?8
         WHERE tenant_id = ?1 AND site_id = ?2 AND id = ?3".into(),
    INSERT_CONVERSATION[Text, Int, Int, Int, Int, Text, Text, Int](_) => "INSERT INTO conversations
         (public_id, tenant_id, site_id, installation_id, visitor_id, status, subject, start_url, created_at, last_message_at)
         SELECT ?1, ?2, ?3, ?4, ?5, 'unassigned', ?6, ?7, ?8, ?8
         WHERE EXISTS (SELECT 1 FROM installations WHERE id = ?4 AND tenant_id = ?2 AND site_id = ?3)
           AND EXISTS (SELECT 1 FROM visitors WHERE id = ?5 AND tenant_id = ?2 AND site_id = ?3)
         RETURNING id".into(),
    UPDATE_CONVERSATION[Int, Int, Int, Bool, Int, Text, Int, Int, Int, Int](_) => format!(
        "UPDATE conversations AS c SET status = ?6, assignee_id = ?7, last_message_at = ?8, closed_at = ?9, verified_at = ?10
         WHERE {SCOPE} AND c.id = ?5
           AND (?7 IS NULL OR EXISTS (SELECT 1 FROM operators o WHERE o.id = ?7 AND o.tenant_id = ?1))"
    ),
    /// Taken before a message insert on PostgreSQL: ids come from a
    /// sequence, and the lock makes the next id in a conversation wait for
    /// the commit of the one before, so ids increase in commit order.
    LOCK_CONVERSATION[Int, Int, Int, Bool, Int](d) => d.locked(format!("SELECT c.id AS c_id FROM conversations c WHERE {SCOPE} AND c.id = ?5")),
    INSERT_MESSAGE[Int, Int, Int, Bool, Int, Text, Int, Text, Text, Bool, Int, Text](_) => format!(
        "INSERT INTO messages (tenant_id, conversation_id, sender_type, sender_id, sender_name, body, internal, created_at, client_message_id)
         SELECT ?1, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12
         WHERE EXISTS (SELECT 1 FROM conversations c WHERE {SCOPE} AND c.id = ?5)
         RETURNING id"
    ),
}

impl ConversationsRead for Tx<'_> {
    fn visitor_by_uuid(&mut self, scope: SiteScope, uuid: &str) -> StoreResult<Option<Visitor>> {
        let stmt = self.locking(&VISITOR_BY_UUID, &VISITOR_BY_UUID_LOCKED);
        self.one(stmt, args![scope.tenant, scope.site, uuid], visitor)
    }

    fn visitor(&mut self, scope: SiteScope, id: VisitorId) -> StoreResult<Option<Visitor>> {
        let stmt = self.locking(&VISITOR, &VISITOR_LOCKED);
        self.one(stmt, args![scope.tenant, scope.site, id], visitor)
    }

    fn conversation_by_public_id(&mut self, scope: ConversationScope, public_id: &str) -> StoreResult<Option<Conversation>> {
        let stmt = self.locking(&CONVERSATION_BY_PUBLIC_ID, &CONVERSATION_BY_PUBLIC_ID_LOCKED);
        Ok(self.conversation_row(stmt, &scoped!(scope; public_id), |_| Ok(()))?.map(|(c, ())| c))
    }

    fn conversation_and_visitor_by_public_id(
        &mut self,
        scope: ConversationScope,
        public_id: &str,
    ) -> StoreResult<Option<(Conversation, Visitor)>> {
        let stmt = self.locking(&CONVERSATION_AND_VISITOR_BY_PUBLIC_ID, &CONVERSATION_AND_VISITOR_BY_PUBLIC_ID_LOCKED);
        self.conversation_row(stmt, &scoped!(scope; public_id), visitor)
    }

    fn conversation(&mut self, scope: ConversationScope, id: ConversationId) -> StoreResult<Option<Conversation>> {
        let stmt = self.locking(&CONVERSATION, &CONVERSATION_LOCKED);
        Ok(self.conversation_row(stmt, &scoped!(scope; id), |_| Ok(()))?.map(|(c, ())| c))
    }

    fn conversation_details(&mut self, scope: ConversationScope, id: ConversationId) -> StoreResult<Option<ConversationDetails>> {
        self.one(&CONVERSATION_DETAILS, &scoped!(scope; id), details)
    }

    fn conversations(
        &mut self,
        scope: ConversationScope,
        filter: StatusFilter,
        offset: u64,
        limit: u32,
    ) -> StoreResult<Vec<ConversationDetails>> {
        self.all(&CONVERSATIONS, &scoped!(scope; filter_arg(filter), limit, offset), details)
    }

    fn count_conversations(&mut self, scope: ConversationScope, filter: StatusFilter) -> StoreResult<u64> {
        self.count(&COUNT_CONVERSATIONS, &scoped!(scope; filter_arg(filter)))
    }

    fn messages(&mut self, scope: ConversationScope, conversation: ConversationId, page: MessagePage) -> StoreResult<Vec<Message>> {
        match page.after_id {
            Some(after) => self.all(&MESSAGES_AFTER, &scoped!(scope; conversation, page.include_internal, after, page.limit), message),
            None => {
                let mut latest = self.all(&MESSAGES_LATEST, &scoped!(scope; conversation, page.include_internal, page.limit), message)?;
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
        self.one(&CLIENT_MESSAGE, &scoped!(scope; conversation, sender.kind.as_str(), sender_id, client_message_id), message)
    }

    fn visitor_client_message(&mut self, scope: SiteScope, visitor: VisitorId, client_message_id: &str) -> StoreResult<Option<Message>> {
        let scope: ConversationScope = scope.into();
        self.one(&VISITOR_CLIENT_MESSAGE, &scoped!(scope; visitor, client_message_id), message)
    }

    fn conversation_with_messages(
        &mut self,
        scope: ConversationScope,
        public_id: &str,
        page: MessagePage,
    ) -> StoreResult<Option<(Conversation, Vec<Message>)>> {
        let (stmt, after) = match page.after_id {
            Some(after) => (&POLL_AFTER, after.0),
            None => (&POLL_LATEST, -1),
        };
        let mut found: Option<Conversation> = None;
        let mut messages = Vec::new();
        self.each(stmt, &scoped!(scope; public_id, page.include_internal, after, page.limit), &mut |r| {
            if found.is_none() {
                found = Some(conversation(r)?);
            }
            if r.int("m_id")?.is_some() {
                messages.push(message(r)?);
            }
            Ok(true)
        })?;
        if page.after_id.is_none() {
            messages.reverse();
        }
        Ok(found.map(|c| (c, messages)))
    }

    fn count_open_conversations(&mut self) -> StoreResult<u64> {
        self.count(&COUNT_OPEN_CONVERSATIONS, args![])
    }
}

impl Tx<'_> {
    /// One conversation and what `with` reads of the same row, the
    /// conversation remembered as locked when a write unit read it.
    fn conversation_row<T>(
        &mut self,
        stmt: &'static Stmt,
        args: &[Arg<'_>],
        with: impl Fn(&dyn Row) -> StoreResult<T>,
    ) -> StoreResult<Option<(Conversation, T)>> {
        let found = self.one(stmt, args, |r| Ok((conversation(r)?, with(r)?)))?;
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
    fn idle_conversations(&mut self, cutoff: Timestamp, limit: u32) -> StoreResult<Vec<(Tenant, Conversation)>> {
        let found = self.all(&IDLE_CONVERSATIONS, args![cutoff, limit], |r| Ok((tenant(r)?, conversation(r)?)))?;
        for (_, c) in &found {
            self.note_locked(c.id);
        }
        Ok(found)
    }

    fn insert_visitor(&mut self, scope: SiteScope, v: &NewVisitor) -> StoreResult<Visitor> {
        let p = &v.profile;
        let inserted = self.one(
            &INSERT_VISITOR,
            args![scope.tenant, scope.site, &v.uuid, &p.name, &p.email, &p.phone, &p.last_url, v.created_at],
            |r| r.i64("id"),
        )?;
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
            created_at: v.created_at,
            updated_at: v.created_at,
        })
    }

    fn update_visitor_profile(&mut self, scope: SiteScope, id: VisitorId, p: &VisitorProfile, at: Timestamp) -> StoreResult<()> {
        self.exec(&UPDATE_VISITOR_PROFILE, args![scope.tenant, scope.site, id, &p.name, &p.email, &p.phone, &p.last_url, at])?;
        Ok(())
    }

    fn insert_conversation(&mut self, scope: SiteScope, c: &NewConversation) -> StoreResult<Conversation> {
        let id = ConversationId(self.insert(
            &INSERT_CONVERSATION,
            args![&c.public_id, scope.tenant, scope.site, c.installation_id, c.visitor_id, &c.subject, &c.start_url, c.created_at],
        )?);
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
        let args = scoped!(scope; c.id, c.status.as_str(), c.assignee_id, c.last_message_at, c.closed_at, c.verified_at);
        if self.exec(&UPDATE_CONVERSATION, &args)? != 1 {
            return Err(StoreError::Internal("update refused: conversation not in scope".into()));
        }
        Ok(())
    }

    fn insert_message(&mut self, scope: ConversationScope, m: &NewMessage) -> StoreResult<Message> {
        if self.dialect().locks_rows() && !self.locked.contains(&m.conversation_id) {
            self.one(&LOCK_CONVERSATION, &scoped!(scope; m.conversation_id), |_| Ok(()))?;
            self.note_locked(m.conversation_id);
        }
        let args = scoped!(scope; m.conversation_id, m.sender.kind.as_str(), m.sender.operator_id, &m.sender.name, &m.body, m.internal, m.created_at, &m.client_message_id);
        let id = self.insert(&INSERT_MESSAGE, &args)?;
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
        })
    }
}
