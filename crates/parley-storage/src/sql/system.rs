//! Service-wide state and retention.

use parley_domain::Timestamp;
use parley_domain::store::ops::{SystemRead, SystemWrite};
use parley_domain::store::{Prunable, StoreResult};

use super::{Tx, args, id_list, statements};

statements! {
    /// See `Tx::transaction_lock`.
    TRANSACTION_LOCK[Int](d) => d.transaction_lock().into(),
    STATE[Text](_) => "SELECT value FROM system_state WHERE key = ?1".into(),
    SERVER_KEY[Text](_) => "SELECT secret FROM server_keys WHERE name = ?1".into(),
    INSERT_SERVER_KEY[Text, Bytes, Int](_) =>
        "INSERT INTO server_keys (name, secret, created_at) VALUES (?1, ?2, ?3) ON CONFLICT (name) DO NOTHING".into(),
    SET_STATE[Text, Int](_) =>
        "INSERT INTO system_state (key, value) VALUES (?1, ?2) ON CONFLICT (key) DO UPDATE SET value = excluded.value".into(),
    /// An event goes once it is old and none of its deliveries is pending
    /// or recent (a redelivery keeps its log).
    DOOMED_EVENTS[Int, Int](_) => "SELECT e.id FROM events e WHERE e.occurred_at < ?1
         AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d
                         WHERE d.event_id = e.id AND (d.status = 'pending' OR d.created_at >= ?1))
         ORDER BY e.occurred_at LIMIT ?2".into(),
    /// The deletes re-check the rule, so a delivery added meanwhile keeps
    /// its event. Attempts go with their deliveries (ON DELETE CASCADE).
    PRUNE_DELIVERIES[Int, Text](d) => format!(
        "DELETE FROM webhook_deliveries WHERE event_id IN ({}) AND status <> 'pending' AND created_at < ?1",
        d.id_list("?2")
    ),
    PRUNE_EVENTS[Int, Text](d) => format!(
        "DELETE FROM events WHERE id IN ({}) AND occurred_at < ?1
         AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.event_id = events.id)",
        d.id_list("?2")
    ),
    PRUNE_TOKENS[Int, Int](_) => "DELETE FROM operator_tokens WHERE id IN (SELECT id FROM operator_tokens
         WHERE expires_at < ?1 OR revoked_at < ?1 ORDER BY id LIMIT ?2)".into(),
    PRUNE_CHALLENGES[Int, Int](_) => "DELETE FROM verification_challenges WHERE id IN (SELECT id FROM verification_challenges
         WHERE created_at < ?1 ORDER BY created_at LIMIT ?2)".into(),
    PRUNE_TEST_SENDS[Int, Int](_) => "DELETE FROM verification_tests WHERE id IN (SELECT id FROM verification_tests
         WHERE created_at < ?1 ORDER BY created_at LIMIT ?2)".into(),
    PRUNE_SANDBOX_OUTBOX[Int, Int](_) =>
        "DELETE FROM sandbox_outbox WHERE id IN (SELECT id FROM sandbox_outbox WHERE created_at < ?1 ORDER BY id LIMIT ?2)".into(),
}

impl SystemRead for Tx<'_> {
    fn state(&mut self, key: &str) -> StoreResult<Option<i64>> {
        self.one(&STATE, args![key], |r| r.i64("value"))
    }

    fn server_key(&mut self, name: &str) -> StoreResult<Option<Vec<u8>>> {
        self.one(&SERVER_KEY, args![name], |r| r.blob("secret"))
    }
}

impl SystemWrite for Tx<'_> {
    fn set_state(&mut self, key: &str, value: i64) -> StoreResult<()> {
        self.exec(&SET_STATE, args![key, value])?;
        Ok(())
    }

    fn insert_server_key(&mut self, name: &str, secret: &[u8], now: Timestamp) -> StoreResult<()> {
        self.exec(&INSERT_SERVER_KEY, args![name, secret, now])?;
        Ok(())
    }

    fn prune(&mut self, what: Prunable, cutoff: Timestamp, limit: u32) -> StoreResult<usize> {
        match what {
            Prunable::Events => {
                let ids = self.all(&DOOMED_EVENTS, args![cutoff, limit], |r| r.i64("id"))?;
                if ids.is_empty() {
                    return Ok(0);
                }
                let ids = id_list(ids);
                self.exec(&PRUNE_DELIVERIES, args![cutoff, &ids])?;
                self.exec(&PRUNE_EVENTS, args![cutoff, &ids])
            }
            Prunable::Tokens => self.exec(&PRUNE_TOKENS, args![cutoff, limit]),
            Prunable::Challenges => {
                // Test messages are counted over the same windows as
                // challenges, so they are kept as long.
                let n = self.exec(&PRUNE_CHALLENGES, args![cutoff, limit])?;
                Ok(n + self.exec(&PRUNE_TEST_SENDS, args![cutoff, limit])?)
            }
            Prunable::SandboxOutbox => self.exec(&PRUNE_SANDBOX_OUTBOX, args![cutoff, limit]),
        }
    }
}
