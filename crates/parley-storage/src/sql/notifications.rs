//! Operator notifications: the devices sign-ins registered, and how far
//! each operator has read each conversation.

use parley_domain::Timestamp;
use parley_domain::model::*;
use parley_domain::store::StoreResult;
use parley_domain::store::ops::{NotificationsRead, NotificationsWrite};

use parley_domain::push::schedule::PushStep;
use parley_domain::push::{self, ClaimedPush, DuePush, PushReason, PushTarget, QueuedPush};

use super::conversations::{HAS_UNREAD, SCOPE, UNREAD, has_unread, scope, unread_messages};
use super::{IdList, Row, Tx, statements};

/// A device's columns, as `d_…`; `table` is how the statement names the
/// table (`d.` in a query, nothing in a `RETURNING`).
fn device_cols(table: &str) -> String {
    ["id", "operator_id", "platform", "name", "created_at", "last_push_at"].map(|c| format!("{table}{c} AS d_{c}")).join(", ")
}

fn device(r: &dyn Row) -> StoreResult<Device> {
    Ok(Device {
        id: DeviceId(r.i64("d_id")?),
        operator_id: OperatorId(r.i64("d_operator_id")?),
        platform: r.parsed("d_platform", Platform::parse)?,
        name: r.text("d_name")?,
        created_at: r.ts("d_created_at")?,
        last_push_at: r.opt_ts("d_last_push_at")?,
    })
}

/// A sign-in (`t`) that still holds at `:now`: the rule of a device's
/// life.
const HOLDS: &str = "t.revoked_at IS NULL AND t.expires_at > :now";

/// Each tenant's oldest due pushes, at most `:per_tenant` of each,
/// ranked in one pass over the due rows (the pending rows' partial index).
/// Not a per-tenant `LIMIT` in a correlated subquery: PostgreSQL runs such
/// a subquery once per row of the outer table, which made a claim cost
/// rows times tenants.
fn due_pushes() -> String {
    "SELECT p.id AS id, p.tenant_id AS tenant_id FROM push_outbox p
         WHERE p.id IN (
             SELECT r.id FROM (
                 SELECT q.id, ROW_NUMBER() OVER (PARTITION BY q.tenant_id ORDER BY q.due_at, q.id) AS n
                 FROM push_outbox q
                 WHERE q.pending = TRUE AND q.due_at <= :now AND (q.lease_until IS NULL OR q.lease_until <= :now)) AS r
             WHERE r.n <= :per_tenant)
         ORDER BY p.due_at, p.id"
        .into()
}

fn due_push(r: &dyn Row) -> StoreResult<DuePush> {
    Ok(DuePush { id: PushId(r.i64("id")?), tenant_id: TenantId(r.i64("tenant_id")?) })
}

statements! {
    /// One push token is one device's, whoever registered it: registering
    /// it again takes the row over (its id stays; everything else is the
    /// new registration's). The only statement here that reaches across
    /// tenants, so that a phone signed in to another account stops
    /// receiving the first one's pushes; the sign-in it attaches to must
    /// be the caller's own and still hold.
    REGISTER_DEVICE<'a>(
        tenant: TenantId, operator: OperatorId, token: TokenId, platform: &'a str, push_token: &'a str, push_key: &'a [u8],
        p256dh: Option<&'a str>, auth: Option<&'a str>, app_id: Option<&'a str>, name: Option<&'a str>, locale: Option<&'a str>,
        created_at: Timestamp,
    ) => |_| format!(
        "INSERT INTO devices (tenant_id, operator_id, token_id, platform, push_token, push_key, web_p256dh, web_auth, app_id, name, locale, created_at)
         SELECT :tenant, o.id, t.id, :platform, :push_token, :push_key, :p256dh, :auth, :app_id, :name, :locale, :created_at
         FROM operators o JOIN operator_tokens t ON t.operator_id = o.id AND t.tenant_id = o.tenant_id
         WHERE o.tenant_id = :tenant AND o.id = :operator AND t.id = :token
         ON CONFLICT (push_key) DO UPDATE SET
           tenant_id = excluded.tenant_id, operator_id = excluded.operator_id, token_id = excluded.token_id,
           platform = excluded.platform, push_token = excluded.push_token, web_p256dh = excluded.web_p256dh,
           web_auth = excluded.web_auth, app_id = excluded.app_id, name = excluded.name, locale = excluded.locale,
           created_at = excluded.created_at, last_push_at = NULL
         RETURNING {}",
        device_cols("")
    ),
    /// The sign-in a device is registered for, if it still holds; in a
    /// write unit on PostgreSQL its row is locked, so that a logout or a
    /// revocation running side by side waits for the registration and
    /// then removes its device (or the registration sees it ended).
    LIVE_SIGN_IN(tenant: TenantId, operator: OperatorId, token: TokenId, now: Timestamp) locked LIVE_SIGN_IN_LOCKED => |_| format!(
        "SELECT t.id AS id FROM operator_tokens t
         WHERE t.tenant_id = :tenant AND t.operator_id = :operator AND t.id = :token AND {HOLDS}"
    ),
    /// Only those whose sign-in still holds.
    DEVICES(tenant: TenantId, operator: OperatorId, now: Timestamp) => |_| format!(
        "SELECT {} FROM devices d JOIN operator_tokens t ON t.id = d.token_id AND t.tenant_id = d.tenant_id
         WHERE d.tenant_id = :tenant AND d.operator_id = :operator AND {HOLDS}
         ORDER BY d.id",
        device_cols("d.")
    ),
    /// The operator whose devices are counted, locked in a write unit on
    /// PostgreSQL: registrations by several of its sign-ins at once count
    /// one after another (each sign-in's own lock does not order them), so
    /// none passes the limit on a count taken before another's insert.
    DEVICE_OWNER(tenant: TenantId, operator: OperatorId) locked DEVICE_OWNER_LOCKED => |_|
        "SELECT o.id AS id FROM operators o WHERE o.tenant_id = :tenant AND o.id = :operator".into(),
    OTHER_DEVICES<'a>(tenant: TenantId, operator: OperatorId, push_key: &'a [u8], now: Timestamp) => |_| format!(
        "SELECT COUNT(*) AS n FROM devices d JOIN operator_tokens t ON t.id = d.token_id AND t.tenant_id = d.tenant_id
         WHERE d.tenant_id = :tenant AND d.operator_id = :operator AND d.push_key <> :push_key AND {HOLDS}"
    ),
    DELETE_DEVICE(tenant: TenantId, operator: OperatorId, id: DeviceId) => |_|
        "DELETE FROM devices WHERE tenant_id = :tenant AND operator_id = :operator AND id = :id".into(),
    UNREAD_CONVERSATIONS(scope: ConversationScope) => |_| format!(
        "SELECT COUNT(*) AS n FROM conversations c WHERE {SCOPE} AND c.status <> 'closed' AND {HAS_UNREAD}"
    ),
    /// A message of a conversation the scope sees; a note only with
    /// `include_internal` (whether one exists is not a visitor's to learn).
    MESSAGE_OF(scope: ConversationScope, conversation: ConversationId, message: MessageId, include_internal: bool) => |_| format!(
        "SELECT m.id AS id FROM messages m JOIN conversations c ON c.id = m.conversation_id AND c.tenant_id = m.tenant_id
         WHERE {SCOPE} AND c.id = :conversation AND m.id = :message AND (:include_internal OR m.internal = FALSE)"
    ),
    /// Never backwards: a marker further on stays.
    MOVE_MARKER(tenant: TenantId, reader: OperatorId, conversation: ConversationId, message: MessageId, at: Timestamp) => |_|
        "INSERT INTO read_markers (tenant_id, operator_id, conversation_id, message_id, updated_at)
         VALUES (:tenant, :reader, :conversation, :message, :at)
         ON CONFLICT (operator_id, conversation_id) DO UPDATE SET
           message_id = CASE WHEN excluded.message_id > read_markers.message_id THEN excluded.message_id ELSE read_markers.message_id END,
           updated_at = excluded.updated_at".into(),
    /// A push for the devices of every operator who is to hear of a
    /// change in conversation `:conversation` (see `QueuedPush`), one row
    /// per device and conversation. A row still pending takes the new
    /// reason and message and keeps its due time; one sent already is
    /// due again no sooner than `:spacing` ms after that send.
    QUEUE_PUSH<'a>(
        tenant: TenantId, conversation: ConversationId, message: Option<MessageId>, reason: &'a str,
        recipient: Option<OperatorId>, actor: Option<OperatorId>, now: Timestamp, spacing: u64,
    ) => |_| format!(
        "INSERT INTO push_outbox (tenant_id, device_id, operator_id, conversation_id, message_id, reason, pending, revision,
                                  due_at, attempts, created_at)
         SELECT :tenant, d.id, o.id, c.id, :message, :reason, TRUE, 1, :now, 0, :now
         FROM conversations c
         JOIN operators o ON o.tenant_id = c.tenant_id
         JOIN devices d ON d.operator_id = o.id AND d.tenant_id = o.tenant_id
         JOIN operator_tokens t ON t.id = d.token_id AND t.tenant_id = d.tenant_id
         WHERE c.tenant_id = :tenant AND c.id = :conversation AND o.active = TRUE
           AND (:recipient IS NULL OR o.id = :recipient) AND (:actor IS NULL OR o.id <> :actor)
           AND CASE WHEN :recipient IS NULL THEN o.notify_unassigned ELSE o.notify_mine END
           AND {} AND {HOLDS}
         ON CONFLICT (device_id, conversation_id) DO UPDATE SET
           tenant_id = excluded.tenant_id, operator_id = excluded.operator_id,
           message_id = excluded.message_id, reason = excluded.reason, revision = push_outbox.revision + 1,
           due_at = CASE WHEN push_outbox.pending THEN push_outbox.due_at
                         WHEN push_outbox.last_sent_at + :spacing > excluded.due_at THEN push_outbox.last_sent_at + :spacing
                         ELSE excluded.due_at END,
           attempts = CASE WHEN push_outbox.pending THEN push_outbox.attempts ELSE 0 END,
           pending = TRUE",
        scope!(":tenant", "NULL", "o.id", "o.role = 'admin'")
    ),
    DUE_PUSHES(now: Timestamp, per_tenant: u32) => |_| due_pushes(),
    /// The same, locked for a claim (see `Dialect::claim`).
    CLAIMABLE_PUSHES(now: Timestamp, per_tenant: u32) => |d| d.claim(due_pushes(), "p"),
    /// The earliest push not out, through the pending rows' index in
    /// order. Pushes out are not waited for here: their worker wakes when
    /// they end, and a lease left by a dead instance is found by the poll.
    NEXT_PUSH_DUE() => |_| "SELECT MIN(due_at) AS due FROM push_outbox WHERE pending = TRUE AND lease_until IS NULL".into(),
    /// Exactly the rows this statement leased come back.
    LEASE_PUSHES<'a>(now: Timestamp, lease_until: Timestamp, pushes: &'a IdList) => |d| format!(
        "UPDATE push_outbox SET lease_until = :lease_until
         WHERE id IN ({}) AND pending = TRUE AND due_at <= :now AND (lease_until IS NULL OR lease_until <= :now)
         RETURNING id",
        d.id_list(":pushes")
    ),
    /// What the leased pushes say and where they go (the badge is counted
    /// apart, once per operator, by the worker). `live` is whether the push still stands as queued: the
    /// device still the operator's, its sign-in and the operator still
    /// active, the conversation still one the operator sees, and still
    /// unassigned or the operator's (an assignment push: still assigned to
    /// it; the rule `feed::record` queues by). The worker's statement,
    /// across tenants: it joins the device by
    /// id alone, so a row whose device moved to another tenant is read
    /// (and dropped as not live) rather than left leased for ever.
    CLAIMED_PUSHES<'a>(now: Timestamp, pushes: &'a IdList) => |d| format!(
        "SELECT p.id AS p_id, p.tenant_id AS p_tenant_id, p.operator_id AS p_operator_id, p.conversation_id AS p_conversation_id,
                p.revision AS p_revision, p.attempts AS p_attempts, p.reason AS p_reason, p.lease_until AS p_lease_until,
                dv.id AS dv_id, dv.platform AS dv_platform, dv.push_token AS dv_push_token, dv.web_p256dh AS dv_p256dh,
                dv.web_auth AS dv_auth, dv.app_id AS dv_app_id, dv.locale AS dv_locale,
                dv.last_push_at AS dv_last_push_at,
                v.name AS v_name, m.body AS m_body,
                COALESCE((o.active = TRUE AND {HOLDS} AND dv.operator_id = p.operator_id AND dv.tenant_id = p.tenant_id
                          AND EXISTS (SELECT 1 FROM conversations c WHERE c.id = p.conversation_id AND {scope})
                          AND CASE WHEN p.reason = '{assigned}' THEN cv.assignee_id = p.operator_id
                                   ELSE cv.assignee_id IS NULL OR cv.assignee_id = p.operator_id END), FALSE) AS live,
                o.role AS o_role,
                EXISTS (SELECT 1 FROM conversations c WHERE c.id = p.conversation_id AND {unread}) AS unread_here
         FROM push_outbox p
         JOIN devices dv ON dv.id = p.device_id
         JOIN operator_tokens t ON t.id = dv.token_id AND t.tenant_id = dv.tenant_id
         JOIN operators o ON o.id = p.operator_id AND o.tenant_id = p.tenant_id
         JOIN conversations cv ON cv.id = p.conversation_id AND cv.tenant_id = p.tenant_id
         JOIN visitors v ON v.id = cv.visitor_id AND v.tenant_id = cv.tenant_id
         LEFT JOIN messages m ON m.id = p.message_id AND m.tenant_id = p.tenant_id
         WHERE p.id IN ({list})
         ORDER BY p.due_at, p.id",
        scope = scope!("p.tenant_id", "NULL", "p.operator_id", "o.role = 'admin'"),
        unread = has_unread!("p.operator_id"),
        assigned = PushReason::Assigned.as_str(),
        list = d.id_list(":pushes")
    ),
    /// Sent: a change that collapsed into the row while it was out leaves
    /// it pending, due after the spacing.
    /// Each of these changes the row only while this worker's lease holds
    /// (`:leased_until`): a worker whose lease ran out, and whose push
    /// another instance took, records nothing over the other's.
    PUSH_SENT(id: PushId, leased_until: Timestamp, revision: i64, now: Timestamp, next_due: Timestamp) => |_|
        "UPDATE push_outbox SET pending = (revision <> :revision), last_sent_at = :now, due_at = :next_due,
                attempts = 0, lease_until = NULL
         WHERE id = :id AND lease_until = :leased_until".into(),
    PUSH_RETRY(id: PushId, leased_until: Timestamp, at: Timestamp) => |_|
        "UPDATE push_outbox SET attempts = attempts + 1, due_at = :at, lease_until = NULL
         WHERE id = :id AND lease_until = :leased_until".into(),
    /// Given up (or no longer worth sending): a newer change still goes.
    PUSH_DROPPED(id: PushId, leased_until: Timestamp, revision: i64, now: Timestamp) => |_|
        "UPDATE push_outbox SET pending = (revision <> :revision), attempts = 0, due_at = :now, lease_until = NULL
         WHERE id = :id AND lease_until = :leased_until".into(),
    /// A push token registered again by another operator (or tenant):
    /// what its device had queued for the previous one goes, so a phone
    /// never hears of the previous account's conversations. Across
    /// tenants, like the registration itself.
    DROP_MOVED_PUSHES<'a>(tenant: TenantId, operator: OperatorId, push_key: &'a [u8]) => |_|
        "DELETE FROM push_outbox WHERE device_id IN (
             SELECT id FROM devices WHERE push_key = :push_key AND (tenant_id <> :tenant OR operator_id <> :operator))".into(),
    /// Still the operator's device (it may have been registered again by
    /// another meanwhile).
    DEVICE_PUSHED(tenant: TenantId, operator: OperatorId, id: DeviceId, now: Timestamp) => |_|
        "UPDATE devices SET last_push_at = :now WHERE tenant_id = :tenant AND operator_id = :operator AND id = :id".into(),
    /// A device whose token the provider reported dead; its pushes go
    /// with it. Only while the push's lease holds and the device is still
    /// the operator's: a late worker does not remove a device another
    /// instance has since pushed to, or a new owner's.
    REMOVE_DEVICE(tenant: TenantId, operator: OperatorId, id: DeviceId, push: PushId, leased_until: Timestamp) => |_|
        "DELETE FROM devices WHERE tenant_id = :tenant AND operator_id = :operator AND id = :id
           AND EXISTS (SELECT 1 FROM push_outbox WHERE id = :push AND lease_until = :leased_until)".into(),
    /// The marker, with the same count the conversations carry.
    MARKER(operator: OperatorId, conversation: ConversationId) => |_| format!(
        "SELECT rm.message_id AS message_id, {UNREAD} AS unread
         FROM read_markers rm JOIN conversations c ON c.id = rm.conversation_id AND c.tenant_id = rm.tenant_id
         WHERE rm.operator_id = :operator AND rm.conversation_id = :conversation"
    ),
}

impl NotificationsRead for Tx<'_> {
    fn devices(&mut self, tenant: TenantId, operator: OperatorId, now: Timestamp) -> StoreResult<Vec<Device>> {
        self.all(DEVICES { tenant, operator, now }, device)
    }

    fn other_devices(&mut self, tenant: TenantId, operator: OperatorId, push_key: &[u8], now: Timestamp) -> StoreResult<u64> {
        self.one(self.locking(DEVICE_OWNER { tenant, operator }), |r| r.i64("id"))?;
        self.count(OTHER_DEVICES { tenant, operator, push_key, now })
    }

    fn unread_conversations(&mut self, scope: ConversationScope) -> StoreResult<u64> {
        self.count(UNREAD_CONVERSATIONS { scope })
    }

    fn due_pushes(&mut self, now: Timestamp, per_tenant: u32) -> StoreResult<Vec<DuePush>> {
        self.all(DUE_PUSHES { now, per_tenant }, due_push)
    }

    fn next_push_due(&mut self) -> StoreResult<Option<Timestamp>> {
        Ok(self.one(NEXT_PUSH_DUE {}, |r| r.opt_ts("due"))?.flatten())
    }
}

impl NotificationsWrite for Tx<'_> {
    fn insert_device(&mut self, tenant: TenantId, d: &NewDevice) -> StoreResult<Option<Device>> {
        let sign_in = LIVE_SIGN_IN { tenant, operator: d.operator_id, token: d.token_id, now: d.created_at };
        if self.one(self.locking(sign_in), |r| r.i64("id"))?.is_none() {
            return Ok(None);
        }
        self.exec(DROP_MOVED_PUSHES { tenant, operator: d.operator_id, push_key: &d.push_key })?;
        let keys = d.web_keys.as_ref();
        let params = REGISTER_DEVICE {
            tenant,
            operator: d.operator_id,
            token: d.token_id,
            platform: d.platform.as_str(),
            push_token: &d.push_token,
            push_key: &d.push_key,
            p256dh: keys.map(|k| k.p256dh.as_str()),
            auth: keys.map(|k| k.auth.as_str()),
            app_id: d.app_id.as_deref(),
            name: d.name.as_deref(),
            locale: d.locale.as_deref(),
            created_at: d.created_at,
        };
        self.one(params, device)
    }

    fn delete_device(&mut self, tenant: TenantId, operator: OperatorId, id: DeviceId) -> StoreResult<bool> {
        Ok(self.exec(DELETE_DEVICE { tenant, operator, id })? == 1)
    }

    fn mark_read(
        &mut self,
        scope: ConversationScope,
        conversation: ConversationId,
        message: MessageId,
        at: Timestamp,
    ) -> StoreResult<Option<ReadMarker>> {
        let Some((reader, _)) = scope.operator else { return Ok(None) };
        if self.one(MESSAGE_OF { scope, conversation, message, include_internal: true }, |r| r.i64("id"))?.is_none() {
            return Ok(None);
        }
        self.exec(MOVE_MARKER { tenant: scope.tenant, reader, conversation, message, at })?;
        self.one(MARKER { operator: reader, conversation }, |r| {
            Ok(ReadMarker { conversation_id: conversation, message_id: MessageId(r.i64("message_id")?), unread_count: r.u64("unread")? })
        })
    }

    fn queue_push(&mut self, p: &QueuedPush) -> StoreResult<()> {
        let params = QUEUE_PUSH {
            tenant: p.tenant,
            conversation: p.conversation,
            message: p.message,
            reason: p.reason.as_str(),
            recipient: p.recipient,
            actor: p.actor,
            now: p.at,
            spacing: u64::try_from(push::SPACING.as_millis()).unwrap_or(u64::MAX),
        };
        // No answer is needed: it goes with the unit's next round trip.
        self.defer(params, false)?;
        self.effects.pushes_queued = true;
        Ok(())
    }

    fn claimable_pushes(&mut self, now: Timestamp, per_tenant: u32) -> StoreResult<Vec<DuePush>> {
        self.all(CLAIMABLE_PUSHES { now, per_tenant }, due_push)
    }

    fn lease_pushes(&mut self, chosen: &[DuePush], now: Timestamp, lease_until: Timestamp) -> StoreResult<Vec<ClaimedPush>> {
        if chosen.is_empty() {
            return Ok(Vec::new());
        }
        let pushes = &IdList::new(chosen.iter().map(|p| p.id.0));
        let leased = self.all(LEASE_PUSHES { now, lease_until, pushes }, |r| r.i64("id"))?;
        if leased.is_empty() {
            return Ok(Vec::new());
        }
        self.all(CLAIMED_PUSHES { now, pushes: &IdList::new(leased) }, claimed_push)
    }

    fn finish_push(&mut self, p: &ClaimedPush, step: PushStep, now: Timestamp) -> StoreResult<()> {
        match step {
            PushStep::Sent => {
                let params =
                    PUSH_SENT { id: p.id, leased_until: p.leased_until, revision: p.revision, now, next_due: now.plus(push::SPACING) };
                if self.exec(params)? == 1 {
                    self.exec(DEVICE_PUSHED { tenant: p.tenant_id, operator: p.operator_id, id: p.target.device_id, now })?;
                }
            }
            PushStep::RetryAt(at) => {
                self.exec(PUSH_RETRY { id: p.id, leased_until: p.leased_until, at })?;
            }
            PushStep::GiveUp => {
                self.exec(PUSH_DROPPED { id: p.id, leased_until: p.leased_until, revision: p.revision, now })?;
            }
            PushStep::RemoveDevice => {
                let params = REMOVE_DEVICE {
                    tenant: p.tenant_id,
                    operator: p.operator_id,
                    id: p.target.device_id,
                    push: p.id,
                    leased_until: p.leased_until,
                };
                self.exec(params)?;
            }
        }
        Ok(())
    }
}

fn claimed_push(r: &dyn Row) -> StoreResult<ClaimedPush> {
    let platform = r.parsed("dv_platform", Platform::parse)?;
    let web_keys = match (r.text("dv_p256dh")?, r.text("dv_auth")?) {
        (Some(p256dh), Some(auth)) => Some(WebPushKeys { p256dh, auth }),
        _ => None,
    };
    Ok(ClaimedPush {
        id: PushId(r.i64("p_id")?),
        tenant_id: TenantId(r.i64("p_tenant_id")?),
        operator_id: OperatorId(r.i64("p_operator_id")?),
        operator_role: r.parsed("o_role", Role::parse)?,
        conversation_id: ConversationId(r.i64("p_conversation_id")?),
        revision: r.i64("p_revision")?,
        attempts: r.u32("p_attempts")?,
        reason: r.parsed("p_reason", PushReason::parse)?,
        target: PushTarget {
            device_id: DeviceId(r.i64("dv_id")?),
            platform,
            token: r.string("dv_push_token")?,
            web_keys,
            app_id: r.text("dv_app_id")?,
            locale: r.text("dv_locale")?,
            pushed_before: r.opt_ts("dv_last_push_at")?.is_some(),
        },
        visitor_name: r.text("v_name")?,
        message: r.text("m_body")?,
        badge: 0,
        unread_here: r.flag("unread_here")?,
        live: r.flag("live")?,
        leased_until: r.ts("p_lease_until")?,
    })
}
