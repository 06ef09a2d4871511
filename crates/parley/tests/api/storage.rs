//! The storage interface driven directly: batching, isolation of failing
//! units, and scoping.

use parley_domain::DomainError;
use parley_domain::model::NewTenant;

use crate::helpers::*;

/// Many units submitted at once share commits; a failing unit rolls back
/// alone and the others are kept.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_failing_unit_in_a_batch_rolls_back_alone() {
    let app = TestApp::spawn().await;
    let mut handles = Vec::new();
    for n in 0..200 {
        let db = app.db.clone();
        handles.push(tokio::spawn(async move {
            db.write(move |tx| {
                tx.insert_tenant(&NewTenant { slug: format!("t{n}"), name: "n".into(), created_at: START })?;
                if n % 3 == 0 { Err(DomainError::Conflict("refused on purpose")) } else { Ok(()) }
            })
            .await
        }));
    }
    let mut kept = 0;
    for (n, h) in handles.into_iter().enumerate() {
        let result = h.await.unwrap();
        assert_eq!(result.is_ok(), n % 3 != 0, "unit {n}");
        kept += usize::from(result.is_ok());
    }
    for n in 0..200 {
        let exists = app.db.read(move |r| Ok(r.tenant_by_slug(&format!("t{n}"))?.is_some())).await.unwrap();
        assert_eq!(exists, n % 3 != 0, "tenant t{n}");
    }
    assert_eq!(kept, 133);
}

/// A unit that panics fails alone and the writer keeps working.
#[tokio::test]
async fn a_panicking_unit_does_not_stop_the_writer() {
    let app = TestApp::spawn().await;
    let result: Result<(), _> = app.db.write(|_| panic!("boom")).await;
    assert!(result.is_err());
    let ok = app.db.write(|tx| Ok(tx.insert_tenant(&NewTenant { slug: "after".into(), name: "n".into(), created_at: START })?)).await;
    assert!(ok.is_ok());
}

/// Closing while writes are queued: every write the writer has taken is
/// committed and acknowledged, and is on disk after a reopen; writes after
/// the close are refused, never silently dropped.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn close_commits_every_accepted_write() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    let app = TestApp::spawn().await;
    let url = app.database_url.clone();
    let taken = Arc::new(AtomicUsize::new(0));
    let mut handles = Vec::new();
    for n in 0..100 {
        let (db, taken) = (app.db.clone(), taken.clone());
        handles.push(tokio::spawn(async move {
            db.write(move |tx| {
                taken.fetch_add(1, Ordering::SeqCst);
                Ok(tx.insert_tenant(&NewTenant { slug: format!("c{n}"), name: "n".into(), created_at: START })?)
            })
            .await
        }));
    }
    // Every unit is running on the writer (accepted) before the close.
    eventually(|| async { (taken.load(Ordering::SeqCst) == 100).then_some(()) }).await;
    app.db.close().await;
    for h in handles {
        assert!(h.await.unwrap().is_ok(), "an accepted write is committed and acknowledged");
    }
    let late = app.db.write(|tx| Ok(tx.insert_tenant(&NewTenant { slug: "late".into(), name: "n".into(), created_at: START })?)).await;
    assert!(matches!(late, Err(DomainError::Store(parley_domain::StoreError::Unavailable(_)))), "{late:?}");

    let reopened = parley_storage::open(&url, Default::default()).await.unwrap();
    for n in 0..100 {
        let exists = reopened.read(move |r| Ok(r.tenant_by_slug(&format!("c{n}"))?.is_some())).await.unwrap();
        assert!(exists, "tenant c{n} is stored");
    }
    reopened.close().await;
}

/// A server whose tenant `acme` has a webhook endpoint, so an event
/// recorded for it also makes a delivery.
async fn with_an_endpoint() -> (TestApp, parley_domain::model::TenantId) {
    let app = TestApp::with().var("PARLEY_WEBHOOK_ALLOW_PRIVATE", "true").start().await;
    let f = app.fixture("acme", &[]).await;
    let admin = app.login("admin@acme.example.com").await;
    let (status, _) =
        app.authed(reqwest::Method::POST, "/api/admin/webhooks", &admin, Some(serde_json::json!({"url": "http://127.0.0.1:9/hook"}))).await;
    assert_eq!(status, reqwest::StatusCode::CREATED);
    (app, f.scope.tenant)
}

/// An event recorded by a unit that then fails is rolled back with it: no
/// event, no delivery.
#[tokio::test]
async fn a_rolled_back_change_emits_nothing() {
    let (app, tenant) = with_an_endpoint().await;
    let result: Result<(), _> = app
        .db
        .write(move |tx| {
            tx.insert_event(tenant, &event("evt_rolled_back"))?;
            Err(DomainError::Conflict("changed my mind"))
        })
        .await;
    assert!(result.is_err());
    assert!(app.events("acme").await.is_empty(), "no event");
    let (_, health) = app.get("/health").await;
    assert_eq!(health["checks"]["webhooks"]["pending"], 0, "no delivery");
}

/// A write the unit does not wait for (PostgreSQL sends it with the next
/// statement or the COMMIT) still fails its unit when the database refuses
/// it, and nothing of that unit is kept; before that, the unit's own later
/// reads see it.
#[tokio::test]
async fn a_refused_deferred_write_fails_its_unit_and_keeps_nothing() {
    let (app, tenant) = with_an_endpoint().await;
    let seen = app
        .db
        .write(move |tx| {
            tx.insert_event(tenant, &event("evt_first"))?;
            Ok(tx.recent_events(tenant, 10)?.iter().any(|e| e.event_id == "evt_first"))
        })
        .await
        .unwrap();
    assert!(seen, "the unit reads its own deferred write");

    let result: Result<(), _> = app
        .db
        .write(move |tx| {
            tx.insert_tenant(&NewTenant { slug: "kept-nowhere".into(), name: "n".into(), created_at: START })?;
            tx.insert_event(tenant, &event("evt_first"))?;
            Ok(())
        })
        .await;
    assert!(matches!(result, Err(DomainError::Store(parley_domain::StoreError::Duplicate(_)))), "{result:?}");
    let kept = app.db.read(|r| Ok(r.tenant_by_slug("kept-nowhere")?.is_some())).await.unwrap();
    assert!(!kept, "the unit's other write is rolled back");
    let events = app.db.read(move |r| Ok(r.recent_events(tenant, 10)?)).await.unwrap();
    assert_eq!(events.iter().filter(|e| e.event_id == "evt_first").count(), 1);
    let (_, health) = app.get("/health").await;
    assert_eq!(health["checks"]["webhooks"]["pending"], 1, "one delivery, for the first event only");
}

/// The database holds visitor details and webhook secrets: the folder
/// Parley creates is 0700 and the files 0600, and an older, world-readable
/// database is tightened at the next start.
#[tokio::test]
async fn database_files_are_private_to_the_service() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let url = format!("sqlite://{}/parley.sqlite3", data.display());
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;

    let app = TestApp::with().var("PARLEY_DATABASE_URL", &url).start().await;
    app.fixture("acme", &[]).await;
    assert_eq!(mode(&data), 0o700);
    for file in ["parley.sqlite3", "parley.sqlite3-wal", "parley.sqlite3-shm"] {
        assert_eq!(mode(&data.join(file)), 0o600, "{file}");
    }
    app.stop().await;

    let db = data.join("parley.sqlite3");
    std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o644)).unwrap();
    let app = TestApp::with().var("PARLEY_DATABASE_URL", &url).start().await;
    assert_eq!(mode(&db), 0o600, "tightened at start");
    app.stop().await;
}

/// Every statement of the storage layer prepares on the backend under
/// test, whether or not a test reaches it.
#[tokio::test]
async fn every_statement_prepares() {
    let dir = tempfile::tempdir().unwrap();
    let (url, _database) = fresh_database(dir.path(), "prepare.sqlite3").await;
    let n = parley_storage::prepare_all_statements(&url).await.unwrap_or_else(|e| panic!("{e}"));
    assert!(n > 90, "{n} statements");
}

/// Message ids increase in commit order within a conversation: a poller
/// asking only for ids above the highest it has seen, while writers commit
/// side by side, ends up with every message.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn after_id_polling_never_skips_a_message_committed_concurrently() {
    use parley_domain::model::{ConversationScope, MessageId, NewMessage, Sender, SenderKind};
    use parley_domain::store::MessagePage;

    let app = TestApp::spawn().await;
    let f = app.fixture("acme", &[]).await;
    let public_id = app.open_conversation("/api", &f.token, "visitor-1", "hello").await;
    let scope = ConversationScope::from(f.scope);
    let pid = public_id.clone();
    let conversation = app.db.read(move |r| Ok(r.conversation_by_public_id(scope, &pid)?.expect("conversation").id)).await.unwrap();

    let (writers, per_writer) = (8, 40);
    let mut handles = Vec::new();
    for w in 0..writers {
        let db = app.db.clone();
        handles.push(tokio::spawn(async move {
            for n in 0..per_writer {
                db.write(move |tx| {
                    let message = NewMessage {
                        conversation_id: conversation,
                        sender: Sender { kind: SenderKind::Visitor, name: None, operator_id: None },
                        body: format!("w{w} n{n}"),
                        internal: false,
                        created_at: START,
                        client_message_id: None,
                    };
                    Ok(tx.insert_message(scope, &message)?)
                })
                .await
                .expect("message stored");
            }
        }));
    }
    let poller = {
        let db = app.db.clone();
        let pid = public_id.clone();
        tokio::spawn(async move {
            let mut seen = Vec::new();
            let mut after = MessageId(0);
            loop {
                let (pid, page) = (pid.clone(), MessagePage { after_id: Some(after), limit: 100, include_internal: true });
                let (_, page) =
                    db.read(move |r| Ok(r.conversation_with_messages(scope, &pid, page)?.expect("conversation"))).await.unwrap();
                for m in &page {
                    assert!(m.id > after, "ids only grow");
                    after = m.id;
                    seen.push(m.body.clone());
                }
                if seen.len() > writers * per_writer {
                    return seen;
                }
                tokio::task::yield_now().await;
            }
        })
    };
    for h in handles {
        h.await.unwrap();
    }
    let seen = tokio::time::timeout(std::time::Duration::from_secs(30), poller).await.expect("the poller saw every message").unwrap();
    assert_eq!(seen.len(), writers * per_writer + 1, "the first message and every concurrent one, none skipped");
}
