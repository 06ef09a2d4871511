//! Webhook events as the outbox stores them.
//!
//! The envelope is rendered when the event happens, inside the transaction
//! of its cause, so every delivery of one event carries the same body and a
//! retry next week shows the conversation as it was, not as it is.

use serde_json::{Value, json};

use crate::clock::Timestamp;
use crate::ids;
use crate::model::{Conversation, Installation, InstallationStatus, Message, Operator, Site, Tenant, Visitor};

/// Envelope `version` of every event this build emits.
pub const ENVELOPE_VERSION: &str = "1";

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EventKind {
    ConversationCreated,
    ConversationClosed,
    MessageCreated,
    InstallationHealthChanged,
    VerificationCompleted,
    /// A conversation's status or assignee changed in a way no webhook
    /// kind names (taken, assigned, reopened): the feed's alone.
    ConversationUpdated,
    /// The visitor read operator messages (up to the entry's message):
    /// operators' streams show it as a `conversation.updated` with that
    /// message and its receipt. The feed's alone.
    VisitorRead,
}

impl EventKind {
    /// The kinds partners subscribe to and receive as webhooks.
    pub const WEBHOOK: [EventKind; 5] = [
        Self::ConversationCreated,
        Self::ConversationClosed,
        Self::MessageCreated,
        Self::InstallationHealthChanged,
        Self::VerificationCompleted,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::ConversationCreated => "conversation.created",
            Self::ConversationClosed => "conversation.closed",
            Self::MessageCreated => "message.created",
            Self::InstallationHealthChanged => "installation.health.changed",
            Self::VerificationCompleted => "verification.completed",
            Self::ConversationUpdated => "conversation.updated",
            Self::VisitorRead => "conversation.read",
        }
    }

    /// One kind for each name a live stream uses (see `stream_name`).
    pub const STREAM: [EventKind; 3] = [Self::ConversationCreated, Self::ConversationUpdated, Self::MessageCreated];

    /// Any kind the feed holds.
    pub fn parse(s: &str) -> Option<Self> {
        Self::WEBHOOK.into_iter().chain([Self::ConversationUpdated, Self::VisitorRead]).find(|k| k.as_str() == s)
    }

    /// A kind partners may subscribe to.
    pub fn parse_webhook(s: &str) -> Option<Self> {
        Self::WEBHOOK.into_iter().find(|k| k.as_str() == s)
    }

    /// The kind a live stream names this entry by: every change of a
    /// conversation's state is one `conversation.updated` to clients.
    pub fn stream_name(self) -> &'static str {
        match self {
            Self::ConversationCreated => "conversation.created",
            Self::MessageCreated => "message.created",
            _ => "conversation.updated",
        }
    }
}

/// One event, ready for the outbox.
#[derive(Clone, Debug)]
pub struct OutboxEvent {
    pub event_id: String,
    pub kind: EventKind,
    pub occurred_at: Timestamp,
    /// The complete JSON envelope, byte for byte what partners receive.
    pub payload: String,
}

fn envelope(tenant: &Tenant, kind: EventKind, occurred_at: Timestamp, data: Value) -> OutboxEvent {
    let event_id = ids::event_id();
    let payload = json!({
        "event_id": event_id,
        "event": kind.as_str(),
        "version": ENVELOPE_VERSION,
        "occurred_at": occurred_at,
        "tenant_slug": tenant.slug,
        "data": data,
    })
    .to_string();
    OutboxEvent { event_id, kind, occurred_at, payload }
}

fn conversation_data(c: &Conversation) -> Value {
    json!({
        "id": c.id,
        "public_id": c.public_id,
        "status": c.status.as_str(),
        "subject": c.subject,
        "site_id": c.site_id,
        "assignee_id": c.assignee_id,
        "verified": c.verified_at.is_some(),
        "created_at": c.created_at,
        "last_message_at": c.last_message_at,
    })
}

fn message_data(m: &Message) -> Value {
    json!({
        "id": m.id,
        "conversation_id": m.conversation_id,
        "body": m.body,
        "created_at": m.created_at,
        "sender": { "type": m.sender.kind.as_str(), "name": m.sender.name },
        // Each gets its `url` (and a picture its `thumbnail_url`) when it
        // is sent: links expire, a delivery may be retried for days.
        "attachments": m.attachments,
    })
}

/// The visitor with what a verification proved: the `name` never is, the
/// `email` and `phone` only when their flag says so.
fn visitor_data(v: &Visitor) -> Value {
    let proof = v.proof();
    json!({
        "uuid": v.uuid,
        "name": v.profile.name,
        "email": v.profile.email,
        "phone": v.profile.phone,
        "verified": proof.is_some(),
        "verified_method": proof.as_ref().map(|p| p.method.as_str()),
        "verified_target": proof.as_ref().map(|p| p.target.as_str()),
        "email_verified": proof.as_ref().is_some_and(|p| p.email),
        "phone_verified": proof.as_ref().is_some_and(|p| p.phone),
    })
}

pub fn conversation_created(tenant: &Tenant, c: &Conversation, visitor: &Visitor, first: &Message) -> OutboxEvent {
    let data = json!({
        "conversation": conversation_data(c),
        "visitor": visitor_data(visitor),
        "message": message_data(first),
    });
    envelope(tenant, EventKind::ConversationCreated, c.created_at, data)
}

pub fn message_created(tenant: &Tenant, c: &Conversation, m: &Message) -> OutboxEvent {
    let data = json!({ "conversation": conversation_data(c), "message": message_data(m) });
    envelope(tenant, EventKind::MessageCreated, m.created_at, data)
}

pub fn installation_health_changed(
    tenant: &Tenant,
    site: &Site,
    installation: &Installation,
    previous: InstallationStatus,
    at: Timestamp,
) -> OutboxEvent {
    let data = json!({
        "installation": {
            "id": installation.id,
            "name": installation.name,
            "site_id": site.id,
            "site_name": site.name,
            "last_seen_at": installation.last_seen_at,
            "widget_version": installation.widget_version,
        },
        "previous_status": previous.as_str(),
        "status": installation.status().as_str(),
    });
    envelope(tenant, EventKind::InstallationHealthChanged, at, data)
}

/// Who closed a conversation.
pub enum ClosedBy<'a> {
    Operator(&'a Operator),
    Automation,
}

/// The visitor read the operator messages up to `through`.
pub(crate) fn visitor_read(tenant: &Tenant, c: &Conversation, through: crate::model::MessageId, at: Timestamp) -> OutboxEvent {
    let data = json!({ "conversation": conversation_data(c), "read_through": through.0 });
    envelope(tenant, EventKind::VisitorRead, at, data)
}

/// A change of status, assignee or verification that only the feed
/// carries: partners get no webhook of this kind.
pub(crate) fn conversation_updated(tenant: &Tenant, c: &Conversation, at: crate::clock::Timestamp) -> OutboxEvent {
    envelope(tenant, EventKind::ConversationUpdated, at, json!({ "conversation": conversation_data(c) }))
}

pub fn conversation_closed(tenant: &Tenant, c: &Conversation, by: ClosedBy<'_>, at: crate::clock::Timestamp) -> OutboxEvent {
    let data = match by {
        ClosedBy::Operator(op) => json!({
            "conversation": conversation_data(c),
            "closed_by": "operator",
            "operator": {"id": op.id, "name": op.name},
        }),
        ClosedBy::Automation => {
            json!({ "conversation": conversation_data(c), "closed_by": "automation" })
        }
    };
    envelope(tenant, EventKind::ConversationClosed, at, data)
}

pub fn verification_completed(
    tenant: &Tenant,
    c: &Conversation,
    visitor: &Visitor,
    method: &str,
    at: crate::clock::Timestamp,
) -> OutboxEvent {
    let data = json!({ "conversation": conversation_data(c), "visitor": visitor_data(visitor), "method": method });
    envelope(tenant, EventKind::VerificationCompleted, at, data)
}
