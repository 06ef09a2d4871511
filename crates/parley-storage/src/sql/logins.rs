//! Failed sign-ins.

use parley_domain::Timestamp;
use parley_domain::model::LoginFailureId;
use parley_domain::store::StoreResult;
use parley_domain::store::ops::LoginsWrite;

use super::{Tx, statements};

/// The lock standing for a sign-in key.
fn lock_number(key: &str) -> i64 {
    crate::locks::named(&format!("login:{key}"))
}

statements! {
    FAILURES<'a>(key: &'a str, since: Timestamp, limit: u32) => |_|
        "SELECT at FROM login_failures WHERE key = :key AND at > :since ORDER BY at LIMIT :limit".into(),
    INSERT_FAILURE<'a>(key: &'a str, at: Timestamp) => |_| "INSERT INTO login_failures (key, at) VALUES (:key, :at) RETURNING id".into(),
    DELETE_FAILURE(id: LoginFailureId) => |_| "DELETE FROM login_failures WHERE id = :id".into(),
    CLEAR_FAILURES<'a>(key: &'a str) => |_| "DELETE FROM login_failures WHERE key = :key".into(),
    PRUNE_FAILURES(cutoff: Timestamp, limit: u32) => |_|
        "DELETE FROM login_failures WHERE id IN (SELECT id FROM login_failures WHERE at < :cutoff ORDER BY at LIMIT :limit)".into(),
}

impl LoginsWrite for Tx<'_> {
    fn lock_login_keys(&mut self, keys: &[&str]) -> StoreResult<()> {
        // Always in the same order, so two units locking the same keys
        // cannot each hold one the other waits for.
        let mut numbers: Vec<i64> = keys.iter().map(|k| lock_number(k)).collect();
        numbers.sort_unstable();
        numbers.dedup();
        for n in numbers {
            self.transaction_lock(n)?;
        }
        Ok(())
    }

    fn login_failures(&mut self, key: &str, since: Timestamp, limit: u32) -> StoreResult<Vec<Timestamp>> {
        self.all(FAILURES { key, since, limit }, |r| r.ts("at"))
    }

    fn insert_login_failure(&mut self, key: &str, at: Timestamp) -> StoreResult<LoginFailureId> {
        Ok(LoginFailureId(self.insert(INSERT_FAILURE { key, at })?))
    }

    fn delete_login_failure(&mut self, id: LoginFailureId) -> StoreResult<()> {
        self.exec(DELETE_FAILURE { id })?;
        Ok(())
    }

    fn clear_login_failures(&mut self, key: &str) -> StoreResult<()> {
        self.exec(CLEAR_FAILURES { key })?;
        Ok(())
    }

    fn prune_login_failures(&mut self, cutoff: Timestamp, limit: u32) -> StoreResult<usize> {
        self.exec(PRUNE_FAILURES { cutoff, limit })
    }
}
