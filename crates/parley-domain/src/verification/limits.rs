//! Abuse limits on starting a verification.
//!
//! Per conversation, per tenant and per phone number they are counted from
//! the challenges table itself, inside the write that would create the next
//! challenge: they hold across restarts and instances, and two parallel
//! starts cannot both slip under a limit. Per client address they are kept
//! in memory, like the other rate limits.

use std::time::Duration;

use super::{ChallengeCount, Method};
use crate::clock::Timestamp;
use crate::error::DomainError;
use crate::limits::Rate;
use crate::model::ConversationId;
use crate::model::TenantId;
use crate::store::WriteTx;

#[derive(Clone, Debug)]
pub struct VerificationLimits {
    /// Starts per conversation: at most one per 30 s and 5 per hour.
    pub per_conversation: Vec<Rate>,
    pub per_address: Option<Rate>,
    pub per_tenant: Option<Rate>,
    /// SMS per phone number (3 per 10 minutes by default).
    pub sms_per_number: Option<Rate>,
    /// SMS per tenant per day.
    pub sms_daily_budget: Option<u32>,
    /// Emails (codes and links) per recipient address (5 per hour by
    /// default), so nobody can flood an inbox from a tenant's sender.
    pub email_per_recipient: Option<Rate>,
    /// Test messages an admin sends to check a channel, per tenant (10 an
    /// hour by default): each is a real email or SMS to any address.
    pub test_sends_per_tenant: Option<Rate>,
}

impl VerificationLimits {
    pub fn defaults() -> Self {
        Self {
            per_conversation: vec![
                Rate { count: 1, period: Duration::from_secs(30) },
                Rate { count: 5, period: Duration::from_secs(3600) },
            ],
            per_address: Some(Rate { count: 20, period: Duration::from_secs(3600) }),
            per_tenant: Some(Rate { count: 1000, period: Duration::from_secs(3600) }),
            sms_per_number: Some(Rate { count: 3, period: Duration::from_secs(600) }),
            sms_daily_budget: Some(1000),
            email_per_recipient: Some(Rate { count: 5, period: Duration::from_secs(3600) }),
            test_sends_per_tenant: Some(Rate { count: 10, period: Duration::from_secs(3600) }),
        }
    }

    pub fn off() -> Self {
        Self {
            per_conversation: Vec::new(),
            per_address: None,
            per_tenant: None,
            sms_per_number: None,
            sms_daily_budget: None,
            email_per_recipient: None,
            test_sends_per_tenant: None,
        }
    }

    /// Refuses a start that would break a limit counted in storage.
    pub(super) fn check(
        &self,
        tx: &mut dyn WriteTx,
        tenant: TenantId,
        conversation: ConversationId,
        method: Method,
        target: &str,
        now: Timestamp,
    ) -> Result<(), DomainError> {
        let mut checks: Vec<(ChallengeCount, Rate)> =
            self.per_conversation.iter().map(|r| (ChallengeCount::Conversation(conversation), *r)).collect();
        if let Some(r) = self.per_tenant {
            checks.push((ChallengeCount::Tenant, r));
        }
        if method.uses_phone() {
            if let Some(r) = self.sms_per_number {
                checks.push((ChallengeCount::Phone(target.to_owned()), r));
            }
            if let Some(budget) = self.sms_daily_budget {
                checks.push((ChallengeCount::TenantSms, Rate { count: budget, period: Duration::from_secs(86_400) }));
            }
        } else if let Some(r) = self.email_per_recipient {
            // The same mailbox however its address is capitalised.
            checks.push((ChallengeCount::Email(crate::validate::email_key(target)), r));
        }
        for (count, rate) in checks {
            let since = now.minus(rate.period);
            let times = tx.challenge_times(tenant, &count, since, rate.count)?;
            within(&times, rate, now)?;
        }
        Ok(())
    }
}

/// `times` are the newest first, all within the window.
pub(super) fn within(times: &[Timestamp], rate: Rate, now: Timestamp) -> Result<(), DomainError> {
    match times.get(rate.count as usize - 1) {
        Some(oldest_counted) => Err(DomainError::rate_limited(rate.period.saturating_sub(now.since(*oldest_counted)))),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_nth_newest_start_decides() {
        let rate = Rate { count: 2, period: Duration::from_secs(600) };
        let now = Timestamp::from_millis(1_000_000);
        assert!(within(&[now.minus(Duration::from_secs(10))], rate, now).is_ok());
        let times = [now.minus(Duration::from_secs(10)), now.minus(Duration::from_secs(100))];
        match within(&times, rate, now) {
            Err(DomainError::RateLimited { retry_after_secs }) => assert_eq!(retry_after_secs, 500),
            other => panic!("{other:?}"),
        }
    }
}
