//! Failed sign-ins, counted in the database.
//!
//! These limits protect accounts, so they must hold however many
//! instances share the database: a count kept in each process would let
//! an attacker who spreads attempts over N instances try N times as many
//! passwords. Each attempt reserves a failure for its email and for its
//! client address before the password is checked, inside one write unit
//! that holds both keys until its commit (`LoginsWrite::lock_login_keys`),
//! so parallel attempts on any instances cannot all slip under a limit.
//! A right password takes its reservations back; a wrong one leaves them
//! as failures.
//!
//! Once a key is over its limit it stays refused until its oldest failure
//! leaves the window, with one exception: a right password whose check
//! was already running when the key went over clears the email's
//! failures. Each instance remembers a refusal for a few seconds
//! (`Refused`, at most `REMEMBERED`) and answers further attempts on the
//! key without touching the database, so a flood of refused attempts
//! costs one locked write per key every few seconds, and the exception
//! keeps an account refused on this instance for those seconds at most.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::clock::Timestamp;
use crate::error::DomainError;
use crate::limits::{ClientKey, Rate};
use crate::model::LoginFailureId;
use crate::store::{Database, WriteTx};

/// Failures removed per write unit when old ones are pruned.
const PRUNE_BATCH: u32 = 1000;

/// How long an instance answers a refused key without the database.
const REMEMBERED: std::time::Duration = std::time::Duration::from_secs(10);

/// Refused keys an instance remembers at most; past it, refusals are
/// answered by the database again until the sweeper forgets expired ones.
const REFUSED_KEYS: usize = 100_000;

#[derive(Clone)]
pub(super) struct LoginFailures {
    db: Database,
    per_email: Option<Rate>,
    per_address: Option<Rate>,
    refused: Arc<Refused>,
}

/// Keys over their limit: until when this instance answers for the
/// database, and when the refusal ends (what `Retry-After` tells).
#[derive(Default)]
struct Refused(Mutex<HashMap<String, (Timestamp, Timestamp)>>);

impl Refused {
    fn with<T>(&self, f: impl FnOnce(&mut HashMap<String, (Timestamp, Timestamp)>) -> T) -> T {
        match self.0.lock() {
            Ok(mut map) => f(&mut map),
            Err(poisoned) => f(&mut poisoned.into_inner()),
        }
    }

    /// Refuses when any of `keys` was found over its limit lately.
    fn check(&self, keys: [&str; 2], now: Timestamp) -> Result<(), DomainError> {
        let ends = self.with(|map| keys.iter().filter_map(|k| map.get(*k).filter(|(until, _)| *until > now).map(|(_, ends)| *ends)).max());
        match ends {
            Some(ends) => Err(DomainError::rate_limited(ends.since(now))),
            None => Ok(()),
        }
    }

    fn remember(&self, key: &str, wait: std::time::Duration, now: Timestamp) {
        let entry = (now.plus(wait.min(REMEMBERED)), now.plus(wait));
        self.with(|map| {
            if map.len() >= REFUSED_KEYS {
                map.retain(|_, (until, _)| *until > now);
            }
            if map.len() < REFUSED_KEYS {
                map.insert(key.to_owned(), entry);
            }
        });
    }

    fn shrink(&self, now: Timestamp) {
        self.with(|map| map.retain(|_, (until, _)| *until > now));
    }
}

/// A key found over its limit inside a write unit.
struct OverLimit {
    key: String,
    wait: std::time::Duration,
}

/// The failures one attempt reserved, to keep or take back.
pub(super) struct Reservation {
    /// The email's key in the failures table.
    email_key: String,
    email: Option<LoginFailureId>,
    address: Option<LoginFailureId>,
}

impl LoginFailures {
    pub(super) fn new(db: Database, per_email: Option<Rate>, per_address: Option<Rate>) -> Self {
        Self { db, per_email, per_address, refused: Arc::default() }
    }

    /// Reserves a failure for the email and the address, or refuses the
    /// attempt (with the time until a failure leaves the window) when
    /// either already has its limit.
    pub(super) async fn reserve(&self, email_key: &str, client: ClientKey, now: Timestamp) -> Result<Reservation, DomainError> {
        let (per_email, per_address) = (self.per_email, self.per_address);
        let keys = (email_failures_key(email_key), address_failures_key(client));
        let email_key = keys.0.clone();
        if per_email.is_none() && per_address.is_none() {
            return Ok(Reservation { email_key, email: None, address: None });
        }
        self.refused.check([&keys.0, &keys.1], now)?;
        let reserved = self
            .db
            .write(move |tx| {
                tx.lock_login_keys(&[&keys.0, &keys.1])?;
                if let Some(over) = over_limit(tx, &keys.0, per_email, now)? {
                    return Ok(Err(over));
                }
                if let Some(over) = over_limit(tx, &keys.1, per_address, now)? {
                    return Ok(Err(over));
                }
                let email = per_email.map(|_| tx.insert_login_failure(&keys.0, now)).transpose()?;
                let address = per_address.map(|_| tx.insert_login_failure(&keys.1, now)).transpose()?;
                Ok(Ok((email, address)))
            })
            .await?;
        match reserved {
            Ok((email, address)) => Ok(Reservation { email_key, email, address }),
            Err(over) => {
                self.refused.remember(&over.key, over.wait, now);
                Err(DomainError::rate_limited(over.wait))
            }
        }
    }

    /// Forgets refusals that have ended.
    pub(super) fn shrink(&self, now: Timestamp) {
        self.refused.shrink(now);
    }

    /// The password was right: the email's failures are forgotten, the
    /// address keeps those it made before.
    pub(super) async fn succeeded(&self, r: Reservation) -> Result<(), DomainError> {
        if r.email.is_none() && r.address.is_none() {
            return Ok(());
        }
        self.db
            .write(move |tx| {
                tx.clear_login_failures(&r.email_key)?;
                if let Some(id) = r.address {
                    tx.delete_login_failure(id)?;
                }
                Ok(())
            })
            .await
    }

    /// The check could not be made: the attempt counts for nothing.
    pub(super) async fn abandoned(&self, r: Reservation) -> Result<(), DomainError> {
        let ids: Vec<_> = r.email.into_iter().chain(r.address).collect();
        if ids.is_empty() {
            return Ok(());
        }
        self.db
            .write(move |tx| {
                for id in ids {
                    tx.delete_login_failure(id)?;
                }
                Ok(())
            })
            .await
    }

    /// Removes failures that have left every window.
    pub(super) async fn prune(&self, now: Timestamp) -> Result<usize, DomainError> {
        let Some(longest) = [self.per_email, self.per_address].into_iter().flatten().map(|r| r.period).max() else {
            return Ok(0);
        };
        let cutoff = now.minus(longest);
        let mut pruned = 0;
        loop {
            let n = self.db.write(move |tx| Ok(tx.prune_login_failures(cutoff, PRUNE_BATCH)?)).await?;
            pruned += n;
            if n < PRUNE_BATCH as usize {
                return Ok(pruned);
            }
        }
    }
}

/// Whether `key` has `rate.count` failures within the window, and how
/// long until the oldest leaves it.
fn over_limit(tx: &mut dyn WriteTx, key: &str, rate: Option<Rate>, now: Timestamp) -> Result<Option<OverLimit>, DomainError> {
    let Some(rate) = rate else { return Ok(None) };
    let times = tx.login_failures(key, now.minus(rate.period), rate.count)?;
    Ok(match times.first() {
        Some(oldest) if times.len() >= rate.count as usize => {
            Some(OverLimit { key: key.to_owned(), wait: rate.period.saturating_sub(now.since(*oldest)) })
        }
        _ => None,
    })
}

fn email_failures_key(email_key: &str) -> String {
    format!("email:{email_key}")
}

fn address_failures_key(client: ClientKey) -> String {
    format!("address:{client}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn retry_after(r: Result<(), DomainError>) -> Option<u64> {
        match r {
            Err(DomainError::RateLimited { retry_after_secs }) => Some(retry_after_secs),
            _ => None,
        }
    }

    #[test]
    fn a_remembered_refusal_answers_for_a_few_seconds_with_its_real_end() {
        let refused = Refused::default();
        let t0 = Timestamp::from_millis(1_000_000);
        refused.remember("email:a@b.c", Duration::from_secs(900), t0);
        assert_eq!(retry_after(refused.check(["email:a@b.c", "address:1.2.3.4"], t0)), Some(900));
        assert_eq!(retry_after(refused.check(["address:1.2.3.4", "email:a@b.c"], t0.plus(Duration::from_secs(9)))), Some(891));
        assert_eq!(retry_after(refused.check(["email:a@b.c", "x"], t0.plus(REMEMBERED))), None, "then the database answers");
        assert_eq!(retry_after(refused.check(["email:other", "x"], t0)), None);
    }

    #[test]
    fn the_longest_remembered_refusal_wins_and_ended_ones_are_forgotten() {
        let refused = Refused::default();
        let t0 = Timestamp::from_millis(1_000_000);
        refused.remember("a", Duration::from_secs(3), t0);
        refused.remember("b", Duration::from_secs(600), t0);
        assert_eq!(retry_after(refused.check(["a", "b"], t0)), Some(600));
        refused.shrink(t0.plus(Duration::from_secs(4)));
        assert_eq!(refused.with(|m| m.len()), 1, "a's refusal ended");
        refused.shrink(t0.plus(REMEMBERED));
        assert_eq!(refused.with(|m| m.len()), 0);
    }
}
