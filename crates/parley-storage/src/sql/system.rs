//! Service-wide state and retention.

use parley_domain::Timestamp;
use parley_domain::store::ops::{SystemRead, SystemWrite};
use parley_domain::store::{Prunable, StoreResult};

use super::{IdList, Tx, statements};

statements! {
    /// See `Tx::transaction_lock`.
    TRANSACTION_LOCK(number: i64) => |d| d.transaction_lock().into(),
    STATE<'a>(key: &'a str) => |_| "SELECT value FROM system_state WHERE key = :key".into(),
    SERVER_KEY<'a>(name: &'a str) => |_| "SELECT secret FROM server_keys WHERE name = :name".into(),
    INSERT_SERVER_KEY<'a>(name: &'a str, secret: &'a [u8], now: Timestamp) => |_|
        "INSERT INTO server_keys (name, secret, created_at) VALUES (:name, :secret, :now) ON CONFLICT (name) DO NOTHING".into(),
    SET_STATE<'a>(key: &'a str, value: i64) => |_|
        "INSERT INTO system_state (key, value) VALUES (:key, :value) ON CONFLICT (key) DO UPDATE SET value = excluded.value".into(),
    /// An event goes once it is old and none of its deliveries is pending
    /// or recent (a redelivery keeps its log).
    DOOMED_EVENTS(cutoff: Timestamp, limit: u32) => |_| "SELECT e.id FROM events e WHERE e.occurred_at < :cutoff
         AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d
                         WHERE d.event_id = e.id AND (d.status = 'pending' OR d.created_at >= :cutoff))
         ORDER BY e.occurred_at LIMIT :limit".into(),
    /// The deletes re-check the rule, so a delivery added meanwhile keeps
    /// its event. Attempts go with their deliveries (ON DELETE CASCADE).
    PRUNE_DELIVERIES<'a>(cutoff: Timestamp, events: &'a IdList) => |d| format!(
        "DELETE FROM webhook_deliveries WHERE event_id IN ({}) AND status <> 'pending' AND created_at < :cutoff",
        d.id_list(":events")
    ),
    PRUNE_EVENTS<'a>(cutoff: Timestamp, events: &'a IdList) => |d| format!(
        "DELETE FROM events WHERE id IN ({}) AND occurred_at < :cutoff
         AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.event_id = events.id)",
        d.id_list(":events")
    ),
    PRUNE_TOKENS(cutoff: Timestamp, limit: u32) => |_| "DELETE FROM operator_tokens WHERE id IN (SELECT id FROM operator_tokens
         WHERE expires_at < :cutoff OR revoked_at < :cutoff ORDER BY id LIMIT :limit)".into(),
    PRUNE_CHALLENGES(cutoff: Timestamp, limit: u32) => |_| "DELETE FROM verification_challenges WHERE id IN (SELECT id FROM verification_challenges
         WHERE created_at < :cutoff ORDER BY created_at LIMIT :limit)".into(),
    PRUNE_TEST_SENDS(cutoff: Timestamp, limit: u32) => |_| "DELETE FROM verification_tests WHERE id IN (SELECT id FROM verification_tests
         WHERE created_at < :cutoff ORDER BY created_at LIMIT :limit)".into(),
    /// Rows not pending whose last send (or, never sent, whose last due
    /// time) is before the cutoff.
    PRUNE_PUSHES(cutoff: Timestamp, limit: u32) => |_|
        "DELETE FROM push_outbox WHERE id IN (SELECT id FROM push_outbox
             WHERE pending = FALSE AND COALESCE(last_sent_at, due_at) < :cutoff ORDER BY id LIMIT :limit)
           AND pending = FALSE".into(),
    PRUNE_PRESENCE(cutoff: Timestamp, limit: u32) => |_|
        "DELETE FROM widget_presence WHERE open_until < :cutoff AND conversation_id IN (SELECT conversation_id FROM widget_presence
             WHERE open_until < :cutoff ORDER BY conversation_id LIMIT :limit)".into(),
    PRUNE_SANDBOX_OUTBOX(cutoff: Timestamp, limit: u32) => |_|
        "DELETE FROM sandbox_outbox WHERE id IN (SELECT id FROM sandbox_outbox WHERE created_at < :cutoff ORDER BY id LIMIT :limit)".into(),
}

impl SystemRead for Tx<'_> {
    fn state(&mut self, key: &str) -> StoreResult<Option<i64>> {
        self.one(STATE { key }, |r| r.i64("value"))
    }

    fn server_key(&mut self, name: &str) -> StoreResult<Option<Vec<u8>>> {
        self.one(SERVER_KEY { name }, |r| r.blob("secret"))
    }
}

impl SystemWrite for Tx<'_> {
    fn set_state(&mut self, key: &str, value: i64) -> StoreResult<()> {
        self.exec(SET_STATE { key, value })?;
        Ok(())
    }

    fn insert_server_key(&mut self, name: &str, secret: &[u8], now: Timestamp) -> StoreResult<()> {
        self.exec(INSERT_SERVER_KEY { name, secret, now })?;
        Ok(())
    }

    fn prune(&mut self, what: Prunable, cutoff: Timestamp, limit: u32) -> StoreResult<usize> {
        match what {
            Prunable::Events => {
                let ids = self.all(DOOMED_EVENTS { cutoff, limit }, |r| r.i64("id"))?;
                if ids.is_empty() {
                    return Ok(0);
                }
                let events = &IdList::new(ids);
                self.exec(PRUNE_DELIVERIES { cutoff, events })?;
                self.exec(PRUNE_EVENTS { cutoff, events })
            }
            Prunable::Tokens => self.exec(PRUNE_TOKENS { cutoff, limit }),
            Prunable::Challenges => {
                // Test messages are counted over the same windows as
                // challenges, so they are kept as long.
                let n = self.exec(PRUNE_CHALLENGES { cutoff, limit })?;
                Ok(n + self.exec(PRUNE_TEST_SENDS { cutoff, limit })?)
            }
            Prunable::SandboxOutbox => self.exec(PRUNE_SANDBOX_OUTBOX { cutoff, limit }),
            Prunable::Pushes => self.exec(PRUNE_PUSHES { cutoff, limit }),
            Prunable::Presence => self.exec(PRUNE_PRESENCE { cutoff, limit }),
        }
    }
}
