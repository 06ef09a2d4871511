//! Operator pushes: who is told of what, what a push says, and what
//! happens after an attempt. The worker that sends them, and the
//! providers' protocols, live in `parley-worker`.
//!
//! A push is queued in the transaction of the change that causes it (see
//! `feed::record`), one row per device and conversation: a burst in one
//! conversation collapses into that row, the latest reason winning, and
//! a device hears about one conversation at most once per [`SPACING`].

pub mod fairness;
mod payload;
pub mod schedule;

use std::time::Duration;

pub use payload::{Notification, PushContent};

use crate::clock::Timestamp;
use crate::model::{ConversationId, ConversationScope, DeviceId, MessageId, OperatorId, Platform, PushId, Role, TenantId, WebPushKeys};

/// The shortest time between two pushes to one device about one
/// conversation: the latest change waits and is sent alone.
pub const SPACING: Duration = Duration::from_secs(10);

/// Why an operator is pushed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PushReason {
    /// A visitor opened a conversation.
    Conversation,
    /// A visitor wrote in a conversation.
    Message,
    /// The conversation was assigned or transferred to the operator.
    Assigned,
}

impl PushReason {
    pub const ALL: [PushReason; 3] = [PushReason::Conversation, PushReason::Message, PushReason::Assigned];

    pub fn as_str(self) -> &'static str {
        match self {
            PushReason::Conversation => "conversation",
            PushReason::Message => "message",
            PushReason::Assigned => "assigned",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|r| r.as_str() == s)
    }
}

/// A push to queue for the devices of every operator who is to hear of a
/// change: `recipient` alone when set (an assignee), otherwise every
/// active operator who can see the conversation; never `actor`, whose own
/// action it was. Only sign-ins that still hold are pushed to.
#[derive(Clone, Copy, Debug)]
pub struct QueuedPush {
    pub tenant: TenantId,
    pub conversation: ConversationId,
    pub message: Option<MessageId>,
    pub reason: PushReason,
    pub recipient: Option<OperatorId>,
    pub actor: Option<OperatorId>,
    pub at: Timestamp,
}

/// A due push, as a claim sees it before leasing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DuePush {
    pub id: PushId,
    pub tenant_id: TenantId,
}

/// Where a push goes: the device's provider and token.
#[derive(Clone, Debug)]
pub struct PushTarget {
    pub device_id: DeviceId,
    pub platform: Platform,
    /// APNs' device token, FCM's registration token or a browser's
    /// endpoint. Never logged.
    pub token: String,
    pub web_keys: Option<WebPushKeys>,
    pub app_id: Option<String>,
    pub locale: Option<String>,
    /// A push to it has gone through before: a token refused now has gone
    /// bad, where one never accepted may be a setting's mistake.
    pub pushed_before: bool,
}

/// A push leased to this worker, with what it is to say.
#[derive(Clone, Debug)]
pub struct ClaimedPush {
    pub id: PushId,
    pub tenant_id: TenantId,
    pub operator_id: OperatorId,
    /// The operator's role: what its badge is counted in.
    pub operator_role: Role,
    pub conversation_id: ConversationId,
    /// Which version of the row was claimed: a change that collapses into
    /// it while it is out leaves it pending after this send.
    pub revision: i64,
    /// Failed attempts so far.
    pub attempts: u32,
    pub reason: PushReason,
    pub target: PushTarget,
    /// The visitor's name and the message, for full payloads.
    pub visitor_name: Option<String>,
    pub message: Option<String>,
    /// The operator's open conversations with unread visitor messages
    /// (`unread_conversations`), counted by the worker once per operator
    /// of a claim, on a reader.
    pub badge: u64,
    /// The operator has unread visitor messages in this conversation: a
    /// message or conversation push read meanwhile (on another device) is
    /// not sent.
    pub unread_here: bool,
    /// The push still stands as queued: the device is still the
    /// operator's, its sign-in and the operator still active, and the
    /// conversation still one it sees and is to hear of (see the storage
    /// statement that reads it).
    pub live: bool,
    /// The lease this worker holds: what it records applies only while it
    /// still does.
    pub leased_until: crate::clock::Timestamp,
}

impl ClaimedPush {
    /// What the operator sees: its badge's scope.
    pub fn operator_scope(&self) -> ConversationScope {
        ConversationScope { tenant: self.tenant_id, site: None, operator: Some((self.operator_id, self.operator_role)) }
    }

    /// Whether there is still something to tell: the operator may have
    /// signed out or read the conversation since it was queued.
    pub fn worth_sending(&self) -> bool {
        self.live && (self.reason == PushReason::Assigned || self.unread_here)
    }
}

/// How a provider answered one push.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PushOutcome {
    Delivered,
    /// Worth trying again (no answer, 429, 5xx), after the provider's
    /// `Retry-After` when it gave one.
    Retry {
        after: Option<Duration>,
        reason: String,
    },
    /// The token is dead (uninstalled app, expired subscription): the
    /// device goes.
    DeadToken {
        reason: String,
    },
    /// Refused for good (a malformed request, credentials the provider
    /// does not accept): not retried.
    Rejected {
        reason: String,
    },
}

impl PushOutcome {
    /// For logs and metrics.
    pub fn label(&self) -> &'static str {
        match self {
            PushOutcome::Delivered => "delivered",
            PushOutcome::Retry { .. } => "retry",
            PushOutcome::DeadToken { .. } => "dead_token",
            PushOutcome::Rejected { .. } => "rejected",
        }
    }
}
