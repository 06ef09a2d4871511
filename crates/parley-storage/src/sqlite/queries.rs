//! The SQL behind `ReadTx` and `WriteTx`.
//!
//! Every statement that touches tenant data has the tenant (and, for the
//! visitor side, the site) in its `WHERE` clause, taken from the scope the
//! domain passes in.

use parley_domain::Timestamp;
use parley_domain::events::EventKind;
use parley_domain::events::OutboxEvent;
use parley_domain::model::*;
use parley_domain::store::{MessagePage, OutboxMessage, OutboxStats, Prunable, ReadTx, StoreError, StoreResult, WriteTx};
use parley_domain::verification::{Challenge, ChallengeCount, ChallengeStatus, Method, NewChallenge};
use parley_domain::webhooks::fairness::{DueDelivery, EndpointHealth, Pause};
use parley_domain::webhooks::{Attempt, AttemptRecord, ClaimedDelivery, Delivery, DeliveryStatus, NewWebhook, NextStep, Webhook};
use rusqlite::types::Type;
use rusqlite::{Connection, OptionalExtension, Row, params};

use super::error::map;

/// A unit of work's view of a connection.
pub(super) struct Handle<'c> {
    conn: &'c Connection,
    /// Webhook deliveries this unit created; the writer wakes the delivery
    /// worker after committing them.
    pub(super) deliveries_added: usize,
    /// Whether this unit changed what an installation token resolves to;
    /// the writer then moves the installations generation on.
    pub(super) installations_changed: bool,
}

impl<'c> Handle<'c> {
    pub(super) fn new(conn: &'c Connection) -> Self {
        Self { conn, deliveries_added: 0, installations_changed: false }
    }

    fn one<T>(&self, sql: &str, params: impl rusqlite::Params, f: impl FnOnce(&Row<'_>) -> rusqlite::Result<T>) -> StoreResult<Option<T>> {
        let mut stmt = self.conn.prepare_cached(sql).map_err(map)?;
        stmt.query_row(params, f).optional().map_err(map)
    }

    fn all<T>(&self, sql: &str, params: impl rusqlite::Params, f: impl FnMut(&Row<'_>) -> rusqlite::Result<T>) -> StoreResult<Vec<T>> {
        let mut stmt = self.conn.prepare_cached(sql).map_err(map)?;
        let rows = stmt.query_map(params, f).map_err(map)?;
        rows.collect::<rusqlite::Result<Vec<T>>>().map_err(map)
    }

    fn exec(&self, sql: &str, params: impl rusqlite::Params) -> StoreResult<usize> {
        let mut stmt = self.conn.prepare_cached(sql).map_err(map)?;
        stmt.execute(params).map_err(map)
    }

    /// Inserts one row and returns its id. Scoped inserts are written as
    /// `INSERT … SELECT … WHERE EXISTS (parent in scope)`, so a parent of
    /// another tenant inserts nothing and fails here.
    fn insert(&self, sql: &str, params: impl rusqlite::Params) -> StoreResult<i64> {
        match self.exec(sql, params)? {
            1 => Ok(self.conn.last_insert_rowid()),
            _ => Err(StoreError::Internal("insert refused: parent row not in scope".into())),
        }
    }

    fn attempts(&self, tenant: TenantId, delivery: i64) -> StoreResult<Vec<Attempt>> {
        self.all(
            "SELECT attempted_at, duration_ms, status_code, error FROM webhook_attempts WHERE tenant_id = ?1 AND delivery_id = ?2 ORDER BY id",
            [tenant.0, delivery],
            |r| {
                Ok(Attempt {
                    attempted_at: ts(r, 0)?,
                    duration_ms: r.get::<_, i64>(1)?.max(0) as u64,
                    status_code: r.get(2)?,
                    error: r.get(3)?,
                })
            },
        )
    }

    /// Adds site memberships; a site of another tenant is refused.
    fn add_memberships(&self, tenant: TenantId, operator: OperatorId, sites: &[SiteId]) -> StoreResult<()> {
        for site in sites {
            let added = self.exec(
                "INSERT INTO operator_sites (tenant_id, operator_id, site_id)
                 SELECT ?1, ?2, ?3 WHERE EXISTS (SELECT 1 FROM sites WHERE id = ?3 AND tenant_id = ?1)",
                params![tenant.0, operator.0, site.0],
            )?;
            if added == 0 {
                return Err(StoreError::Internal(format!("site {} is not in tenant {}", site.0, tenant.0)));
            }
        }
        Ok(())
    }

    fn site_ids(&self, tenant: TenantId, operator: OperatorId) -> StoreResult<Vec<SiteId>> {
        self.all(
            "SELECT site_id FROM operator_sites WHERE tenant_id = ?1 AND operator_id = ?2 ORDER BY site_id",
            [tenant.0, operator.0],
            |r| Ok(SiteId(r.get(0)?)),
        )
    }
}

/// `?first, ?first+1, …` for a list of `n` values bound from position `first`.
fn placeholders(first: usize, n: usize) -> String {
    (first..first + n).map(|i| format!("?{i}")).collect::<Vec<_>>().join(", ")
}

fn ts(r: &Row<'_>, i: usize) -> rusqlite::Result<Timestamp> {
    Ok(Timestamp::from_millis(r.get(i)?))
}

fn opt_ts(r: &Row<'_>, i: usize) -> rusqlite::Result<Option<Timestamp>> {
    Ok(r.get::<_, Option<i64>>(i)?.map(Timestamp::from_millis))
}

/// Reads a text column into one of the domain's enums.
fn enum_col<T>(r: &Row<'_>, i: usize, parse: fn(&str) -> Option<T>) -> rusqlite::Result<T> {
    let s: String = r.get(i)?;
    parse(&s).ok_or_else(|| rusqlite::Error::FromSqlConversionFailure(i, Type::Text, format!("unexpected value {s:?}").into()))
}

const TENANT_COLS: &str = "t.id, t.slug, t.name, t.created_at";
fn tenant_at(r: &Row<'_>, o: usize) -> rusqlite::Result<Tenant> {
    Ok(Tenant { id: TenantId(r.get(o)?), slug: r.get(o + 1)?, name: r.get(o + 2)?, created_at: ts(r, o + 3)? })
}

const SITE_COLS: &str =
    "s.id, s.tenant_id, s.name, s.domains, s.widget_title, s.widget_greeting, s.accent_color, s.privacy_text, s.privacy_url, s.created_at";
fn site_at(r: &Row<'_>, o: usize) -> rusqlite::Result<Site> {
    let domains: String = r.get(o + 3)?;
    let domains = serde_json::from_str(&domains).map_err(|e| rusqlite::Error::FromSqlConversionFailure(o + 3, Type::Text, e.into()))?;
    Ok(Site {
        id: SiteId(r.get(o)?),
        tenant_id: TenantId(r.get(o + 1)?),
        name: r.get(o + 2)?,
        domains,
        appearance: WidgetAppearance {
            title: r.get(o + 4)?,
            greeting: r.get(o + 5)?,
            accent_color: r.get(o + 6)?,
            privacy_text: r.get(o + 7)?,
            privacy_url: r.get(o + 8)?,
        },
        created_at: ts(r, o + 9)?,
    })
}

const INSTALLATION_COLS: &str = "i.id, i.tenant_id, i.site_id, i.token, i.name, i.installation_type, i.enabled, i.heartbeat_status, \
     i.last_seen_at, i.widget_version, i.page_host, i.reported_type, i.created_at";
fn installation_at(r: &Row<'_>, o: usize) -> rusqlite::Result<Installation> {
    Ok(Installation {
        id: InstallationId(r.get(o)?),
        tenant_id: TenantId(r.get(o + 1)?),
        site_id: SiteId(r.get(o + 2)?),
        token: r.get(o + 3)?,
        name: r.get(o + 4)?,
        installation_type: r.get(o + 5)?,
        enabled: r.get(o + 6)?,
        heartbeat_status: enum_col(r, o + 7, InstallationStatus::parse)?,
        last_seen_at: opt_ts(r, o + 8)?,
        widget_version: r.get(o + 9)?,
        page_host: r.get(o + 10)?,
        reported_type: r.get(o + 11)?,
        created_at: ts(r, o + 12)?,
    })
}

const WEBHOOK_COLS: &str = "w.id, w.tenant_id, w.url, w.events, w.secret, w.previous_secret, w.previous_secret_expires_at, \
     w.enabled, w.disabled_reason, w.created_at, w.failure_streak, w.paused_until";
fn webhook_at(r: &Row<'_>, o: usize) -> rusqlite::Result<Webhook> {
    let events = match r.get::<_, Option<String>>(o + 3)? {
        Some(json) => {
            let names: Vec<String> =
                serde_json::from_str(&json).map_err(|e| rusqlite::Error::FromSqlConversionFailure(o + 3, Type::Text, e.into()))?;
            Some(names.iter().filter_map(|n| EventKind::parse(n)).collect())
        }
        None => None,
    };
    Ok(Webhook {
        id: WebhookId(r.get(o)?),
        tenant_id: TenantId(r.get(o + 1)?),
        url: r.get(o + 2)?,
        events,
        secret: r.get(o + 4)?,
        previous_secret: r.get(o + 5)?,
        previous_secret_expires_at: opt_ts(r, o + 6)?,
        enabled: r.get(o + 7)?,
        disabled_reason: r.get(o + 8)?,
        created_at: ts(r, o + 9)?,
        failure_streak: r.get(o + 10)?,
        paused_until: opt_ts(r, o + 11)?,
    })
}

const DELIVERY_COLS: &str =
    "d.id, d.endpoint_id, ev.event_id, ev.kind, d.status, d.next_attempt_at, d.last_error, d.created_at, d.finished_at";
/// Each endpoint's oldest due deliveries (`?1` now, `?2` how many), through
/// its (endpoint, due time) index: a backlog at one endpoint cannot push
/// the others out of a claim. CROSS JOIN keeps the endpoints as the outer
/// loop: left to choose, SQLite scans every delivery and runs the
/// subquery for each, which made a claim cost the whole backlog
/// (milliseconds at a backlog of ten thousand instead of microseconds).
const DUE_DELIVERIES: &str = "SELECT d.id, d.tenant_id, d.endpoint_id, w.failure_streak
     FROM webhook_endpoints w CROSS JOIN webhook_deliveries d
     WHERE d.id IN (
         SELECT d2.id FROM webhook_deliveries d2
         WHERE d2.endpoint_id = w.id AND d2.tenant_id = w.tenant_id AND d2.status = 'pending'
           AND d2.next_attempt_at <= ?1 AND (d2.lease_until IS NULL OR d2.lease_until <= ?1)
         ORDER BY d2.next_attempt_at, d2.id LIMIT ?2)
       AND w.enabled = 1 AND (w.paused_until IS NULL OR w.paused_until <= ?1)
     ORDER BY d.next_attempt_at, d.id";

/// When the next pending delivery falls due: each enabled endpoint's
/// earliest through its (endpoint, due time) index, or the end of its
/// pause if later. The endpoint id is the table's key, so no tenant filter
/// is needed to stay within its own rows (and one would cost the index its
/// MIN shortcut). CASE, because scalar MAX takes several arguments in
/// SQLite only.
const NEXT_DELIVERY_DUE: &str = "SELECT MIN(CASE WHEN COALESCE(paused_until, 0) > due THEN paused_until ELSE due END)
     FROM (SELECT w.paused_until,
                  (SELECT MIN(d.next_attempt_at) FROM webhook_deliveries d
                   WHERE d.endpoint_id = w.id AND d.status = 'pending') AS due
           FROM webhook_endpoints w WHERE w.enabled = 1)
     WHERE due IS NOT NULL";

/// The oldest delivery due now (`?1`) and not in flight, of an endpoint
/// that may be sent to: each such endpoint's first through its (endpoint,
/// due time) index, past at most its attempts in flight. Paused and
/// disabled endpoints are left out before their deliveries are read, so a
/// long backlog behind a broken endpoint costs nothing here.
const OLDEST_DUE_DELIVERY: &str = "SELECT MIN((SELECT d.next_attempt_at FROM webhook_deliveries d
                  WHERE d.endpoint_id = w.id AND d.status = 'pending' AND d.next_attempt_at <= ?1
                    AND (d.lease_until IS NULL OR d.lease_until <= ?1)
                  ORDER BY d.next_attempt_at LIMIT 1))
     FROM webhook_endpoints w
     WHERE w.enabled = 1 AND (w.paused_until IS NULL OR w.paused_until <= ?1)";

const DELIVERY_FROM: &str = "FROM webhook_deliveries d JOIN webhook_events ev ON ev.id = d.event_id AND ev.tenant_id = d.tenant_id";
fn delivery_at(r: &Row<'_>) -> rusqlite::Result<Delivery> {
    let status = enum_col(r, 4, DeliveryStatus::parse)?;
    Ok(Delivery {
        id: r.get(0)?,
        endpoint_id: WebhookId(r.get(1)?),
        event_id: r.get(2)?,
        kind: enum_col(r, 3, EventKind::parse)?,
        next_attempt_at: if status == DeliveryStatus::Pending { Some(ts(r, 5)?) } else { None },
        status,
        last_error: r.get(6)?,
        created_at: ts(r, 7)?,
        finished_at: opt_ts(r, 8)?,
        attempts: Vec::new(),
    })
}

const CHALLENGE_COLS: &str = "ch.id, ch.tenant_id, ch.site_id, ch.conversation_id, ch.visitor_id, ch.method, ch.target, ch.code_salt, \
     ch.code_hash, ch.status, ch.attempts, ch.created_at, ch.expires_at";
fn challenge_at(r: &Row<'_>) -> rusqlite::Result<Challenge> {
    Ok(Challenge {
        id: r.get(0)?,
        scope: SiteScope { tenant: TenantId(r.get(1)?), site: SiteId(r.get(2)?) },
        conversation_id: ConversationId(r.get(3)?),
        visitor_id: VisitorId(r.get(4)?),
        method: enum_col(r, 5, Method::parse)?,
        target: r.get(6)?,
        code_salt: r.get(7)?,
        code_hash: r.get(8)?,
        status: enum_col(r, 9, ChallengeStatus::parse)?,
        attempts: r.get(10)?,
        created_at: ts(r, 11)?,
        expires_at: ts(r, 12)?,
    })
}

const OPERATOR_COLS: &str = "o.id, o.tenant_id, o.email, o.name, o.role, o.active, o.created_at";
fn operator_at(r: &Row<'_>) -> rusqlite::Result<Operator> {
    Ok(Operator {
        id: OperatorId(r.get(0)?),
        tenant_id: TenantId(r.get(1)?),
        email: r.get(2)?,
        name: r.get(3)?,
        role: enum_col(r, 4, Role::parse)?,
        active: r.get(5)?,
        site_ids: Vec::new(),
        created_at: ts(r, 6)?,
    })
}

const VISITOR_COLS: &str = "v.id, v.tenant_id, v.site_id, v.uuid, v.name, v.email, v.phone, v.last_url, v.verified_at, v.created_at, v.updated_at, v.verified_method, v.verified_target";
fn visitor_at(r: &Row<'_>, o: usize) -> rusqlite::Result<Visitor> {
    Ok(Visitor {
        id: VisitorId(r.get(o)?),
        tenant_id: TenantId(r.get(o + 1)?),
        site_id: SiteId(r.get(o + 2)?),
        uuid: r.get(o + 3)?,
        profile: VisitorProfile { name: r.get(o + 4)?, email: r.get(o + 5)?, phone: r.get(o + 6)?, last_url: r.get(o + 7)? },
        verified_at: opt_ts(r, o + 8)?,
        created_at: ts(r, o + 9)?,
        updated_at: ts(r, o + 10)?,
        verified_method: match r.get::<_, Option<String>>(o + 11)? {
            Some(m) => Some(
                Method::parse(&m).ok_or_else(|| rusqlite::Error::FromSqlConversionFailure(o + 11, Type::Text, "unknown method".into()))?,
            ),
            None => None,
        },
        verified_target: r.get(o + 12)?,
    })
}

const CONVERSATION_COLS: &str = "c.id, c.public_id, c.tenant_id, c.site_id, c.installation_id, c.visitor_id, c.status, c.subject, \
     c.assignee_id, c.created_at, c.last_message_at, c.closed_at, c.verified_at";
fn conversation_at(r: &Row<'_>) -> rusqlite::Result<Conversation> {
    Ok(Conversation {
        id: ConversationId(r.get(0)?),
        public_id: r.get(1)?,
        tenant_id: TenantId(r.get(2)?),
        site_id: SiteId(r.get(3)?),
        installation_id: InstallationId(r.get(4)?),
        visitor_id: VisitorId(r.get(5)?),
        status: enum_col(r, 6, ConversationStatus::parse)?,
        subject: r.get(7)?,
        assignee_id: r.get::<_, Option<i64>>(8)?.map(OperatorId),
        created_at: ts(r, 9)?,
        last_message_at: ts(r, 10)?,
        closed_at: opt_ts(r, 11)?,
        verified_at: opt_ts(r, 12)?,
    })
}

/// A conversation row followed by its visitor, site and assignee columns.
fn details_at(r: &Row<'_>) -> rusqlite::Result<ConversationDetails> {
    let assignee = match r.get::<_, Option<i64>>(28)? {
        Some(id) => Some(OperatorRef { id: OperatorId(id), name: r.get(29)?, email: r.get(30)? }),
        None => None,
    };
    Ok(ConversationDetails {
        conversation: conversation_at(r)?,
        visitor: visitor_at(r, 13)?,
        site: SiteRef { id: SiteId(r.get(26)?), name: r.get(27)? },
        assignee,
    })
}

/// The conversation columns, visitor columns, site and assignee of
/// `details_at`, joined within the conversation's tenant.
const DETAILS_FROM: &str = "FROM conversations c
     JOIN visitors v ON v.id = c.visitor_id AND v.tenant_id = c.tenant_id
     JOIN sites s ON s.id = c.site_id AND s.tenant_id = c.tenant_id
     LEFT JOIN operators a ON a.id = c.assignee_id AND a.tenant_id = c.tenant_id";

/// The visibility rule of `ConversationScope`, bound as ?1 to ?4: tenant,
/// site (or NULL), operator (or NULL), and whether that operator is an
/// admin. An agent sees only the sites it is a member of, read from the
/// membership table at query time.
const CONVERSATION_SCOPE: &str = "c.tenant_id = ?1 AND (?2 IS NULL OR c.site_id = ?2)
     AND (?3 IS NULL OR ?4 OR c.site_id IN (SELECT os.site_id FROM operator_sites os WHERE os.operator_id = ?3 AND os.tenant_id = ?1))";

fn scope_params(s: ConversationScope) -> (i64, Option<i64>, Option<i64>, bool) {
    (s.tenant.0, s.site.map(|x| x.0), s.operator.map(|(o, _)| o.0), matches!(s.operator, Some((_, Role::Admin))))
}

fn filter_param(f: StatusFilter) -> &'static str {
    match f {
        StatusFilter::All => "all",
        StatusFilter::Open => "open",
        StatusFilter::Only(s) => s.as_str(),
    }
}

/// Binds ?5 (`'all'`, `'open'` or a status).
const STATUS_FILTER: &str = "(?5 = 'all' OR (?5 = 'open' AND c.status <> 'closed') OR c.status = ?5)";

const MESSAGE_COLS: &str =
    "m.id, m.tenant_id, m.conversation_id, m.sender_type, m.sender_id, m.sender_name, m.body, m.internal, m.created_at";
fn message_at(r: &Row<'_>) -> rusqlite::Result<Message> {
    message_at_offset(r, 0)
}

fn message_at_offset(r: &Row<'_>, o: usize) -> rusqlite::Result<Message> {
    Ok(Message {
        id: MessageId(r.get(o)?),
        tenant_id: TenantId(r.get(o + 1)?),
        conversation_id: ConversationId(r.get(o + 2)?),
        sender: Sender {
            kind: enum_col(r, o + 3, SenderKind::parse)?,
            operator_id: r.get::<_, Option<i64>>(o + 4)?.map(OperatorId),
            name: r.get(o + 5)?,
        },
        body: r.get(o + 6)?,
        internal: r.get(o + 7)?,
        created_at: ts(r, o + 8)?,
    })
}

impl ReadTx for Handle<'_> {
    fn installation_by_token(&mut self, token: &str) -> StoreResult<Option<InstallationContext>> {
        let sql = format!(
            "SELECT {TENANT_COLS}, {SITE_COLS}, {INSTALLATION_COLS}
             FROM installations i
             JOIN sites s ON s.id = i.site_id AND s.tenant_id = i.tenant_id
             JOIN tenants t ON t.id = i.tenant_id
             WHERE i.token = ?1"
        );
        self.one(&sql, [token], |r| {
            Ok(InstallationContext { tenant: tenant_at(r, 0)?, site: site_at(r, 4)?, installation: installation_at(r, 14)? })
        })
    }

    fn tenant_by_slug(&mut self, slug: &str) -> StoreResult<Option<Tenant>> {
        self.one(&format!("SELECT {TENANT_COLS} FROM tenants t WHERE t.slug = ?1"), [slug], |r| tenant_at(r, 0))
    }

    fn sites(&mut self, tenant: TenantId) -> StoreResult<Vec<Site>> {
        self.all(&format!("SELECT {SITE_COLS} FROM sites s WHERE s.tenant_id = ?1 ORDER BY s.id"), [tenant.0], |r| site_at(r, 0))
    }

    fn installations(&mut self, scope: SiteScope) -> StoreResult<Vec<Installation>> {
        let sql = format!("SELECT {INSTALLATION_COLS} FROM installations i WHERE i.tenant_id = ?1 AND i.site_id = ?2 ORDER BY i.id");
        self.all(&sql, [scope.tenant.0, scope.site.0], |r| installation_at(r, 0))
    }

    fn operator_by_email(&mut self, tenant: TenantId, email: &str) -> StoreResult<Option<Operator>> {
        let sql = format!("SELECT {OPERATOR_COLS} FROM operators o WHERE o.tenant_id = ?1 AND o.email = ?2");
        let Some(mut op) = self.one(&sql, params![tenant.0, email], operator_at)? else {
            return Ok(None);
        };
        op.site_ids = self.site_ids(op.tenant_id, op.id)?;
        Ok(Some(op))
    }

    fn visitor_by_uuid(&mut self, scope: SiteScope, uuid: &str) -> StoreResult<Option<Visitor>> {
        let sql = format!("SELECT {VISITOR_COLS} FROM visitors v WHERE v.tenant_id = ?1 AND v.site_id = ?2 AND v.uuid = ?3");
        self.one(&sql, params![scope.tenant.0, scope.site.0, uuid], |r| visitor_at(r, 0))
    }

    fn visitor(&mut self, scope: SiteScope, id: VisitorId) -> StoreResult<Option<Visitor>> {
        let sql = format!("SELECT {VISITOR_COLS} FROM visitors v WHERE v.tenant_id = ?1 AND v.site_id = ?2 AND v.id = ?3");
        self.one(&sql, params![scope.tenant.0, scope.site.0, id.0], |r| visitor_at(r, 0))
    }

    fn conversation_by_public_id(&mut self, scope: ConversationScope, public_id: &str) -> StoreResult<Option<Conversation>> {
        let (t, site, op, admin) = scope_params(scope);
        let sql = format!("SELECT {CONVERSATION_COLS} FROM conversations c WHERE {CONVERSATION_SCOPE} AND c.public_id = ?5");
        self.one(&sql, params![t, site, op, admin, public_id], conversation_at)
    }

    fn conversation(&mut self, scope: ConversationScope, id: ConversationId) -> StoreResult<Option<Conversation>> {
        let (t, site, op, admin) = scope_params(scope);
        let sql = format!("SELECT {CONVERSATION_COLS} FROM conversations c WHERE {CONVERSATION_SCOPE} AND c.id = ?5");
        self.one(&sql, params![t, site, op, admin, id.0], conversation_at)
    }

    fn conversation_details(&mut self, scope: ConversationScope, id: ConversationId) -> StoreResult<Option<ConversationDetails>> {
        let (t, site, op, admin) = scope_params(scope);
        let sql = format!(
            "SELECT {CONVERSATION_COLS}, {VISITOR_COLS}, s.id, s.name, a.id, a.name, a.email {DETAILS_FROM}
             WHERE {CONVERSATION_SCOPE} AND c.id = ?5"
        );
        self.one(&sql, params![t, site, op, admin, id.0], details_at)
    }

    fn conversations(
        &mut self,
        scope: ConversationScope,
        filter: StatusFilter,
        offset: u64,
        limit: u32,
    ) -> StoreResult<Vec<ConversationDetails>> {
        let (t, site, op, admin) = scope_params(scope);
        let sql = format!(
            "SELECT {CONVERSATION_COLS}, {VISITOR_COLS}, s.id, s.name, a.id, a.name, a.email {DETAILS_FROM}
             WHERE {CONVERSATION_SCOPE} AND {STATUS_FILTER}
             ORDER BY c.last_message_at DESC, c.id DESC LIMIT ?6 OFFSET ?7"
        );
        let offset = i64::try_from(offset).unwrap_or(i64::MAX);
        self.all(&sql, params![t, site, op, admin, filter_param(filter), i64::from(limit), offset], details_at)
    }

    fn count_conversations(&mut self, scope: ConversationScope, filter: StatusFilter) -> StoreResult<u64> {
        let (t, site, op, admin) = scope_params(scope);
        let sql = format!("SELECT COUNT(*) FROM conversations c WHERE {CONVERSATION_SCOPE} AND {STATUS_FILTER}");
        let n: Option<i64> = self.one(&sql, params![t, site, op, admin, filter_param(filter)], |r| r.get(0))?;
        Ok(n.unwrap_or(0).max(0) as u64)
    }

    fn messages(&mut self, scope: ConversationScope, conversation: ConversationId, page: MessagePage) -> StoreResult<Vec<Message>> {
        // The join keeps the caller's whole scope in the query, not only the
        // conversation id it happened to hold.
        let from = format!(
            "FROM messages m JOIN conversations c ON c.id = m.conversation_id AND c.tenant_id = m.tenant_id
             WHERE {CONVERSATION_SCOPE} AND m.conversation_id = ?5 AND (?6 OR m.internal = 0)"
        );
        let (t, site, op, admin) = scope_params(scope);
        let (internal, limit) = (page.include_internal, i64::from(page.limit));
        match page.after_id {
            Some(after) => {
                let sql = format!("SELECT {MESSAGE_COLS} {from} AND m.id > ?7 ORDER BY m.id ASC LIMIT ?8");
                self.all(&sql, params![t, site, op, admin, conversation.0, internal, after.0, limit], message_at)
            }
            None => {
                let sql = format!("SELECT {MESSAGE_COLS} {from} ORDER BY m.id DESC LIMIT ?7");
                let mut latest = self.all(&sql, params![t, site, op, admin, conversation.0, internal, limit], message_at)?;
                latest.reverse();
                Ok(latest)
            }
        }
    }

    fn conversation_with_messages(
        &mut self,
        scope: ConversationScope,
        public_id: &str,
        page: MessagePage,
    ) -> StoreResult<Option<(Conversation, Vec<Message>)>> {
        // The conversation's columns come with every message row (or once,
        // with no message, through the LEFT JOIN).
        macro_rules! page_sql {
            ($order:literal) => {
                concat!(
                    "SELECT c.id, c.public_id, c.tenant_id, c.site_id, c.installation_id, c.visitor_id, c.status, c.subject, \
                     c.assignee_id, c.created_at, c.last_message_at, c.closed_at, c.verified_at, \
                     m.id, m.tenant_id, m.conversation_id, m.sender_type, m.sender_id, m.sender_name, m.body, m.internal, m.created_at \
                     FROM conversations c \
                     LEFT JOIN messages m ON m.conversation_id = c.id AND m.tenant_id = c.tenant_id AND m.id > ?7 AND (?6 OR m.internal = 0) \
                     WHERE c.tenant_id = ?1 AND (?2 IS NULL OR c.site_id = ?2) \
                       AND (?3 IS NULL OR ?4 OR c.site_id IN (SELECT os.site_id FROM operator_sites os WHERE os.operator_id = ?3 AND os.tenant_id = ?1)) \
                       AND c.public_id = ?5 \
                     ORDER BY m.id ",
                    $order,
                    " LIMIT ?8"
                )
            };
        }
        const AFTER: &str = page_sql!("ASC");
        const LATEST: &str = page_sql!("DESC");
        let (t, site, op, admin) = scope_params(scope);
        let (sql, after) = match page.after_id {
            Some(after) => (AFTER, after.0),
            None => (LATEST, -1),
        };
        let mut conversation = None;
        let mut messages = Vec::new();
        let mut stmt = self.conn.prepare_cached(sql).map_err(map)?;
        let mut rows =
            stmt.query(params![t, site, op, admin, public_id, page.include_internal, after, i64::from(page.limit)]).map_err(map)?;
        while let Some(r) = rows.next().map_err(map)? {
            if conversation.is_none() {
                conversation = Some(conversation_at(r).map_err(map)?);
            }
            if r.get_ref(13).map_err(map)?.data_type() != rusqlite::types::Type::Null {
                messages.push(message_at_offset(r, 13).map_err(map)?);
            }
        }
        if page.after_id.is_none() {
            messages.reverse();
        }
        Ok(conversation.map(|c| (c, messages)))
    }

    fn session(&mut self, token_hash: &[u8]) -> StoreResult<Option<Session>> {
        let sql = format!(
            "SELECT {OPERATOR_COLS}, {TENANT_COLS}, tok.id, tok.expires_at
             FROM operator_tokens tok
             JOIN operators o ON o.id = tok.operator_id AND o.tenant_id = tok.tenant_id
             JOIN tenants t ON t.id = tok.tenant_id
             WHERE tok.token_hash = ?1 AND tok.revoked_at IS NULL"
        );
        let found = self.one(&sql, [token_hash], |r| {
            Ok(Session { operator: operator_at(r)?, tenant: tenant_at(r, 7)?, token_id: r.get(11)?, expires_at: ts(r, 12)? })
        })?;
        let Some(mut session) = found else {
            return Ok(None);
        };
        session.operator.site_ids = self.site_ids(session.operator.tenant_id, session.operator.id)?;
        Ok(Some(session))
    }

    fn login_operator(&mut self, email: &str) -> StoreResult<Option<(Operator, String)>> {
        let sql = format!("SELECT {OPERATOR_COLS}, o.password_hash FROM operators o WHERE o.email = ?1");
        let Some((mut op, hash)) = self.one(&sql, [email], |r| Ok((operator_at(r)?, r.get::<_, String>(7)?)))? else {
            return Ok(None);
        };
        op.site_ids = self.site_ids(op.tenant_id, op.id)?;
        Ok(Some((op, hash)))
    }

    fn site(&mut self, tenant: TenantId, id: SiteId) -> StoreResult<Option<Site>> {
        self.one(&format!("SELECT {SITE_COLS} FROM sites s WHERE s.tenant_id = ?1 AND s.id = ?2"), [tenant.0, id.0], |r| site_at(r, 0))
    }

    fn installation(&mut self, tenant: TenantId, id: InstallationId) -> StoreResult<Option<Installation>> {
        let sql = format!("SELECT {INSTALLATION_COLS} FROM installations i WHERE i.tenant_id = ?1 AND i.id = ?2");
        self.one(&sql, [tenant.0, id.0], |r| installation_at(r, 0))
    }

    fn operators(&mut self, tenant: TenantId) -> StoreResult<Vec<Operator>> {
        let sql = format!("SELECT {OPERATOR_COLS} FROM operators o WHERE o.tenant_id = ?1 ORDER BY o.id");
        let mut list = self.all(&sql, [tenant.0], operator_at)?;
        for op in &mut list {
            op.site_ids = self.site_ids(op.tenant_id, op.id)?;
        }
        Ok(list)
    }

    fn operator(&mut self, tenant: TenantId, id: OperatorId) -> StoreResult<Option<Operator>> {
        let sql = format!("SELECT {OPERATOR_COLS} FROM operators o WHERE o.tenant_id = ?1 AND o.id = ?2");
        let Some(mut op) = self.one(&sql, [tenant.0, id.0], operator_at)? else {
            return Ok(None);
        };
        op.site_ids = self.site_ids(op.tenant_id, op.id)?;
        Ok(Some(op))
    }

    fn outbox_stats(&mut self) -> StoreResult<OutboxStats> {
        let sql = "SELECT COUNT(*), MIN(created_at), COUNT(DISTINCT CASE WHEN attempts > 0 THEN endpoint_id END)
                   FROM webhook_deliveries WHERE status = 'pending'";
        let stats = self.one(sql, [], |r| {
            Ok(OutboxStats {
                pending: r.get::<_, i64>(0)?.max(0) as u64,
                oldest_pending_at: opt_ts(r, 1)?,
                failing_endpoints: r.get::<_, i64>(2)?.max(0) as u64,
            })
        })?;
        Ok(stats.unwrap_or_default())
    }

    fn oldest_due_delivery(&mut self, now: Timestamp) -> StoreResult<Option<Timestamp>> {
        // Deliveries of a paused endpoint wait by design: they are its
        // tenant's concern (its log, `failing_endpoints`), not lag.
        Ok(self.one(OLDEST_DUE_DELIVERY, [now.as_millis()], |r| opt_ts(r, 0))?.flatten())
    }

    fn state(&mut self, key: &str) -> StoreResult<Option<i64>> {
        self.one("SELECT value FROM system_state WHERE key = ?1", [key], |r| r.get(0))
    }

    fn count_open_conversations(&mut self) -> StoreResult<u64> {
        let n: Option<i64> = self.one("SELECT COUNT(*) FROM conversations WHERE status <> 'closed'", [], |r| r.get(0))?;
        Ok(n.unwrap_or(0).max(0) as u64)
    }

    fn stale_candidates(&mut self, cutoff: Timestamp, limit: u32) -> StoreResult<Vec<InstallationContext>> {
        let sql = format!(
            "SELECT {TENANT_COLS}, {SITE_COLS}, {INSTALLATION_COLS}
             FROM installations i
             JOIN sites s ON s.id = i.site_id AND s.tenant_id = i.tenant_id
             JOIN tenants t ON t.id = i.tenant_id
             WHERE i.heartbeat_status = 'healthy' AND i.last_seen_at < ?1
             ORDER BY i.last_seen_at LIMIT ?2"
        );
        self.all(&sql, params![cutoff.as_millis(), i64::from(limit)], |r| {
            Ok(InstallationContext { tenant: tenant_at(r, 0)?, site: site_at(r, 4)?, installation: installation_at(r, 14)? })
        })
    }

    fn idle_conversations(&mut self, cutoff: Timestamp, limit: u32) -> StoreResult<Vec<(Tenant, Conversation)>> {
        let sql = format!(
            "SELECT {CONVERSATION_COLS}, {TENANT_COLS} FROM conversations c JOIN tenants t ON t.id = c.tenant_id
             WHERE c.status <> 'closed' AND c.last_message_at < ?1 ORDER BY c.last_message_at LIMIT ?2"
        );
        self.all(&sql, params![cutoff.as_millis(), i64::from(limit)], |r| Ok((tenant_at(r, 13)?, conversation_at(r)?)))
    }

    fn tenant(&mut self, id: TenantId) -> StoreResult<Option<Tenant>> {
        self.one(&format!("SELECT {TENANT_COLS} FROM tenants t WHERE t.id = ?1"), [id.0], |r| tenant_at(r, 0))
    }

    fn challenge(&mut self, scope: SiteScope, conversation: ConversationId, id: i64) -> StoreResult<Option<Challenge>> {
        let sql = format!(
            "SELECT {CHALLENGE_COLS} FROM verification_challenges ch
             WHERE ch.tenant_id = ?1 AND ch.site_id = ?2 AND ch.conversation_id = ?3 AND ch.id = ?4"
        );
        self.one(&sql, params![scope.tenant.0, scope.site.0, conversation.0, id], challenge_at)
    }

    fn challenge_by_id(&mut self, id: i64) -> StoreResult<Option<Challenge>> {
        self.one(&format!("SELECT {CHALLENGE_COLS} FROM verification_challenges ch WHERE ch.id = ?1"), [id], challenge_at)
    }

    fn challenge_times(&mut self, tenant: TenantId, count: &ChallengeCount, since: Timestamp, limit: u32) -> StoreResult<Vec<Timestamp>> {
        let (limit, since) = (i64::from(limit), since.as_millis());
        let ts0 = |r: &Row<'_>| ts(r, 0);
        match count {
            ChallengeCount::Conversation(c) => self.all(
                "SELECT created_at FROM verification_challenges WHERE tenant_id = ?1 AND conversation_id = ?2 AND created_at > ?3
                 ORDER BY created_at DESC LIMIT ?4",
                params![tenant.0, c.0, since, limit],
                ts0,
            ),
            ChallengeCount::Tenant => self.all(
                "SELECT created_at FROM verification_challenges WHERE tenant_id = ?1 AND created_at > ?2 ORDER BY created_at DESC LIMIT ?3",
                params![tenant.0, since, limit],
                ts0,
            ),
            ChallengeCount::TenantSms => self.all(
                "SELECT created_at FROM verification_challenges WHERE tenant_id = ?1 AND method = 'sms_otp' AND created_at > ?2
                 ORDER BY created_at DESC LIMIT ?3",
                params![tenant.0, since, limit],
                ts0,
            ),
            // Protects the number's owner, whichever tenant sends.
            ChallengeCount::Phone(number) => self.all(
                "SELECT created_at FROM verification_challenges WHERE method = 'sms_otp' AND target = ?1 AND created_at > ?2
                 ORDER BY created_at DESC LIMIT ?3",
                params![number, since, limit],
                ts0,
            ),
            ChallengeCount::Email(address) => self.all(
                "SELECT created_at FROM verification_challenges WHERE method IN ('email_otp', 'magic_link') AND lower(target) = ?1 AND created_at > ?2
                 ORDER BY created_at DESC LIMIT ?3",
                params![address, since, limit],
                ts0,
            ),
        }
    }

    fn sandbox_outbox(&mut self, tenant: TenantId, limit: u32) -> StoreResult<Vec<OutboxMessage>> {
        self.all(
            "SELECT channel, recipient, subject, body, created_at FROM sandbox_outbox WHERE tenant_id = ?1 ORDER BY id DESC LIMIT ?2",
            params![tenant.0, i64::from(limit)],
            |r| {
                let channel: String = r.get(0)?;
                Ok(OutboxMessage {
                    channel: if channel == "sms" { "sms" } else { "email" },
                    recipient: r.get(1)?,
                    subject: r.get(2)?,
                    body: r.get(3)?,
                    created_at: ts(r, 4)?,
                })
            },
        )
    }

    fn recent_events(&mut self, tenant: TenantId, limit: u32) -> StoreResult<Vec<OutboxEvent>> {
        let mut list = self.all(
            "SELECT event_id, kind, occurred_at, payload FROM webhook_events WHERE tenant_id = ?1 ORDER BY id DESC LIMIT ?2",
            params![tenant.0, i64::from(limit)],
            |r| {
                Ok(OutboxEvent { event_id: r.get(0)?, kind: enum_col(r, 1, EventKind::parse)?, occurred_at: ts(r, 2)?, payload: r.get(3)? })
            },
        )?;
        list.reverse();
        Ok(list)
    }

    fn webhooks(&mut self, tenant: TenantId) -> StoreResult<Vec<Webhook>> {
        self.all(&format!("SELECT {WEBHOOK_COLS} FROM webhook_endpoints w WHERE w.tenant_id = ?1 ORDER BY w.id"), [tenant.0], |r| {
            webhook_at(r, 0)
        })
    }

    fn webhook(&mut self, tenant: TenantId, id: WebhookId) -> StoreResult<Option<Webhook>> {
        self.one(&format!("SELECT {WEBHOOK_COLS} FROM webhook_endpoints w WHERE w.tenant_id = ?1 AND w.id = ?2"), [tenant.0, id.0], |r| {
            webhook_at(r, 0)
        })
    }

    fn deliveries(&mut self, tenant: TenantId, endpoint: WebhookId, offset: u64, limit: u32) -> StoreResult<Vec<Delivery>> {
        let sql = format!(
            "SELECT {DELIVERY_COLS} {DELIVERY_FROM} WHERE d.tenant_id = ?1 AND d.endpoint_id = ?2 ORDER BY d.id DESC LIMIT ?3 OFFSET ?4"
        );
        let offset = i64::try_from(offset).unwrap_or(i64::MAX);
        let mut list = self.all(&sql, params![tenant.0, endpoint.0, i64::from(limit), offset], delivery_at)?;
        for d in &mut list {
            d.attempts = self.attempts(tenant, d.id)?;
        }
        Ok(list)
    }

    fn count_deliveries(&mut self, tenant: TenantId, endpoint: WebhookId) -> StoreResult<u64> {
        let n: Option<i64> =
            self.one("SELECT COUNT(*) FROM webhook_deliveries WHERE tenant_id = ?1 AND endpoint_id = ?2", [tenant.0, endpoint.0], |r| {
                r.get(0)
            })?;
        Ok(n.unwrap_or(0).max(0) as u64)
    }

    fn delivery(&mut self, tenant: TenantId, endpoint: WebhookId, id: i64) -> StoreResult<Option<Delivery>> {
        let sql = format!("SELECT {DELIVERY_COLS} {DELIVERY_FROM} WHERE d.tenant_id = ?1 AND d.endpoint_id = ?2 AND d.id = ?3");
        let Some(mut d) = self.one(&sql, params![tenant.0, endpoint.0, id], delivery_at)? else {
            return Ok(None);
        };
        d.attempts = self.attempts(tenant, d.id)?;
        Ok(Some(d))
    }

    fn next_delivery_due(&mut self) -> StoreResult<Option<Timestamp>> {
        Ok(self.one(NEXT_DELIVERY_DUE, [], |r| opt_ts(r, 0))?.flatten())
    }

    fn due_deliveries(&mut self, now: Timestamp, per_endpoint: u32) -> StoreResult<Vec<DueDelivery>> {
        self.all(DUE_DELIVERIES, params![now.as_millis(), i64::from(per_endpoint)], |r| {
            Ok(DueDelivery {
                id: r.get(0)?,
                tenant_id: TenantId(r.get(1)?),
                endpoint_id: WebhookId(r.get(2)?),
                endpoint_failures: r.get(3)?,
            })
        })
    }
}

impl WriteTx for Handle<'_> {
    fn insert_tenant(&mut self, t: &NewTenant) -> StoreResult<Tenant> {
        let id = self.insert(
            "INSERT INTO tenants (slug, name, created_at) VALUES (?1, ?2, ?3)",
            params![t.slug, t.name, t.created_at.as_millis()],
        )?;
        Ok(Tenant { id: TenantId(id), slug: t.slug.clone(), name: t.name.clone(), created_at: t.created_at })
    }

    fn insert_site(&mut self, tenant: TenantId, s: &NewSite) -> StoreResult<Site> {
        let domains = serde_json::to_string(&s.domains).map_err(|e| StoreError::Internal(e.to_string()))?;
        let a = &s.appearance;
        let id = self.insert(
            "INSERT INTO sites (tenant_id, name, domains, widget_title, widget_greeting, accent_color, privacy_text, privacy_url, created_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
            params![tenant.0, s.name, domains, a.title, a.greeting, a.accent_color, a.privacy_text, a.privacy_url, s.created_at.as_millis()],
        )?;
        Ok(Site {
            id: SiteId(id),
            tenant_id: tenant,
            name: s.name.clone(),
            domains: s.domains.clone(),
            appearance: s.appearance.clone(),
            created_at: s.created_at,
        })
    }

    fn insert_installation(&mut self, scope: SiteScope, i: &NewInstallation) -> StoreResult<Installation> {
        let id = self.insert(
            "INSERT INTO installations (tenant_id, site_id, token, name, installation_type, created_at)
             SELECT ?1, ?2, ?3, ?4, ?5, ?6 WHERE EXISTS (SELECT 1 FROM sites WHERE id = ?2 AND tenant_id = ?1)",
            params![scope.tenant.0, scope.site.0, i.token, i.name, i.installation_type, i.created_at.as_millis()],
        )?;
        let sql = format!("SELECT {INSTALLATION_COLS} FROM installations i WHERE i.tenant_id = ?1 AND i.id = ?2");
        self.one(&sql, [scope.tenant.0, id], |r| installation_at(r, 0))?
            .ok_or_else(|| StoreError::Internal("installation vanished after insert".into()))
    }

    fn record_heartbeat(&mut self, scope: SiteScope, id: InstallationId, h: &Heartbeat, status: InstallationStatus) -> StoreResult<()> {
        self.exec(
            "UPDATE installations SET last_seen_at = ?4, heartbeat_status = ?5,
                 widget_version = COALESCE(?6, widget_version),
                 page_host = COALESCE(?7, page_host),
                 reported_type = COALESCE(?8, reported_type)
             WHERE tenant_id = ?1 AND site_id = ?2 AND id = ?3",
            params![scope.tenant.0, scope.site.0, id.0, h.at.as_millis(), status.as_str(), h.version, h.page_host, h.installation_type],
        )?;
        Ok(())
    }

    fn insert_operator(&mut self, tenant: TenantId, o: &NewOperator) -> StoreResult<Operator> {
        let id = self.insert(
            "INSERT INTO operators (tenant_id, email, name, password_hash, role, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![tenant.0, o.email, o.name, o.password_hash, o.role.as_str(), o.created_at.as_millis()],
        )?;
        self.add_memberships(tenant, OperatorId(id), &o.site_ids)?;
        Ok(Operator {
            id: OperatorId(id),
            tenant_id: tenant,
            email: o.email.clone(),
            name: o.name.clone(),
            role: o.role,
            active: true,
            site_ids: o.site_ids.clone(),
            created_at: o.created_at,
        })
    }

    fn insert_operator_token(&mut self, tenant: TenantId, t: &NewOperatorToken) -> StoreResult<()> {
        let added = self.exec(
            "INSERT INTO operator_tokens (tenant_id, operator_id, token_hash, device_name, created_at, expires_at)
             SELECT ?1, ?2, ?3, ?4, ?5, ?6 WHERE EXISTS (SELECT 1 FROM operators WHERE id = ?2 AND tenant_id = ?1)",
            params![tenant.0, t.operator_id.0, t.token_hash, t.device_name, t.created_at.as_millis(), t.expires_at.as_millis()],
        )?;
        if added == 0 {
            return Err(StoreError::Internal("operator not in tenant".into()));
        }
        Ok(())
    }

    fn insert_visitor(&mut self, scope: SiteScope, v: &NewVisitor) -> StoreResult<Visitor> {
        let p = &v.profile;
        let at = v.created_at.as_millis();
        let id = self.insert(
            "INSERT INTO visitors (tenant_id, site_id, uuid, name, email, phone, last_url, created_at, updated_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?8)",
            params![scope.tenant.0, scope.site.0, v.uuid, p.name, p.email, p.phone, p.last_url, at],
        )?;
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
        self.exec(
            "UPDATE visitors SET name = ?4, email = ?5, phone = ?6, last_url = ?7, updated_at = ?8
             WHERE tenant_id = ?1 AND site_id = ?2 AND id = ?3",
            params![scope.tenant.0, scope.site.0, id.0, p.name, p.email, p.phone, p.last_url, at.as_millis()],
        )?;
        Ok(())
    }

    fn insert_conversation(&mut self, scope: SiteScope, c: &NewConversation) -> StoreResult<Conversation> {
        let at = c.created_at.as_millis();
        let id = self.insert(
            "INSERT INTO conversations (public_id, tenant_id, site_id, installation_id, visitor_id, status, subject, start_url, created_at, last_message_at)
             SELECT ?1, ?2, ?3, ?4, ?5, 'unassigned', ?6, ?7, ?8, ?8
             WHERE EXISTS (SELECT 1 FROM installations WHERE id = ?4 AND tenant_id = ?2 AND site_id = ?3)
               AND EXISTS (SELECT 1 FROM visitors WHERE id = ?5 AND tenant_id = ?2 AND site_id = ?3)",
            params![c.public_id, scope.tenant.0, scope.site.0, c.installation_id.0, c.visitor_id.0, c.subject, c.start_url, at],
        )?;
        Ok(Conversation {
            id: ConversationId(id),
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
        let (t, site, op, admin) = scope_params(scope);
        let sql = format!(
            "UPDATE conversations AS c SET status = ?6, assignee_id = ?7, last_message_at = ?8, closed_at = ?9, verified_at = ?10
             WHERE {CONVERSATION_SCOPE} AND c.id = ?5
               AND (?7 IS NULL OR EXISTS (SELECT 1 FROM operators o WHERE o.id = ?7 AND o.tenant_id = ?1))"
        );
        let changed = self.exec(
            &sql,
            params![
                t,
                site,
                op,
                admin,
                c.id.0,
                c.status.as_str(),
                c.assignee_id.map(|o| o.0),
                c.last_message_at.as_millis(),
                c.closed_at.map(Timestamp::as_millis),
                c.verified_at.map(Timestamp::as_millis),
            ],
        )?;
        if changed != 1 {
            return Err(StoreError::Internal("update refused: conversation not in scope".into()));
        }
        Ok(())
    }

    fn insert_message(&mut self, scope: ConversationScope, m: &NewMessage) -> StoreResult<Message> {
        let (t, site, op, admin) = scope_params(scope);
        let sql = format!(
            "INSERT INTO messages (tenant_id, conversation_id, sender_type, sender_id, sender_name, body, internal, created_at)
             SELECT ?1, ?5, ?6, ?7, ?8, ?9, ?10, ?11
             WHERE EXISTS (SELECT 1 FROM conversations c WHERE {CONVERSATION_SCOPE} AND c.id = ?5)"
        );
        let id = self.insert(
            &sql,
            params![
                t,
                site,
                op,
                admin,
                m.conversation_id.0,
                m.sender.kind.as_str(),
                m.sender.operator_id.map(|o| o.0),
                m.sender.name,
                m.body,
                m.internal,
                m.created_at.as_millis(),
            ],
        )?;
        Ok(Message {
            id: MessageId(id),
            tenant_id: scope.tenant,
            conversation_id: m.conversation_id,
            sender: m.sender.clone(),
            body: m.body.clone(),
            internal: m.internal,
            created_at: m.created_at,
        })
    }

    fn set_installation_enabled(&mut self, tenant: TenantId, id: InstallationId, enabled: bool) -> StoreResult<()> {
        self.exec("UPDATE installations SET enabled = ?3 WHERE tenant_id = ?1 AND id = ?2", params![tenant.0, id.0, enabled])?;
        self.installations_changed = true;
        Ok(())
    }

    fn update_operator(&mut self, tenant: TenantId, id: OperatorId, ch: &OperatorChanges) -> StoreResult<()> {
        self.exec(
            "UPDATE operators SET name = COALESCE(?3, name), role = COALESCE(?4, role), active = COALESCE(?5, active),
                 password_hash = COALESCE(?6, password_hash)
             WHERE tenant_id = ?1 AND id = ?2",
            params![tenant.0, id.0, ch.name, ch.role.map(Role::as_str), ch.active, ch.password_hash],
        )?;
        if let Some(sites) = &ch.site_ids {
            self.exec("DELETE FROM operator_sites WHERE tenant_id = ?1 AND operator_id = ?2", [tenant.0, id.0])?;
            self.add_memberships(tenant, id, sites)?;
        }
        Ok(())
    }

    fn revoke_token(&mut self, tenant: TenantId, token_id: i64, at: Timestamp) -> StoreResult<()> {
        self.exec(
            "UPDATE operator_tokens SET revoked_at = ?3 WHERE tenant_id = ?1 AND id = ?2 AND revoked_at IS NULL",
            params![tenant.0, token_id, at.as_millis()],
        )?;
        Ok(())
    }

    fn revoke_operator_tokens(&mut self, tenant: TenantId, operator: OperatorId, at: Timestamp) -> StoreResult<()> {
        self.exec(
            "UPDATE operator_tokens SET revoked_at = ?3 WHERE tenant_id = ?1 AND operator_id = ?2 AND revoked_at IS NULL",
            params![tenant.0, operator.0, at.as_millis()],
        )?;
        Ok(())
    }

    fn insert_event(&mut self, tenant: TenantId, e: &OutboxEvent) -> StoreResult<()> {
        let at = e.occurred_at.as_millis();
        let row = self.insert(
            "INSERT INTO webhook_events (event_id, tenant_id, kind, payload, occurred_at, dispatched_at) VALUES (?1, ?2, ?3, ?4, ?5, ?5)",
            params![e.event_id, tenant.0, e.kind.as_str(), e.payload, at],
        )?;
        let added = self.exec(
            "INSERT INTO webhook_deliveries (tenant_id, endpoint_id, event_id, next_attempt_at, created_at)
             SELECT ?1, w.id, ?2, ?4, ?4 FROM webhook_endpoints w
             WHERE w.tenant_id = ?1 AND w.enabled = 1
               AND (w.events IS NULL OR EXISTS (SELECT 1 FROM json_each(w.events) WHERE json_each.value = ?3))",
            params![tenant.0, row, e.kind.as_str(), at],
        )?;
        self.deliveries_added += added;
        Ok(())
    }

    fn clear_verification(&mut self, scope: SiteScope, visitor: VisitorId) -> StoreResult<()> {
        self.exec(
            "UPDATE visitors SET verified_at = NULL, verified_method = NULL, verified_target = NULL
             WHERE tenant_id = ?1 AND site_id = ?2 AND id = ?3",
            params![scope.tenant.0, scope.site.0, visitor.0],
        )?;
        self.exec(
            "UPDATE conversations SET verified_at = NULL, verified_method = NULL WHERE tenant_id = ?1 AND site_id = ?2 AND visitor_id = ?3",
            params![scope.tenant.0, scope.site.0, visitor.0],
        )?;
        Ok(())
    }

    fn set_heartbeat_status(&mut self, scope: SiteScope, id: InstallationId, status: InstallationStatus) -> StoreResult<()> {
        self.exec(
            "UPDATE installations SET heartbeat_status = ?4 WHERE tenant_id = ?1 AND site_id = ?2 AND id = ?3",
            params![scope.tenant.0, scope.site.0, id.0, status.as_str()],
        )?;
        Ok(())
    }

    fn set_state(&mut self, key: &str, value: i64) -> StoreResult<()> {
        self.exec(
            "INSERT INTO system_state (key, value) VALUES (?1, ?2) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            params![key, value],
        )?;
        Ok(())
    }

    fn insert_challenge(&mut self, scope: SiteScope, c: &NewChallenge) -> StoreResult<i64> {
        self.exec(
            "UPDATE verification_challenges SET status = 'superseded'
             WHERE tenant_id = ?1 AND site_id = ?2 AND conversation_id = ?3 AND status = 'active'",
            params![scope.tenant.0, scope.site.0, c.conversation_id.0],
        )?;
        self.insert(
            "INSERT INTO verification_challenges
                 (tenant_id, site_id, conversation_id, visitor_id, method, target, code_salt, code_hash, status, created_at, expires_at)
             SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 'active', ?9, ?10
             WHERE EXISTS (SELECT 1 FROM conversations WHERE id = ?3 AND tenant_id = ?1 AND site_id = ?2 AND visitor_id = ?4)",
            params![
                scope.tenant.0,
                scope.site.0,
                c.conversation_id.0,
                c.visitor_id.0,
                c.method.as_str(),
                c.target,
                c.code_salt,
                c.code_hash,
                c.created_at.as_millis(),
                c.expires_at.as_millis()
            ],
        )
    }

    fn update_challenge(
        &mut self,
        scope: SiteScope,
        id: i64,
        status: ChallengeStatus,
        attempts: u32,
        completed_at: Option<Timestamp>,
    ) -> StoreResult<()> {
        self.exec(
            "UPDATE verification_challenges SET status = ?4, attempts = ?5, completed_at = ?6 WHERE tenant_id = ?1 AND site_id = ?2 AND id = ?3",
            params![scope.tenant.0, scope.site.0, id, status.as_str(), attempts, completed_at.map(Timestamp::as_millis)],
        )?;
        Ok(())
    }

    fn mark_verified(
        &mut self,
        scope: SiteScope,
        visitor: VisitorId,
        conversation: ConversationId,
        method: Method,
        target: &str,
        at: Timestamp,
    ) -> StoreResult<()> {
        self.exec(
            "UPDATE visitors SET verified_at = ?4, verified_method = ?5, verified_target = ?6, updated_at = ?4
             WHERE tenant_id = ?1 AND site_id = ?2 AND id = ?3",
            params![scope.tenant.0, scope.site.0, visitor.0, at.as_millis(), method.as_str(), target],
        )?;
        self.exec(
            "UPDATE conversations SET verified_at = ?4, verified_method = ?5 WHERE tenant_id = ?1 AND site_id = ?2 AND id = ?3",
            params![scope.tenant.0, scope.site.0, conversation.0, at.as_millis(), method.as_str()],
        )?;
        Ok(())
    }

    fn insert_outbox_message(&mut self, tenant: TenantId, m: &OutboxMessage) -> StoreResult<()> {
        self.exec(
            "INSERT INTO sandbox_outbox (tenant_id, channel, recipient, subject, body, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![tenant.0, m.channel, m.recipient, m.subject, m.body, m.created_at.as_millis()],
        )?;
        Ok(())
    }

    fn insert_webhook(&mut self, tenant: TenantId, w: &NewWebhook) -> StoreResult<Webhook> {
        let events = match &w.events {
            Some(kinds) => Some(
                serde_json::to_string(&kinds.iter().map(|k| k.as_str()).collect::<Vec<_>>())
                    .map_err(|e| StoreError::Internal(e.to_string()))?,
            ),
            None => None,
        };
        let id = self.insert(
            "INSERT INTO webhook_endpoints (tenant_id, url, events, secret, created_at) VALUES (?1, ?2, ?3, ?4, ?5)",
            params![tenant.0, w.url, events, w.secret, w.created_at.as_millis()],
        )?;
        self.webhook(tenant, WebhookId(id))?.ok_or_else(|| StoreError::Internal("webhook vanished after insert".into()))
    }

    fn delete_webhook(&mut self, tenant: TenantId, id: WebhookId) -> StoreResult<bool> {
        Ok(self.exec("DELETE FROM webhook_endpoints WHERE tenant_id = ?1 AND id = ?2", [tenant.0, id.0])? == 1)
    }

    fn rotate_webhook_secret(&mut self, tenant: TenantId, id: WebhookId, secret: &str, previous_expires_at: Timestamp) -> StoreResult<()> {
        self.exec(
            "UPDATE webhook_endpoints SET previous_secret = secret, previous_secret_expires_at = ?4, secret = ?3
             WHERE tenant_id = ?1 AND id = ?2",
            params![tenant.0, id.0, secret, previous_expires_at.as_millis()],
        )?;
        Ok(())
    }

    fn redeliver(&mut self, tenant: TenantId, endpoint: WebhookId, delivery: i64, at: Timestamp) -> StoreResult<Option<i64>> {
        let added = self.exec(
            "INSERT INTO webhook_deliveries (tenant_id, endpoint_id, event_id, next_attempt_at, created_at)
             SELECT d.tenant_id, d.endpoint_id, d.event_id, ?4, ?4 FROM webhook_deliveries d
             WHERE d.tenant_id = ?1 AND d.endpoint_id = ?2 AND d.id = ?3",
            params![tenant.0, endpoint.0, delivery, at.as_millis()],
        )?;
        if added != 1 {
            return Ok(None);
        }
        self.deliveries_added += 1;
        Ok(Some(self.conn.last_insert_rowid()))
    }

    fn lease_deliveries(&mut self, ids: &[i64], now: Timestamp, lease_until: Timestamp) -> StoreResult<Vec<ClaimedDelivery>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let list = placeholders(3, ids.len());
        let mut args: Vec<rusqlite::types::Value> = vec![now.as_millis().into(), lease_until.as_millis().into()];
        args.extend(ids.iter().map(|id| rusqlite::types::Value::from(*id)));
        // Exactly the rows this statement leased: another claimer's leases,
        // whatever their time, are never read back as ours.
        let leased: Vec<i64> = self.all(
            &format!(
                "UPDATE webhook_deliveries SET lease_until = ?2
                 WHERE id IN ({list}) AND status = 'pending' AND next_attempt_at <= ?1 AND (lease_until IS NULL OR lease_until <= ?1)
                 RETURNING id"
            ),
            rusqlite::params_from_iter(args),
            |r| r.get(0),
        )?;
        if leased.is_empty() {
            return Ok(Vec::new());
        }
        let list = placeholders(1, leased.len());
        let sql = format!(
            "SELECT d.id, d.tenant_id, d.attempts, {WEBHOOK_COLS}, ev.event_id, ev.kind, ev.payload
             FROM webhook_deliveries d
             JOIN webhook_endpoints w ON w.id = d.endpoint_id AND w.tenant_id = d.tenant_id
             JOIN webhook_events ev ON ev.id = d.event_id AND ev.tenant_id = d.tenant_id
             WHERE d.id IN ({list})
             ORDER BY d.next_attempt_at, d.id"
        );
        self.all(&sql, rusqlite::params_from_iter(leased), |r| {
            Ok(ClaimedDelivery {
                delivery_id: r.get(0)?,
                tenant_id: TenantId(r.get(1)?),
                attempts: r.get(2)?,
                webhook: webhook_at(r, 3)?,
                event_id: r.get(15)?,
                kind: enum_col(r, 16, EventKind::parse)?,
                payload: r.get(17)?,
            })
        })
    }

    fn count_endpoint_outcome(&mut self, tenant: TenantId, endpoint: WebhookId, answered: bool) -> StoreResult<EndpointHealth> {
        let sql = if answered {
            "UPDATE webhook_endpoints SET failure_streak = 0, paused_until = NULL, pause_count = 0
             WHERE tenant_id = ?1 AND id = ?2 RETURNING failure_streak, paused_until, pause_count"
        } else {
            "UPDATE webhook_endpoints SET failure_streak = failure_streak + 1
             WHERE tenant_id = ?1 AND id = ?2 RETURNING failure_streak, paused_until, pause_count"
        };
        let health = self.one(sql, params![tenant.0, endpoint.0], |r| {
            Ok(EndpointHealth { failures: r.get(0)?, paused_until: opt_ts(r, 1)?, pauses: r.get(2)? })
        })?;
        Ok(health.unwrap_or(EndpointHealth { failures: 0, paused_until: None, pauses: 0 }))
    }

    fn pause_endpoint(&mut self, tenant: TenantId, endpoint: WebhookId, pause: Pause) -> StoreResult<()> {
        self.exec(
            "UPDATE webhook_endpoints SET paused_until = ?3, pause_count = ?4 WHERE tenant_id = ?1 AND id = ?2",
            params![tenant.0, endpoint.0, pause.until.as_millis(), pause.pauses],
        )?;
        Ok(())
    }

    fn expire_deliveries(&mut self, created_before: Timestamp, now: Timestamp, limit: u32) -> StoreResult<usize> {
        self.exec(
            "UPDATE webhook_deliveries
             SET status = 'failed', finished_at = ?2, lease_until = NULL,
                 last_error = 'given up: still undelivered when its retry schedule had run out'
             WHERE id IN (SELECT id FROM webhook_deliveries
                          WHERE status = 'pending' AND created_at < ?1 AND (lease_until IS NULL OR lease_until <= ?2)
                          ORDER BY created_at LIMIT ?3)",
            params![created_before.as_millis(), now.as_millis(), i64::from(limit)],
        )
    }

    fn prune(&mut self, what: Prunable, cutoff: Timestamp, limit: u32) -> StoreResult<usize> {
        let args = params![cutoff.as_millis(), i64::from(limit)];
        match what {
            Prunable::Events => {
                // An event goes once it is old and none of its deliveries is
                // pending or recent (a redelivery keeps its log). The
                // deletes re-check that, so a delivery added meanwhile
                // keeps its event.
                let doomed = "SELECT e.id FROM webhook_events e WHERE e.occurred_at < ?1
                     AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d
                                     WHERE d.event_id = e.id AND (d.status = 'pending' OR d.created_at >= ?1))
                     ORDER BY e.occurred_at LIMIT ?2";
                let ids: Vec<i64> = self.all(doomed, args, |r| r.get(0))?;
                if ids.is_empty() {
                    return Ok(0);
                }
                let list = placeholders(2, ids.len());
                let mut with_cutoff: Vec<rusqlite::types::Value> = vec![cutoff.as_millis().into()];
                with_cutoff.extend(ids.iter().map(|id| rusqlite::types::Value::from(*id)));
                // Attempts go with their deliveries (ON DELETE CASCADE).
                self.exec(
                    &format!("DELETE FROM webhook_deliveries WHERE event_id IN ({list}) AND status <> 'pending' AND created_at < ?1"),
                    rusqlite::params_from_iter(with_cutoff.clone()),
                )?;
                self.exec(
                    &format!(
                        "DELETE FROM webhook_events WHERE id IN ({list}) AND occurred_at < ?1
                         AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.event_id = webhook_events.id)"
                    ),
                    rusqlite::params_from_iter(with_cutoff),
                )
            }
            Prunable::Tokens => self.exec(
                "DELETE FROM operator_tokens WHERE id IN (SELECT id FROM operator_tokens
                     WHERE expires_at < ?1 OR revoked_at < ?1 ORDER BY id LIMIT ?2)",
                args,
            ),
            Prunable::Challenges => self.exec(
                "DELETE FROM verification_challenges WHERE id IN (SELECT id FROM verification_challenges
                     WHERE created_at < ?1 ORDER BY created_at LIMIT ?2)",
                args,
            ),
            Prunable::SandboxOutbox => self.exec(
                "DELETE FROM sandbox_outbox WHERE id IN (SELECT id FROM sandbox_outbox WHERE created_at < ?1 ORDER BY id LIMIT ?2)",
                args,
            ),
        }
    }

    fn record_attempt(&mut self, rec: &AttemptRecord) -> StoreResult<()> {
        let a = &rec.attempt;
        let (tenant, at) = (rec.tenant_id.0, a.attempted_at.as_millis());
        self.exec(
            "INSERT INTO webhook_attempts (tenant_id, delivery_id, attempted_at, duration_ms, status_code, error)
             SELECT ?1, ?2, ?3, ?4, ?5, ?6 WHERE EXISTS (SELECT 1 FROM webhook_deliveries WHERE id = ?2 AND tenant_id = ?1)",
            params![tenant, rec.delivery_id, at, i64::try_from(a.duration_ms).unwrap_or(i64::MAX), a.status_code, a.error],
        )?;
        let error = a.error.clone().or_else(|| a.status_code.map(|c| format!("HTTP {c}")));
        // Only a pending delivery changes: if its lease ran out and another
        // worker finished it meanwhile, this attempt is logged and no more.
        let update = "UPDATE webhook_deliveries SET status = ?3, attempts = attempts + 1, next_attempt_at = ?4, lease_until = NULL,
                          last_error = ?5, finished_at = ?6
                      WHERE tenant_id = ?1 AND id = ?2 AND status = 'pending'";
        match &rec.next {
            NextStep::Delivered => self.exec(update, params![tenant, rec.delivery_id, "delivered", at, Option::<String>::None, at])?,
            NextStep::RetryAt(t) => {
                self.exec(update, params![tenant, rec.delivery_id, "pending", t.as_millis(), error, Option::<i64>::None])?
            }
            NextStep::Failed => self.exec(update, params![tenant, rec.delivery_id, "failed", at, error, at])?,
            NextStep::DisableEndpoint => {
                self.exec(update, params![tenant, rec.delivery_id, "failed", at, error, at])?;
                self.exec(
                    "UPDATE webhook_endpoints SET enabled = 0, disabled_reason = 'the endpoint answered 410 Gone' WHERE tenant_id = ?1 AND id = ?2",
                    params![tenant, rec.endpoint_id.0],
                )?;
                self.exec(
                    "UPDATE webhook_deliveries SET status = 'failed', last_error = 'endpoint disabled', finished_at = ?3, lease_until = NULL
                     WHERE tenant_id = ?1 AND endpoint_id = ?2 AND status = 'pending'",
                    params![tenant, rec.endpoint_id.0, at],
                )?
            }
        };
        Ok(())
    }
}

#[cfg(test)]
mod plans {
    use super::{DUE_DELIVERIES, NEXT_DELIVERY_DUE, OLDEST_DUE_DELIVERY};
    use crate::sqlite::{connection, migrate};

    /// The plans SQLite picks for the worker's queries, which run on every
    /// commit that adds deliveries: none may walk the whole backlog.
    #[test]
    fn delivery_queries_walk_the_endpoints_not_the_backlog() {
        let dir = tempfile::tempdir().expect("temporary folder");
        let mut conn = connection::open_writer(&dir.path().join("plan.sqlite3")).expect("open");
        migrate::apply(&mut conn).expect("migrate");
        let mut stmt = conn.prepare(&format!("EXPLAIN QUERY PLAN {DUE_DELIVERIES}")).expect("prepare");
        let plan: Vec<String> =
            stmt.query_map(rusqlite::params![0, 16], |r| r.get::<_, String>(3)).expect("plan").collect::<Result<_, _>>().expect("rows");
        assert!(plan.first().is_some_and(|p| p.starts_with("SCAN w")), "endpoints first: {plan:?}");
        assert!(!plan.iter().any(|p| p.starts_with("SCAN d")), "no scan of the deliveries: {plan:?}");
        assert!(plan.iter().any(|p| p.contains("webhook_deliveries_endpoint_due")), "the per-endpoint index: {plan:?}");

        let mut stmt = conn.prepare(&format!("EXPLAIN QUERY PLAN {NEXT_DELIVERY_DUE}")).expect("prepare");
        let plan: Vec<String> = stmt.query_map([], |r| r.get::<_, String>(3)).expect("plan").collect::<Result<_, _>>().expect("rows");
        assert!(!plan.iter().any(|p| p.starts_with("SCAN d")), "no scan of the deliveries: {plan:?}");
        assert!(plan.iter().any(|p| p.contains("COVERING INDEX webhook_deliveries_endpoint_due")), "the per-endpoint index: {plan:?}");

        // The health report's lag, which anyone may ask for.
        let mut stmt = conn.prepare(&format!("EXPLAIN QUERY PLAN {OLDEST_DUE_DELIVERY}")).expect("prepare");
        let plan: Vec<String> = stmt.query_map([0], |r| r.get::<_, String>(3)).expect("plan").collect::<Result<_, _>>().expect("rows");
        assert!(!plan.iter().any(|p| p.starts_with("SCAN d")), "no scan of the deliveries: {plan:?}");
        assert!(plan.iter().any(|p| p.contains("webhook_deliveries_endpoint_due")), "the per-endpoint index: {plan:?}");
    }
}
