//! Failed sign-ins, counted in the database.
//!
//! These limits protect accounts, so they must hold however many
//! instances share the database: a count kept in each process would let
//! an attacker who spreads attempts over N instances try N times as many
//! passwords. Each attempt reserves a failure for its email and for its
//! client address before the password is checked, inside one write unit
//! that holds both keys until its commit (`LoginsWrite::lock_login_keys`),
//! so parallel attempts on any instances cannot all slip under a limit. A right password takes its
//! reservations back; a wrong one leaves them as failures.

use crate::clock::Timestamp;
use crate::error::DomainError;
use crate::limits::{ClientKey, Rate};
use crate::model::LoginFailureId;
use crate::store::{Database, WriteTx};

/// Failures removed per write unit when old ones are pruned.
const PRUNE_BATCH: u32 = 1000;

#[derive(Clone)]
pub(super) struct LoginFailures {
    db: Database,
    per_email: Option<Rate>,
    per_address: Option<Rate>,
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
        Self { db, per_email, per_address }
    }

    /// Reserves a failure for the email and the address, or refuses the
    /// attempt (with the time until a failure leaves the window) when
    /// either already has its limit.
    pub(super) async fn reserve(&self, email_key: &str, client: ClientKey, now: Timestamp) -> Result<Reservation, DomainError> {
        let (per_email, per_address) = (self.per_email, self.per_address);
        let keys = (email_failures_key(email_key), address_failures_key(client));
        let email_key = keys.0.clone();
        let (email, address) = if per_email.is_none() && per_address.is_none() {
            (None, None)
        } else {
            self.db
                .write(move |tx| {
                    tx.lock_login_keys(&[&keys.0, &keys.1])?;
                    check(tx, &keys.0, per_email, now)?;
                    check(tx, &keys.1, per_address, now)?;
                    let email = per_email.map(|_| tx.insert_login_failure(&keys.0, now)).transpose()?;
                    let address = per_address.map(|_| tx.insert_login_failure(&keys.1, now)).transpose()?;
                    Ok((email, address))
                })
                .await?
        };
        Ok(Reservation { email_key, email, address })
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

/// Refuses when `key` has `rate.count` failures within the window.
fn check(tx: &mut dyn WriteTx, key: &str, rate: Option<Rate>, now: Timestamp) -> Result<(), DomainError> {
    let Some(rate) = rate else { return Ok(()) };
    let times = tx.login_failures(key, now.minus(rate.period), rate.count)?;
    match times.first() {
        Some(oldest) if times.len() >= rate.count as usize => {
            Err(DomainError::rate_limited(rate.period.saturating_sub(now.since(*oldest))))
        }
        _ => Ok(()),
    }
}

fn email_failures_key(email_key: &str) -> String {
    format!("email:{email_key}")
}

fn address_failures_key(client: ClientKey) -> String {
    format!("address:{client}")
}
