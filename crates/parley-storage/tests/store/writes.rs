//! What a message and a feed entry write besides themselves, on the
//! backend under test. PostgreSQL carries a message's summary in its
//! insert and an entry's fan-out in the entry's (`Dialect::chains_writes`),
//! SQLite runs them as statements of their own: these hold both forms to
//! the same rules.

use std::time::Duration;

use parley_domain::Timestamp;
use parley_domain::events::{EventKind, OutboxEvent};
use parley_domain::feed::FeedEntry;
use parley_domain::model::*;
use parley_domain::webhooks::NewWebhook;

use crate::harness::*;

/// The conversation's latest line, last activity and the visitor's wait.
type Summary = (Option<String>, Timestamp, Option<Timestamp>);

/// A conversation's summary follows the messages both sides see: the
/// latest line (its first `LAST_MESSAGE_CHARS` characters, not bytes) and
/// its time; the visitor waits from the first unanswered message until an
/// operator answers. Notes and system lines change none of it.
#[tokio::test]
async fn a_message_summarizes_its_conversation_by_the_same_rules_on_every_backend() {
    let app = TestStore::new().await;
    let f = app.fixture("acme", &[]).await;
    let other = app.fixture("globex", &[]).await;
    let site = f.scope;
    let at = |minutes: u64| START.plus(Duration::from_secs(60 * minutes));
    let (c, elsewhere) = app
        .db
        .write(move |tx| Ok((open_conversation(tx, site, "v1", "Where is my order?")?, open_conversation(tx, other.scope, "v2", "Hi")?)))
        .await
        .expect("conversations");
    let summary = {
        let db = app.db.clone();
        move |id: ConversationId| {
            let db = db.clone();
            async move {
                db.read(move |r| {
                    let d = r.conversation_details(site.into(), id)?.expect("in scope");
                    Ok::<Summary, parley_domain::DomainError>((d.last_message, d.conversation.last_message_at, d.waiting_since))
                })
                .await
                .expect("details")
            }
        }
    };
    let add = |sender: SenderKind, body: String, internal: bool, created_at: Timestamp| {
        let db = app.db.clone();
        async move {
            let new = NewMessage {
                conversation_id: c.id,
                sender: Sender { kind: sender, name: None, operator_id: None },
                body,
                internal,
                created_at,
                client_message_id: None,
                attachment_ids: Vec::new(),
            };
            db.write(move |tx| Ok(tx.insert_message(site.into(), &new, &[])?)).await.expect("message added")
        }
    };
    let asked: Summary = (Some("Where is my order?".into()), START, Some(START));
    assert_eq!(summary(c.id).await, asked);

    add(SenderKind::Operator, "a note for the team".into(), true, at(1)).await;
    add(SenderKind::System, "Conversation assigned".into(), false, at(2)).await;
    assert_eq!(summary(c.id).await, asked, "a note and a system line change nothing");

    let long = "é".repeat(LAST_MESSAGE_CHARS + 100);
    add(SenderKind::Visitor, long, false, at(3)).await;
    let (line, last, waiting) = summary(c.id).await;
    assert_eq!(line, Some("é".repeat(LAST_MESSAGE_CHARS)), "the first characters of the latest line");
    assert_eq!((last, waiting), (at(3), Some(START)), "still waiting since the first question");

    add(SenderKind::Operator, "On its way!".into(), false, at(4)).await;
    assert_eq!(summary(c.id).await, (Some("On its way!".into()), at(4), None), "answered");

    add(SenderKind::Visitor, "Thanks!".into(), false, at(5)).await;
    assert_eq!(summary(c.id).await, (Some("Thanks!".into()), at(5), Some(at(5))), "waiting again");

    // A message for another tenant's conversation, in this tenant's
    // scope, is refused and leaves that conversation's summary as it was,
    // even in a unit that goes on to commit.
    let other_summary = |db: parley_domain::Database| async move {
        db.read(move |r| {
            let d = r.conversation_details(other.scope.into(), elsewhere.id)?.expect("in its own scope");
            Ok::<Summary, parley_domain::DomainError>((d.last_message, d.conversation.last_message_at, d.waiting_since))
        })
        .await
        .expect("details")
    };
    let before = other_summary(app.db.clone()).await;
    let refused = app
        .db
        .write(move |tx| {
            let mut new = visitor_message(elsewhere.id, "Not yours");
            new.created_at = at(6);
            Ok(tx.insert_message(site.into(), &new, &[]).is_err())
        })
        .await
        .expect("the unit commits");
    assert!(refused, "a conversation out of scope takes no message");
    assert_eq!(other_summary(app.db.clone()).await, before, "another tenant's conversation keeps its summary");
}

/// An entry partners get becomes one delivery per endpoint of its tenant
/// subscribed to its kind, and wakes the delivery worker; an entry for
/// the feed alone becomes none.
#[tokio::test]
async fn an_entry_is_delivered_to_the_endpoints_subscribed_to_its_kind() {
    let app = TestStore::new().await;
    let f = app.fixture("acme", &[]).await;
    let other = app.fixture("globex", &[]).await;
    let endpoint = |tenant: TenantId, name: &str, events: Option<Vec<EventKind>>| {
        let db = app.db.clone();
        let new = NewWebhook { url: format!("https://{name}.example.com/"), events, secret: format!("whsec_{name}"), created_at: START };
        async move { db.write(move |tx| Ok(tx.insert_webhook(tenant, &new)?.id)).await.expect("endpoint") }
    };
    let every = endpoint(f.scope.tenant, "every", None).await;
    let closed_only = endpoint(f.scope.tenant, "closed", Some(vec![EventKind::ConversationClosed])).await;
    let messages_only = endpoint(f.scope.tenant, "messages", Some(vec![EventKind::MessageCreated])).await;
    let theirs = endpoint(other.scope.tenant, "theirs", None).await;
    let site = f.scope;
    let entry = |id: &str, c: &Conversation, webhook: bool| FeedEntry {
        event: OutboxEvent { event_id: id.into(), kind: EventKind::MessageCreated, occurred_at: START, payload: "{}".into() },
        conversation: Some((c.id, c.site_id)),
        message: None,
        widget: true,
        webhook,
    };
    // The worker is woken once a unit that added deliveries commits,
    // before its caller hears back, and not by a unit that added none.
    let wake = app.db.deliveries_signal();
    let woken = || tokio::time::timeout(Duration::ZERO, wake.notified());
    while woken().await.is_ok() {}
    let c = app
        .db
        .write(move |tx| {
            let c = open_conversation(tx, site, "v1", "Hello")?;
            tx.append_event(site.tenant, &entry("evt_feed_only", &c, false))?;
            Ok(c)
        })
        .await
        .expect("an entry for the feed alone");
    assert!(woken().await.is_err(), "no delivery, no wake");
    app.db.write(move |tx| Ok(tx.append_event(site.tenant, &entry("evt_partners", &c, true))?)).await.expect("an entry for partners");
    assert!(woken().await.is_ok(), "the worker is woken for the deliveries");
    let tenant = site.tenant;
    let counts = app
        .db
        .read(move |r| {
            let mut counts = Vec::new();
            for (t, endpoint) in [(tenant, every), (tenant, closed_only), (tenant, messages_only), (other.scope.tenant, theirs)] {
                counts.push(r.deliveries(t, endpoint, 0, 10)?.len());
            }
            Ok::<_, parley_domain::DomainError>(counts)
        })
        .await
        .expect("deliveries");
    assert_eq!(counts, [1, 0, 1, 0], "every kind, another kind, this kind, another tenant");
}
