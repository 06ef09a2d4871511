//! Outbound webhooks: endpoints, their signed deliveries and the rules of
//! retrying them.
//!
//! Events are written to the outbox in the transaction of their cause
//! (`events.rs`) and fanned out there and then to one delivery per
//! subscribed endpoint, so a crash loses none and a rolled-back change
//! emits none. The delivery worker (in `parley-worker`) claims due
//! deliveries with a lease, sends them, and records each attempt; what
//! happens after an attempt is decided here, in [`schedule`].

pub mod fairness;
pub mod sample;
pub mod schedule;
pub mod service;
pub mod signing;
pub mod target;

use std::time::Duration;

use crate::clock::Timestamp;
use crate::events::EventKind;
use crate::model::{DeliveryId, TenantId, WebhookId};

/// How long a rotated-out secret keeps signing next to the new one.
pub const ROTATION_OVERLAP: Duration = Duration::from_secs(24 * 3600);

#[derive(Clone, Debug)]
pub struct Webhook {
    pub id: WebhookId,
    pub tenant_id: TenantId,
    pub url: String,
    /// Subscribed kinds; `None` means every kind.
    pub events: Option<Vec<EventKind>>,
    pub secret: String,
    pub previous_secret: Option<String>,
    pub previous_secret_expires_at: Option<Timestamp>,
    pub enabled: bool,
    pub disabled_reason: Option<String>,
    pub created_at: Timestamp,
    /// Failed attempts in a row (see [`fairness`]).
    pub failure_streak: u32,
    /// No attempt is made before this time (circuit open).
    pub paused_until: Option<Timestamp>,
}

impl Webhook {
    /// The secrets that sign a delivery at `now`: the current one first,
    /// then the previous one during its overlap.
    pub fn signing_secrets(&self, now: Timestamp) -> Vec<&str> {
        let mut secrets = vec![self.secret.as_str()];
        if let (Some(old), Some(until)) = (&self.previous_secret, self.previous_secret_expires_at)
            && now < until
        {
            secrets.push(old);
        }
        secrets
    }
}

#[derive(Clone, Debug)]
pub struct NewWebhook {
    pub url: String,
    pub events: Option<Vec<EventKind>>,
    pub secret: String,
    pub created_at: Timestamp,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeliveryStatus {
    Pending,
    Delivered,
    Failed,
}

impl DeliveryStatus {
    pub const ALL: [DeliveryStatus; 3] = [DeliveryStatus::Pending, DeliveryStatus::Delivered, DeliveryStatus::Failed];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Delivered => "delivered",
            Self::Failed => "failed",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "pending" => Some(Self::Pending),
            "delivered" => Some(Self::Delivered),
            "failed" => Some(Self::Failed),
            _ => None,
        }
    }
}

/// One try at delivering, as the tenant admin sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Attempt {
    pub attempted_at: Timestamp,
    pub duration_ms: u64,
    /// `None` when no response came (timeout, refused connection, …).
    pub status_code: Option<u16>,
    pub error: Option<String>,
}

/// One event for one endpoint, with its attempts so far.
#[derive(Clone, Debug)]
pub struct Delivery {
    pub id: DeliveryId,
    pub endpoint_id: WebhookId,
    pub event_id: String,
    pub kind: EventKind,
    pub status: DeliveryStatus,
    pub next_attempt_at: Option<Timestamp>,
    pub last_error: Option<String>,
    pub created_at: Timestamp,
    pub finished_at: Option<Timestamp>,
    pub attempts: Vec<Attempt>,
}

/// A delivery a worker has leased, with everything needed to send it.
#[derive(Clone, Debug)]
pub struct ClaimedDelivery {
    pub delivery_id: DeliveryId,
    pub tenant_id: TenantId,
    /// Attempts made before this one.
    pub attempts: u32,
    pub webhook: Webhook,
    pub event_id: String,
    pub kind: EventKind,
    /// The envelope, byte for byte as it was recorded.
    pub payload: String,
}

/// What to do with a delivery after an attempt.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NextStep {
    Delivered,
    RetryAt(Timestamp),
    /// Out of retries.
    Failed,
    /// The endpoint answered 410 Gone: stop sending it anything.
    DisableEndpoint,
}

/// An attempt and its consequence, recorded in one write.
#[derive(Clone, Debug)]
pub struct AttemptRecord {
    pub delivery_id: DeliveryId,
    pub tenant_id: TenantId,
    pub endpoint_id: WebhookId,
    pub attempt: Attempt,
    pub next: NextStep,
}
