//! Operator notifications: the devices sign-ins registered, and how far
//! each operator has read each conversation.

use parley_domain::Timestamp;
use parley_domain::model::*;
use parley_domain::store::StoreResult;
use parley_domain::store::ops::{NotificationsRead, NotificationsWrite};

use super::conversations::{SCOPE, UNREAD};
use super::{Row, Tx, statements};

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
    OTHER_DEVICES<'a>(tenant: TenantId, operator: OperatorId, push_key: &'a [u8], now: Timestamp) => |_| format!(
        "SELECT COUNT(*) AS n FROM devices d JOIN operator_tokens t ON t.id = d.token_id AND t.tenant_id = d.tenant_id
         WHERE d.tenant_id = :tenant AND d.operator_id = :operator AND d.push_key <> :push_key AND {HOLDS}"
    ),
    DELETE_DEVICE(tenant: TenantId, operator: OperatorId, id: DeviceId) => |_|
        "DELETE FROM devices WHERE tenant_id = :tenant AND operator_id = :operator AND id = :id".into(),
    UNREAD_CONVERSATIONS(scope: ConversationScope) => |_| format!(
        "SELECT COUNT(*) AS n FROM conversations c WHERE {SCOPE} AND c.status <> 'closed' AND {UNREAD} > 0"
    ),
    /// A message of a conversation the scope sees.
    MESSAGE_OF(scope: ConversationScope, conversation: ConversationId, message: MessageId) => |_| format!(
        "SELECT m.id AS id FROM messages m JOIN conversations c ON c.id = m.conversation_id AND c.tenant_id = m.tenant_id
         WHERE {SCOPE} AND c.id = :conversation AND m.id = :message"
    ),
    /// Never backwards: a marker further on stays.
    MOVE_MARKER(tenant: TenantId, reader: OperatorId, conversation: ConversationId, message: MessageId, at: Timestamp) => |_|
        "INSERT INTO read_markers (tenant_id, operator_id, conversation_id, message_id, updated_at)
         VALUES (:tenant, :reader, :conversation, :message, :at)
         ON CONFLICT (operator_id, conversation_id) DO UPDATE SET
           message_id = CASE WHEN excluded.message_id > read_markers.message_id THEN excluded.message_id ELSE read_markers.message_id END,
           updated_at = excluded.updated_at".into(),
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
        self.count(OTHER_DEVICES { tenant, operator, push_key, now })
    }

    fn unread_conversations(&mut self, scope: ConversationScope) -> StoreResult<u64> {
        self.count(UNREAD_CONVERSATIONS { scope })
    }
}

impl NotificationsWrite for Tx<'_> {
    fn insert_device(&mut self, tenant: TenantId, d: &NewDevice) -> StoreResult<Option<Device>> {
        let sign_in = LIVE_SIGN_IN { tenant, operator: d.operator_id, token: d.token_id, now: d.created_at };
        if self.one(self.locking(sign_in), |r| r.i64("id"))?.is_none() {
            return Ok(None);
        }
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
        if self.one(MESSAGE_OF { scope, conversation, message }, |r| r.i64("id"))?.is_none() {
            return Ok(None);
        }
        self.exec(MOVE_MARKER { tenant: scope.tenant, reader, conversation, message, at })?;
        self.one(MARKER { operator: reader, conversation }, |r| {
            Ok(ReadMarker { conversation_id: conversation, message_id: MessageId(r.i64("message_id")?), unread_count: r.u64("unread")? })
        })
    }
}
