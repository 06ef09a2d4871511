//! Test events: an event of a chosen kind about made-up objects, so a
//! partner can check their receiver before real traffic reaches it.
//!
//! The envelope is built by the same functions as the real events of its
//! kind, so its shape is exactly what production sends; only the objects
//! are samples (id 0, which no record has, so a receiver that misses the
//! flag acts on nothing real), and the envelope says so with
//! `"test": true`.

use serde_json::Value;

use crate::clock::Timestamp;
use crate::error::DomainError;
use crate::events::{self, ClosedBy, EventKind, OutboxEvent};
use crate::model::*;
use crate::store::StoreError;
use crate::verification::Method;

/// The event of `kind` about sample objects, marked `"test": true`.
pub fn test_event(tenant: &Tenant, kind: EventKind, now: Timestamp) -> Result<OutboxEvent, DomainError> {
    let site = Site {
        id: SiteId(0),
        tenant_id: tenant.id,
        name: "Sample site".into(),
        domains: vec!["www.example.com".into()],
        appearance: WidgetAppearance::default(),
        created_at: now,
        settings: Default::default(),
    };
    let visitor = Visitor {
        id: VisitorId(0),
        tenant_id: tenant.id,
        site_id: site.id,
        uuid: "00000000-0000-4000-8000-000000000000".into(),
        profile: VisitorProfile {
            name: Some("Sample Visitor".into()),
            email: Some("visitor@example.com".into()),
            phone: None,
            last_url: Some("https://www.example.com/pricing".into()),
            locale: None,
        },
        verified_at: Some(now),
        verified_method: Some(Method::EmailOtp),
        verified_target: Some("visitor@example.com".into()),
        user_id: None,
        site_email: None,
        attributes: Default::default(),
        created_at: now,
        updated_at: now,
    };
    let conversation = Conversation {
        id: ConversationId(0),
        public_id: "c_test_00000000000000000000".into(),
        tenant_id: tenant.id,
        site_id: site.id,
        installation_id: InstallationId(0),
        visitor_id: visitor.id,
        status: if kind == EventKind::ConversationClosed { ConversationStatus::Closed } else { ConversationStatus::Unassigned },
        subject: Some("A test conversation".into()),
        assignee_id: None,
        created_at: now,
        last_message_at: now,
        closed_at: (kind == EventKind::ConversationClosed).then_some(now),
        verified_at: (kind == EventKind::VerificationCompleted).then_some(now),
    };
    let message = Message {
        id: MessageId(0),
        tenant_id: tenant.id,
        conversation_id: conversation.id,
        sender: Sender { kind: SenderKind::Visitor, name: Some("Sample Visitor".into()), operator_id: None },
        body: "Hello! This is a test message from Parley.".into(),
        internal: false,
        created_at: now,
        client_message_id: None,
        read_by_visitor_at: None,
        attachments: Vec::new(),
    };
    let event = match kind {
        EventKind::ConversationCreated => events::conversation_created(tenant, &conversation, &visitor, &message),
        EventKind::ConversationClosed => events::conversation_closed(tenant, &conversation, ClosedBy::Automation, now),
        EventKind::MessageCreated => events::message_created(tenant, &conversation, &message),
        EventKind::VerificationCompleted => events::verification_completed(tenant, &conversation, &visitor, Method::EmailOtp.as_str(), now),
        EventKind::InstallationHealthChanged => {
            let installation = Installation {
                id: InstallationId(0),
                tenant_id: tenant.id,
                site_id: site.id,
                token: String::new(),
                name: "Sample installation".into(),
                installation_type: "web".into(),
                enabled: true,
                heartbeat_status: InstallationStatus::Stale,
                last_seen_at: Some(now),
                widget_version: Some("1.0.0".into()),
                page_host: Some("www.example.com".into()),
                reported_type: None,
                created_at: now,
                identity: Default::default(),
            };
            events::installation_health_changed(tenant, &site, &installation, InstallationStatus::Healthy, now)
        }
        EventKind::ConversationUpdated => return Err(DomainError::invalid("event", "conversation.updated is not a webhook event")),
        EventKind::VisitorRead => return Err(DomainError::invalid("event", "conversation.read is not a webhook event")),
    };
    mark_test(event)
}

/// Adds `"test": true` to the envelope.
fn mark_test(mut event: OutboxEvent) -> Result<OutboxEvent, DomainError> {
    let broken = |e: String| DomainError::Store(StoreError::Internal(format!("a test event's envelope: {e}")));
    let mut envelope: Value = serde_json::from_str(&event.payload).map_err(|e| broken(e.to_string()))?;
    let Some(fields) = envelope.as_object_mut() else {
        return Err(broken("not an object".into()));
    };
    fields.insert("test".into(), Value::Bool(true));
    event.payload = envelope.to_string();
    Ok(event)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tenant() -> Tenant {
        Tenant { id: TenantId(7), slug: "acme".into(), name: "Acme".into(), created_at: Timestamp::from_millis(0) }
    }

    #[test]
    fn every_webhook_kind_has_a_test_event_marked_as_such() {
        for kind in EventKind::WEBHOOK {
            let event = test_event(&tenant(), kind, Timestamp::from_millis(1_000)).expect("sample");
            let body: Value = serde_json::from_str(&event.payload).expect("json");
            assert_eq!(body["test"], true);
            assert_eq!(body["event"], kind.as_str());
            assert_eq!(body["tenant_slug"], "acme");
            assert_eq!(body["event_id"], event.event_id.as_str());
            assert!(body["data"].is_object());
        }
    }

    #[test]
    fn the_feed_only_kind_has_none() {
        assert!(test_event(&tenant(), EventKind::ConversationUpdated, Timestamp::from_millis(0)).is_err());
    }
}
