//! Units of work: batching, isolation of failing units, what a close
//! keeps, deferred writes, file permissions, and ids under concurrency.

use parley_domain::DomainError;
use parley_domain::model::NewTenant;
use parley_domain::webhooks::NewWebhook;

use crate::harness::*;

/// Many units submitted at once share commits; a failing unit rolls back
/// alone and the others are kept.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_failing_unit_in_a_batch_rolls_back_alone() {
    let app = TestStore::new().await;
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
    let app = TestStore::new().await;
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

    let app = TestStore::new().await;
    let url = app.url.clone();
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

/// A store whose tenant `acme` has a webhook endpoint, so an event
/// recorded for it also makes a delivery.
async fn with_an_endpoint() -> (TestStore, parley_domain::model::TenantId) {
    let app = TestStore::new().await;
    let f = app.fixture("acme", &[]).await;
    let tenant = f.scope.tenant;
    app.db
        .write(move |tx| {
            let webhook = NewWebhook { url: "http://127.0.0.1:9/hook".into(), events: None, secret: "s".repeat(32), created_at: START };
            Ok(tx.insert_webhook(tenant, &webhook)?)
        })
        .await
        .expect("endpoint");
    (app, tenant)
}

/// Deliveries waiting for an attempt, across tenants.
async fn pending(app: &TestStore) -> u64 {
    app.db.read(|r| Ok(r.outbox_stats()?.pending)).await.expect("stats")
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
    assert!(app.db.read(move |r| Ok(r.recent_events(tenant, 10)?)).await.unwrap().is_empty(), "no event");
    assert_eq!(pending(&app).await, 0, "no delivery");
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
    assert_eq!(pending(&app).await, 1, "one delivery, for the first event only");
}

/// The database holds visitor details and webhook secrets: the folder
/// Parley creates is 0700 and the files 0600, and an older, world-readable
/// database is tightened when it is opened again.
#[tokio::test]
async fn database_files_are_private_to_the_service() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let url = format!("sqlite://{}/parley.sqlite3", data.display());
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;

    let db = parley_storage::open(&url, Default::default()).await.unwrap();
    db.write(|tx| Ok(tx.insert_tenant(&NewTenant { slug: "acme".into(), name: "n".into(), created_at: START })?)).await.unwrap();
    assert_eq!(mode(&data), 0o700);
    for file in ["parley.sqlite3", "parley.sqlite3-wal", "parley.sqlite3-shm"] {
        assert_eq!(mode(&data.join(file)), 0o600, "{file}");
    }
    db.close().await;

    let file = data.join("parley.sqlite3");
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    let db = parley_storage::open(&url, Default::default()).await.unwrap();
    assert_eq!(mode(&file), 0o600, "tightened when opened");
    db.close().await;
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
    use parley_domain::model::{ConversationScope, MessageId};
    use parley_domain::store::MessagePage;

    let app = TestStore::new().await;
    let f = app.fixture("acme", &[]).await;
    let site = f.scope;
    let scope = ConversationScope::from(site);
    let opened = app.db.write(move |tx| Ok(open_conversation(tx, site, "visitor-1", "hello")?)).await.unwrap();
    let (conversation, public_id) = (opened.id, opened.public_id);

    let (writers, per_writer) = (8, 40);
    let mut handles = Vec::new();
    for w in 0..writers {
        let db = app.db.clone();
        handles.push(tokio::spawn(async move {
            for n in 0..per_writer {
                db.write(move |tx| Ok(tx.insert_message(scope, &visitor_message(conversation, &format!("w{w} n{n}")), &[])?))
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

/// Every pooled connection killed at once (a server restart, a proxy
/// dropping idle connections): the next units still succeed.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn units_succeed_after_every_connection_is_killed() {
    use parley_domain::model::ConversationScope;

    if backend() != "postgres" {
        return; // SQLite has no connection to lose
    }
    let app = TestStore::new().await;
    let f = app.fixture("acme", &[]).await;
    let site = f.scope;
    let scope = ConversationScope::from(site);
    let opened = app.db.write(move |tx| Ok(open_conversation(tx, site, "ann", "hi")?)).await.unwrap();
    let (conversation, public_id) = (opened.id, opened.public_id);
    let post = |n: String| {
        let db = app.db.clone();
        async move { db.write(move |tx| Ok(tx.insert_message(scope, &visitor_message(conversation, &n), &[])?)).await }
    };
    // Warm every connection of the pool (4).
    let warm: Vec<_> = (0..16).map(|n| tokio::spawn(post(format!("warm {n}")))).collect();
    for w in warm {
        assert!(w.await.unwrap().is_ok());
    }
    let killed = terminate_connections(&app.url);
    assert!(killed > 0, "the pool's connections were killed");
    for n in 0..12 {
        let written = post(format!("after {n}")).await;
        assert!(written.is_ok(), "a write after the kill: {written:?}");
    }
    for _ in 0..12 {
        let (pid, page) = (public_id.clone(), parley_domain::store::MessagePage { after_id: None, limit: 100, include_internal: true });
        let read = app.db.read(move |r| Ok(r.conversation_with_messages(scope, &pid, page)?.map(|(_, list)| list.len()))).await;
        assert_eq!(read.ok().flatten(), Some(1 + 16 + 12), "a read after the kill sees every write");
    }
}

/// A unit whose only statements are held back sends BEGIN, them and its
/// COMMIT in one round trip. On a connection that died while idle the
/// server refuses the BEGIN, so nothing of the unit ran: it is sent again
/// on a new connection and succeeds, once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deferred_only_unit_survives_a_dead_idle_connection() {
    if backend() != "postgres" {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (url, _database) = fresh_database(dir.path(), "unused.sqlite3").await;
    let db = parley_storage::open(&url, parley_storage::Options { pool: 1, ..Default::default() }).await.unwrap();
    let tenant =
        db.write(|tx| Ok(tx.insert_tenant(&NewTenant { slug: "acme".into(), name: "n".into(), created_at: START })?.id)).await.unwrap();
    // The pool's one connection (it has just written) and, once it has
    // connected, the instance's listener.
    assert!(terminate_connections(&url) >= 1, "the pool's connection was killed");
    let written = db.write(move |tx| Ok(tx.insert_event(tenant, &event("evt_after_kill"))?)).await;
    assert!(written.is_ok(), "{written:?}");
    let stored = db.read(move |r| Ok(r.recent_events(tenant, 10)?.into_iter().filter(|e| e.event_id == "evt_after_kill").count())).await;
    assert_eq!(stored.unwrap(), 1);
    db.close().await;
}
