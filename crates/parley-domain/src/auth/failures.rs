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
//! Which keys judge an attempt depends on whether it carries a valid
//! device mark (`device`). Without one, the email's failures (from every
//! address) and the address's judge it. With one, only the failures made
//! with that mark judge it, so a lockout aimed at an email from elsewhere
//! does not keep the operator out of a browser or app that has signed in
//! before; its failures still count for the email and the address.
//!
//! Once a key is over its limit it stays refused until its oldest failure
//! leaves the window, with one exception: a right password whose check
//! was already running when the key went over clears the failures of the
//! key it proved (the email's, or the device's; never the address's,
//! which only gets back the attempt's own). Each instance remembers a refusal for a few seconds
//! (`Refused`) and answers further attempts on the key without touching
//! the database, so a flood of refused attempts costs one locked write
//! per key and instance every few seconds. The instance that clears a key
//! forgets its refusal at once; another instance that remembers it keeps
//! refusing the account for those few seconds at most.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use super::device::MarkedDevice;
use crate::clock::Timestamp;
use crate::error::DomainError;
use crate::limits::{self, ClientKey, Rate};
use crate::model::LoginFailureId;
use crate::store::{Database, WriteTx};

/// Failures removed per write unit when old ones are pruned.
const PRUNE_BATCH: u32 = 1000;

/// How long an instance answers a refused key without the database: long
/// enough that a flood costs a write per key only this often, short
/// enough that an account cleared on another instance is not refused
/// here for long.
const REMEMBERED: Duration = Duration::from_secs(10);

/// Refused keys an instance remembers at most. Past it, refusals are
/// answered by the database until the sweeper forgets old ones; nothing
/// is scanned on a sign-in's path.
const MAX_REFUSED_KEYS: usize = 100_000;

#[derive(Clone)]
pub(super) struct LoginFailures {
    db: Database,
    per_email: Option<Rate>,
    per_address: Option<Rate>,
    refused: Arc<Refused>,
}

/// A refusal this instance remembers.
#[derive(Clone, Copy)]
struct Remembered {
    /// Until then this instance answers without the database.
    answer_until: Timestamp,
    /// When the refusal ends: what `Retry-After` tells.
    ends: Timestamp,
}

/// Keys found over their limit lately.
#[derive(Default)]
struct Refused(Mutex<HashMap<String, Remembered>>);

impl Refused {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, Remembered>> {
        self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Refuses when any of `keys` was found over its limit lately, with
    /// the latest end among them.
    fn check(&self, keys: &[&str], now: Timestamp) -> Result<(), DomainError> {
        let map = self.lock();
        let ends = keys.iter().filter_map(|k| map.get(*k)).filter(|r| r.answer_until > now).map(|r| r.ends).max();
        match ends {
            Some(ends) => Err(DomainError::rate_limited(ends.since(now))),
            None => Ok(()),
        }
    }

    fn remember(&self, over: &[OverLimit], now: Timestamp) {
        let mut map = self.lock();
        for o in over {
            if map.len() < MAX_REFUSED_KEYS || map.contains_key(&o.key) {
                map.insert(o.key.clone(), Remembered { answer_until: now.plus(o.wait.min(REMEMBERED)), ends: now.plus(o.wait) });
            }
        }
    }

    fn forget<'a>(&self, keys: impl IntoIterator<Item = &'a str>) {
        let mut map = self.lock();
        for key in keys {
            map.remove(key);
        }
    }

    /// Drops refusals this instance no longer answers for.
    fn shrink(&self, now: Timestamp) {
        self.lock().retain(|_, r| r.answer_until > now);
    }
}

/// A key found over its limit inside a write unit, and how long until its
/// oldest failure leaves the window.
struct OverLimit {
    key: String,
    wait: Duration,
}

/// What one attempt is counted under: the keys its failure is recorded
/// for (those whose limit is on), and which of them judge it.
pub(super) struct Attempt {
    keys: Vec<Counted>,
}

#[derive(Clone)]
struct Counted {
    key: String,
    rate: Rate,
    /// Over its limit, this key refuses the attempt.
    judges: bool,
    /// A right password clears every failure of this key (the account's,
    /// or the device's: it was proven). Otherwise it takes back only the
    /// attempt's own failure: an address keeps those it made before,
    /// whoever signs in from it.
    cleared_by_success: bool,
}

/// The failures one attempt reserved, one per key, to keep or take back.
pub(super) struct Reservation {
    reserved: Vec<(Counted, LoginFailureId)>,
}

impl LoginFailures {
    pub(super) fn new(db: Database, per_email: Option<Rate>, per_address: Option<Rate>) -> Self {
        Self { db, per_email, per_address, refused: Arc::default() }
    }

    /// What an attempt for `email_key` from `client` is counted under:
    /// with a device mark, the mark's own failures judge it (at the
    /// email's rate); without, the email's and the address's do.
    pub(super) fn attempt(&self, email_key: &str, client: ClientKey, device: Option<&MarkedDevice>) -> Attempt {
        let email = email_failures_key(email_key);
        let address = address_failures_key(client);
        // (key, rate, judges, cleared by success)
        let keys = match device {
            None => vec![(email, self.per_email, true, true), (address, self.per_address, true, false)],
            Some(device) => vec![
                (device_failures_key(device), self.per_email, true, true),
                (email, self.per_email, false, false),
                (address, self.per_address, false, false),
            ],
        };
        let keys = keys
            .into_iter()
            .filter_map(|(key, rate, judges, cleared_by_success)| Some(Counted { key, rate: rate?, judges, cleared_by_success }))
            .collect();
        Attempt { keys }
    }

    /// Reserves a failure for each key of the attempt, or refuses it
    /// (with the time until a failure leaves the window) when a key that
    /// judges it already has its limit.
    pub(super) async fn reserve(&self, attempt: Attempt, now: Timestamp) -> Result<Reservation, DomainError> {
        let keys = attempt.keys;
        if keys.is_empty() {
            return Ok(Reservation { reserved: Vec::new() });
        }
        let judging: Vec<&str> = keys.iter().filter(|k| k.judges).map(|k| k.key.as_str()).collect();
        self.refused.check(&judging, now)?;
        let reserved = self
            .db
            .write(move |tx| {
                let all: Vec<&str> = keys.iter().map(|k| k.key.as_str()).collect();
                tx.lock_login_keys(&all)?;
                let mut over = Vec::new();
                for k in keys.iter().filter(|k| k.judges) {
                    over.extend(over_limit(tx, &k.key, k.rate, now)?);
                }
                if !over.is_empty() {
                    return Ok(Err(over));
                }
                let mut reserved = Vec::with_capacity(keys.len());
                for k in keys {
                    let id = tx.insert_login_failure(&k.key, now)?;
                    reserved.push((k, id));
                }
                Ok(Ok(reserved))
            })
            .await?;
        match reserved {
            Ok(reserved) => Ok(Reservation { reserved }),
            Err(over) => {
                self.refused.remember(&over, now);
                let wait = over.iter().map(|o| o.wait).max().unwrap_or_default();
                Err(DomainError::rate_limited(wait))
            }
        }
    }

    /// Drops refusals this instance no longer answers for.
    pub(super) fn shrink(&self, now: Timestamp) {
        self.refused.shrink(now);
    }

    /// The password was right: the proven key's failures are forgotten
    /// (the email's, or the device's), the attempt's own failure is taken
    /// back from the others, which keep those made before.
    pub(super) async fn succeeded(&self, r: Reservation) -> Result<(), DomainError> {
        if r.reserved.is_empty() {
            return Ok(());
        }
        let keys: Vec<String> = r.reserved.iter().map(|(k, _)| k.key.clone()).collect();
        self.db
            .write(move |tx| {
                for (k, id) in &r.reserved {
                    if k.cleared_by_success {
                        tx.clear_login_failures(&k.key)?;
                    } else {
                        tx.delete_login_failure(*id)?;
                    }
                }
                Ok(())
            })
            .await?;
        // A refusal another attempt met while this check ran no longer
        // holds for the cleared keys, and may not for the others.
        self.refused.forget(keys.iter().map(String::as_str));
        Ok(())
    }

    /// The check could not be made: the attempt counts for nothing.
    pub(super) async fn abandoned(&self, r: Reservation) -> Result<(), DomainError> {
        if r.reserved.is_empty() {
            return Ok(());
        }
        let keys: Vec<String> = r.reserved.iter().map(|(k, _)| k.key.clone()).collect();
        let ids: Vec<LoginFailureId> = r.reserved.iter().map(|(_, id)| *id).collect();
        self.db
            .write(move |tx| {
                for id in ids {
                    tx.delete_login_failure(id)?;
                }
                Ok(())
            })
            .await?;
        self.refused.forget(keys.iter().map(String::as_str));
        Ok(())
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
fn over_limit(tx: &mut dyn WriteTx, key: &str, rate: Rate, now: Timestamp) -> Result<Option<OverLimit>, DomainError> {
    let times = tx.login_failures(key, now.minus(rate.period), rate.count)?;
    Ok(limits::refusal(rate, times.len(), times.first().copied(), now).map(|wait| OverLimit { key: key.to_owned(), wait }))
}

fn email_failures_key(email_key: &str) -> String {
    format!("email:{email_key}")
}

fn address_failures_key(client: ClientKey) -> String {
    format!("address:{client}")
}

fn device_failures_key(device: &MarkedDevice) -> String {
    format!("device:{}", device.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn retry_after(r: Result<(), DomainError>) -> Option<u64> {
        match r {
            Err(DomainError::RateLimited { retry_after_secs }) => Some(retry_after_secs),
            _ => None,
        }
    }

    fn over(key: &str, secs: u64) -> OverLimit {
        OverLimit { key: key.to_owned(), wait: Duration::from_secs(secs) }
    }

    const T0: Timestamp = Timestamp::from_millis(1_000_000);

    #[test]
    fn a_remembered_refusal_answers_for_a_few_seconds_with_its_real_end() {
        let refused = Refused::default();
        refused.remember(&[over("email:a@b.c", 900)], T0);
        assert_eq!(retry_after(refused.check(&["email:a@b.c", "address:1.2.3.4"], T0)), Some(900));
        assert_eq!(retry_after(refused.check(&["address:1.2.3.4", "email:a@b.c"], T0.plus(Duration::from_secs(9)))), Some(891));
        assert_eq!(retry_after(refused.check(&["email:a@b.c", "x"], T0.plus(REMEMBERED))), None, "then the database answers");
        assert_eq!(retry_after(refused.check(&["email:other", "x"], T0)), None);
    }

    #[test]
    fn a_short_refusal_is_answered_only_until_it_ends() {
        let refused = Refused::default();
        refused.remember(&[over("a", 3)], T0);
        assert_eq!(retry_after(refused.check(&["a", "b"], T0.plus(Duration::from_secs(2)))), Some(1));
        assert_eq!(retry_after(refused.check(&["a", "b"], T0.plus(Duration::from_secs(4)))), None);
    }

    #[test]
    fn the_latest_end_is_told_and_shrinking_drops_what_is_no_longer_answered() {
        let refused = Refused::default();
        refused.remember(&[over("a", 3), over("b", 600)], T0);
        assert_eq!(retry_after(refused.check(&["a", "b"], T0)), Some(600));
        refused.shrink(T0.plus(Duration::from_secs(4)));
        assert_eq!(refused.lock().len(), 1, "a's refusal ended");
        refused.shrink(T0.plus(REMEMBERED));
        assert!(refused.lock().is_empty());
    }

    #[test]
    fn a_cleared_key_is_forgotten_at_once() {
        let refused = Refused::default();
        refused.remember(&[over("email:a@b.c", 900)], T0);
        refused.forget(["email:a@b.c", "address:1.2.3.4"]);
        assert_eq!(retry_after(refused.check(&["email:a@b.c", "address:1.2.3.4"], T0)), None);
    }

    #[test]
    fn past_its_bound_nothing_new_is_remembered_but_known_keys_are_renewed() {
        let refused = Refused::default();
        {
            let mut map = refused.lock();
            for n in 0..MAX_REFUSED_KEYS {
                map.insert(format!("k{n}"), Remembered { answer_until: T0, ends: T0 });
            }
        }
        refused.remember(&[over("new", 60), over("k1", 60)], T0);
        assert_eq!(retry_after(refused.check(&["new", "x"], T0)), None, "the database answers it");
        assert_eq!(retry_after(refused.check(&["k1", "x"], T0)), Some(60));
    }
}
