//! The channels as a tenant admin sees them: which are configured, which
//! methods the widget offers, and a test message to check one.
//!
//! Channels are the service's (`PARLEY_SMTP_URL`, `PARLEY_SMS_GATEWAY_URL`),
//! shared by every tenant; an admin can look, not change.

use super::Method;
use super::TestCount;
use super::channels::{Channel, Provider, SendError};
use super::limits::within;
use super::messages;
use super::service::VerificationService;
use crate::admin::require_admin;
use crate::clock::Timestamp;
use crate::error::DomainError;
use crate::limits::Rate;
use crate::model::Session;

/// One channel as admins see it.
#[derive(Clone, Debug)]
pub struct ChannelState {
    pub channel: Channel,
    /// `None`: not configured, its methods are not offered.
    pub provider: Option<Provider>,
    pub methods: Vec<Method>,
}

/// A test message that the channel's provider accepted.
#[derive(Clone, Debug)]
pub struct TestSent {
    pub channel: Channel,
    pub provider: Provider,
    pub to: String,
    pub sent_at: Timestamp,
}

impl VerificationService {
    pub fn channel_states(&self, session: &Session) -> Result<Vec<ChannelState>, DomainError> {
        require_admin(session)?;
        Ok(Channel::ALL
            .into_iter()
            .map(|channel| ChannelState { channel, provider: self.channels.provider(channel), methods: channel.methods() })
            .collect())
    }

    /// Sends a test message through `channel` to `to` (already checked as
    /// an email address or an E.164 number). Counted before sending, in
    /// the database like challenges (so across restarts and instances):
    /// per tenant, and per recipient at the rate that recipient's
    /// verification messages have. A failed send counts too, since it
    /// reached the provider.
    pub async fn send_test(&self, session: &Session, channel: Channel, to: String) -> Result<TestSent, DomainError> {
        let tenant = require_admin(session)?;
        let Some(provider) = self.channels.provider(channel) else {
            return Err(DomainError::Conflict(match channel {
                Channel::Email => "no email channel is configured on this service",
                Channel::Sms => "no SMS channel is configured on this service",
            }));
        };
        let now = self.clock.now();
        let recipient = match channel {
            Channel::Email => crate::validate::email_key(&to),
            Channel::Sms => to.clone(),
        };
        let per_recipient = match channel {
            Channel::Email => self.limits.email_per_recipient,
            Channel::Sms => self.limits.sms_per_number,
        };
        let checks: Vec<(TestCount, Rate)> = [
            self.limits.test_sends_per_tenant.map(|r| (TestCount::Tenant, r)),
            per_recipient.map(|r| (TestCount::Recipient(recipient.clone()), r)),
        ]
        .into_iter()
        .flatten()
        .collect();
        self.db
            .write(move |tx| {
                for (count, rate) in &checks {
                    let times = tx.test_send_times(tenant, count, now.minus(rate.period), rate.count)?;
                    within(&times, *rate, now)?;
                }
                Ok(tx.insert_test_send(tenant, channel, &recipient, now)?)
            })
            .await?;
        let name = &session.tenant.name;
        let sent = match channel {
            Channel::Email => match &self.channels.email {
                Some(mailer) => mailer.send(tenant, messages::test_email(&to, name)).await,
                None => Err(SendError::transient("no email channel")),
            },
            Channel::Sms => match &self.channels.sms {
                Some(gateway) => gateway.send(tenant, messages::test_sms(&to, name)).await,
                None => Err(SendError::transient("no SMS channel")),
            },
        };
        if let Err(reason) = sent {
            // The reason may name the service's own infrastructure: it is
            // for the service's operators, not the tenant's admins.
            tracing::warn!(tenant = tenant.0, channel = channel.as_str(), %reason, "a test message could not be sent");
            let transient = "the test message could not be sent; the service's logs say why";
            return Err(super::service::not_sent(&reason, "to", channel == Channel::Sms, transient));
        }
        Ok(TestSent { channel, provider, to, sent_at: now })
    }
}
