//! Two instances on one PostgreSQL database, as behind a load balancer
//! without sticky sessions: what one writes the other reads at once and
//! in order, background work happens once, and the limits that protect
//! accounts hold across both. On SQLite (one process per database) these
//! tests have nothing to check and return at once.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use futures::future::join_all;
use parley_domain::Clock;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::helpers::*;
use crate::receiver::Receiver;

/// A second instance on the first one's database, with the same settings.
async fn second(first: &TestApp, vars: &[(&str, &str)]) -> TestApp {
    let mut spawn = TestApp::with().var("PARLEY_DATABASE_URL", &first.database_url);
    for (k, v) in vars {
        spawn = spawn.var(k, v);
    }
    spawn.start().await
}

async fn pair(vars: &[(&str, &str)]) -> (TestApp, TestApp) {
    let mut spawn = TestApp::with();
    for (k, v) in vars {
        spawn = spawn.var(k, v);
    }
    let a = spawn.start().await;
    let b = second(&a, vars).await;
    (a, b)
}

fn message_ids(body: &Value) -> Vec<i64> {
    body["messages"].as_array().expect("messages").iter().map(|m| m["id"].as_i64().expect("id")).collect()
}

/// Visitors post through both instances at once while an operator answers
/// through one of them; a poller following each conversation through the
/// other instance with `after_id` sees every message exactly once, in id
/// order, and the final lists agree on both instances.
#[tokio::test]
async fn messages_written_through_either_instance_are_read_through_both_in_order() {
    if backend() != "postgres" {
        return;
    }
    let (a, b) = pair(&[]).await;
    let f = a.fixture("acme", &[]).await;
    let admin = b.login("admin@acme.example.com").await;
    let conversations = 3;
    let per_visitor = 12;
    let mut public_ids = Vec::new();
    for v in 0..conversations {
        let through = if v % 2 == 0 { &a } else { &b };
        public_ids.push(through.open_conversation("/api", &f.token, &format!("visitor-{v}"), "hello").await);
    }
    let (_, inbox) = b.authed(Method::GET, "/api/mobile/conversations?per_page=100", &admin, None).await;
    let operator_ids: Vec<i64> = inbox["conversations"].as_array().unwrap().iter().map(|c| c["id"].as_i64().unwrap()).collect();
    assert_eq!(operator_ids.len(), conversations);

    let writers = async {
        let visitors = public_ids.iter().enumerate().map(|(v, public_id)| {
            let (a, b, token) = (&a, &b, &f.token);
            async move {
                for n in 0..per_visitor {
                    let through = if n % 2 == 0 { a } else { b };
                    let (status, body) = through.post_message("/api", token, public_id, &format!("v{v} m{n}")).await;
                    assert_eq!(status, StatusCode::CREATED, "{body}");
                }
            }
        });
        let operator = async {
            for n in 0..per_visitor {
                for id in &operator_ids {
                    let path = format!("/api/mobile/conversations/{id}/messages");
                    let (status, body) = b.authed(Method::POST, &path, &admin, Some(json!({"body": format!("reply {n}")}))).await;
                    assert_eq!(status, StatusCode::OK, "{body}");
                }
            }
        };
        tokio::join!(join_all(visitors), operator);
    };
    // Each conversation ends with 1 + per_visitor visitor messages and
    // per_visitor replies.
    let expected = 1 + 2 * per_visitor;
    let followers = public_ids.iter().map(|public_id| {
        let (a, token) = (&a, &f.token);
        async move {
            let path = format!("/api/widget/conversations/{public_id}/messages?token={token}");
            let mut seen: Vec<i64> = Vec::new();
            let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
            while seen.len() < expected {
                assert!(tokio::time::Instant::now() < deadline, "follower saw {} of {expected}", seen.len());
                let after = seen.last().copied().unwrap_or(0);
                let (status, body) = a.get(&format!("{path}&after_id={after}")).await;
                assert_eq!(status, StatusCode::OK, "{body}");
                seen.extend(message_ids(&body));
            }
            seen
        }
    });
    let (_, followed) = tokio::join!(writers, join_all(followers));

    for (public_id, seen) in public_ids.iter().zip(followed) {
        let unique: BTreeSet<i64> = seen.iter().copied().collect();
        assert_eq!(unique.len(), seen.len(), "no message twice: {seen:?}");
        assert!(seen.windows(2).all(|w| w[0] < w[1]), "in id order: {seen:?}");
        assert_eq!(seen.len(), expected);
        for app in [&a, &b] {
            let (_, body) = app.get(&format!("/api/widget/conversations/{public_id}/messages?token={}&after_id=0", f.token)).await;
            assert_eq!(message_ids(&body), seen, "both instances list the same messages");
        }
    }
}

/// Every event is delivered once, whichever instance recorded it and
/// whichever instance's worker claimed it: both workers poll often, so
/// both race for every delivery.
#[tokio::test]
async fn every_event_is_delivered_exactly_once_across_instances() {
    if backend() != "postgres" {
        return;
    }
    let vars = [("PARLEY_WEBHOOK_ALLOW_PRIVATE", "true"), ("PARLEY_WEBHOOK_POLL_INTERVAL", "10ms")];
    let (a, b) = pair(&vars).await;
    let f = a.fixture("acme", &[]).await;
    let admin = a.login("admin@acme.example.com").await;
    let receiver = Receiver::start().await;
    let (status, body) =
        b.authed(Method::POST, "/api/admin/webhooks", &admin, Some(json!({"url": receiver.url, "events": ["message.created"]}))).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let public_id = a.open_conversation("/api", &f.token, "ann", "first").await;
    let posts = 40;
    let writes = (0..posts).map(|n| {
        let through = if n % 2 == 0 { &a } else { &b };
        let (token, public_id) = (&f.token, &public_id);
        async move { through.post_message("/api", token, public_id, &format!("m{n}")).await.0 }
    });
    for status in join_all(writes).await {
        assert_eq!(status, StatusCode::CREATED);
    }
    let expected = posts + 1;
    let mut received: BTreeMap<String, usize> = BTreeMap::new();
    while received.len() < expected {
        let r = receiver.next().await;
        *received.entry(r.header("webhook-id").to_owned()).or_default() += 1;
    }
    // Once every delivery is recorded as delivered, nothing more is sent.
    let tenant = f.scope.tenant;
    eventually(|| async {
        let pending = a.db.read(|r| Ok(r.outbox_stats()?.pending)).await.unwrap();
        (pending == 0).then_some(())
    })
    .await;
    let endpoint = a.db.read(move |r| Ok(r.webhooks(tenant)?[0].id)).await.unwrap();
    let deliveries = a.db.read(move |r| Ok(r.deliveries(tenant, endpoint, 0, 1000)?)).await.unwrap();
    assert_eq!(deliveries.len(), expected);
    for d in &deliveries {
        assert_eq!(d.attempts.len(), 1, "each delivery attempted once: {d:?}");
    }
    while let Some(r) = receiver.within(Duration::from_millis(200)).await {
        *received.entry(r.header("webhook-id").to_owned()).or_default() += 1;
    }
    assert!(received.values().all(|n| *n == 1), "every event once: {received:?}");
}

/// A delivery recorded by another instance wakes this one's worker at
/// once, though its poll is an hour away: the other instance's NOTIFY.
#[tokio::test]
async fn a_commit_on_one_instance_wakes_the_others_worker() {
    if backend() != "postgres" {
        return;
    }
    let b = TestApp::with().var("PARLEY_WEBHOOK_ALLOW_PRIVATE", "true").var("PARLEY_WEBHOOK_POLL_INTERVAL", "1h").start().await;
    let f = b.fixture("acme", &[]).await;
    let receiver = Receiver::start().await;
    let admin = b.login("admin@acme.example.com").await;
    b.authed(Method::POST, "/api/admin/webhooks", &admin, Some(json!({"url": receiver.url}))).await;
    // The other instance: the database alone, with no worker of its own.
    let other = parley_storage::open(&b.database_url, parley_storage::Options { pool: 1, ..Default::default() }).await.unwrap();
    let tenant = f.scope.tenant;
    other.write(move |tx| Ok(tx.insert_event(tenant, &event("evt_from_elsewhere"))?)).await.unwrap();
    let r = receiver.next().await;
    assert_eq!(r.header("webhook-id"), "evt_from_elsewhere");

    // Every connection to the database ends (a restart, a failover): the
    // listener connects again, and the next announcement still arrives.
    listening(&b).await;
    let before = b.db.installations_generation();
    assert!(terminate_connections(&b.database_url) > 0);
    eventually(|| async { (b.db.installations_generation() > before).then_some(()) }).await;
    other.write(move |tx| Ok(tx.insert_event(tenant, &event("evt_after_restart"))?)).await.unwrap();
    let r = receiver.next().await;
    assert_eq!(r.header("webhook-id"), "evt_after_restart");
    other.close().await;
}

/// An installation disabled through one instance is refused by the other
/// at once: the change is announced, and the token cache drops it.
#[tokio::test]
async fn an_installation_change_reaches_the_others_token_cache() {
    if backend() != "postgres" {
        return;
    }
    let (a, b) = pair(&[]).await;
    let f = a.fixture("acme", &[]).await;
    let (status, _) = b.get(&format!("/api/widget/config/{}", f.token)).await;
    assert_eq!(status, StatusCode::OK);
    // B's listener, once listening, has counted one change (whatever was
    // missed before it listened); B writes nothing itself.
    listening(&b).await;
    let before = b.db.installations_generation();
    let admin = a.login("admin@acme.example.com").await;
    let (_, list) = a.authed(Method::GET, &format!("/api/admin/sites/{}/installations", f.scope.site.0), &admin, None).await;
    let id = list["installations"][0]["id"].as_i64().unwrap();
    let (status, body) = a.authed(Method::PATCH, &format!("/api/admin/installations/{id}"), &admin, Some(json!({"enabled": false}))).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    eventually(|| async { (b.db.installations_generation() > before).then_some(()) }).await;
    let (status, body) = b
        .post("/api/widget/conversations", json!({"token": f.token, "visitor_uuid": "ann", "message": "hi", "privacy_accepted": true}))
        .await;
    assert_error(status, &body, StatusCode::FORBIDDEN, "forbidden");
}

/// One instance at a time leads a task; the lead passes on when given up,
/// and when its holder's connection dies.
#[tokio::test]
async fn one_instance_leads_at_a_time_and_a_dead_one_hands_over() {
    if backend() != "postgres" {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (url, _guard) = fresh_database(dir.path(), "unused.sqlite3").await;
    let options = || parley_storage::Options { pool: 1, ..Default::default() };
    let a = parley_storage::open(&url, options()).await.unwrap();
    let b = parley_storage::open(&url, options()).await.unwrap();
    let lead = eventually(|| async { a.lead("a task").await.ok().flatten() }).await;
    assert!(b.lead("a task").await.unwrap().is_none(), "held by the other instance");
    assert!(b.lead("another task").await.unwrap().is_some(), "tasks are led apart");
    drop(lead);
    let lead = eventually(|| async { b.lead("a task").await.ok().flatten() }).await;
    assert!(a.lead("a task").await.unwrap().is_none());
    // B's connections die with its lead held; A takes over once the
    // server has ended B's session.
    assert!(terminate_connections(&url) > 0);
    let _taken = eventually(|| async { a.lead("a task").await.ok().flatten() }).await;
    drop(lead);
    a.close().await;
    b.close().await;
}

/// Concurrent wrong passwords for one email through both instances: no
/// more than the limit are checked, the rest are refused.
#[tokio::test]
async fn concurrent_failed_logins_never_exceed_the_limit() {
    if backend() != "postgres" {
        return;
    }
    let vars =
        [("PARLEY_RATE_LIMITS", "true"), ("PARLEY_RATE_LIMIT_LOGIN_FAILURES_PER_EMAIL", "3/15m"), ("PARLEY_TRUSTED_PROXIES", "127.0.0.1")];
    let (a, b) = pair(&vars).await;
    a.fixture("acme", &[]).await;
    let attempts = (0..16).map(|n| {
        let through = if n % 2 == 0 { &a } else { &b };
        // A different client address each, so only the email's limit counts.
        let forwarded = format!("198.51.100.{}", n + 1);
        async move {
            let body = json!({"email": "admin@acme.example.com", "password": "wrong password"});
            through.send(Method::POST, "/api/mobile/login", Some(body), &[("x-forwarded-for", &forwarded)]).await
        }
    });
    let answers = join_all(attempts).await;
    let checked = answers.iter().filter(|(status, _)| *status == StatusCode::UNAUTHORIZED).count();
    let refused =
        answers.iter().filter(|(status, body)| *status == StatusCode::TOO_MANY_REQUESTS && body["error"]["code"] == "rate_limited").count();
    assert_eq!((checked, refused), (3, 13), "{answers:?}");
}

/// Waits until `app`'s listener listens: its first connection counts one
/// installation change for whatever it may have missed.
async fn listening(app: &TestApp) {
    eventually(|| async { (app.db.installations_generation() >= 1).then_some(()) }).await;
}

/// Both instances sweep often; each idle conversation is closed once, each
/// stale installation announced once.
#[tokio::test]
async fn auto_close_and_stale_installations_happen_once() {
    if backend() != "postgres" {
        return;
    }
    let vars = [("PARLEY_SWEEP_INTERVAL", "10ms"), ("PARLEY_AUTO_CLOSE_AFTER", "1h"), ("PARLEY_HEARTBEAT_STALE_AFTER", "1h")];
    let (a, b) = pair(&vars).await;
    let f = a.fixture("acme", &["acme.example"]).await;
    let ping = json!({"token": f.token, "current_url": "https://www.acme.example/", "installation_type": "web", "version": "0.9.0"});
    let (status, body) = a.post("/api/widget/ping", ping).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let count = 30;
    for n in 0..count {
        let through = if n % 2 == 0 { &a } else { &b };
        through.open_conversation("/api", &f.token, &format!("visitor-{n}"), "hello").await;
    }
    for app in [&a, &b] {
        app.clock.advance(Duration::from_secs(2 * 3600));
    }
    let closed_kind = |kind: &str| kind == "conversation.closed";
    eventually(|| async { (a.events("acme").await.iter().filter(|k| closed_kind(k)).count() >= count).then_some(()) }).await;
    // Let several more passes run on both instances before counting.
    let now = a.clock.now().as_millis();
    for app in [&a, &b] {
        app.clock.advance(Duration::from_secs(1));
    }
    eventually(|| async { (a.db.read(|r| Ok(r.state("sweeper_last_run")?)).await.unwrap() > Some(now)).then_some(()) }).await;
    let events = a.events("acme").await;
    assert_eq!(events.iter().filter(|k| closed_kind(k)).count(), count, "{events:?}");
    assert_eq!(events.iter().filter(|k| *k == "installation.health.changed").count(), 2, "healthy once, stale once: {events:?}");
}

/// Failures counted on one instance count on the other: five wrong
/// passwords spread over both lock the account out on both.
#[tokio::test]
async fn failed_logins_are_limited_across_instances() {
    if backend() != "postgres" {
        return;
    }
    let vars = [("PARLEY_RATE_LIMITS", "true"), ("PARLEY_RATE_LIMIT_LOGIN_FAILURES_PER_EMAIL", "4/15m")];
    let (a, b) = pair(&vars).await;
    a.fixture("acme", &[]).await;
    let email = "admin@acme.example.com";
    for n in 0..4 {
        let through = if n % 2 == 0 { &a } else { &b };
        let (status, body) = through.post("/api/mobile/login", json!({"email": email, "password": "wrong password"})).await;
        assert_error(status, &body, StatusCode::UNAUTHORIZED, "invalid_credentials");
    }
    for app in [&a, &b] {
        let (status, body) = app.post("/api/mobile/login", json!({"email": email, "password": PASSWORD})).await;
        assert_error(status, &body, StatusCode::TOO_MANY_REQUESTS, "rate_limited");
    }
}

/// A conversation erased through one instance is gone from the other's
/// polls as soon as the erasure is announced, though that instance had
/// the poll's answer in memory: an erasure leaves no feed entry naming
/// the conversation, so it is announced itself. Once gone it stays gone.
#[tokio::test]
async fn an_erasure_reaches_the_others_remembered_polls() {
    if backend() != "postgres" {
        return;
    }
    let (a, b) = pair(&[]).await;
    let f = a.fixture("acme", &[]).await;
    let public_id = a.open_conversation("/api", &f.token, "ann", "forget me").await;
    let path = |after: i64| format!("/api/widget/conversations/{public_id}/messages?token={}&after_id={after}", f.token);
    let (_, body) = b.get(&path(0)).await;
    let latest = *message_ids(&body).last().expect("the message");
    listening(&b).await;
    for _ in 0..2 {
        assert_eq!(b.get(&path(latest)).await.0, StatusCode::OK);
    }
    let changes = b.db.conversation_changes();
    let before = changes.sequence();
    let admin = a.login("admin@acme.example.com").await;
    let (_, inbox) = a.authed(Method::GET, "/api/mobile/conversations", &admin, None).await;
    let id = inbox["conversations"][0]["id"].as_i64().expect("the conversation");
    let (status, _) = a.authed(Method::DELETE, &format!("/api/admin/conversations/{id}"), &admin, None).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    // Announced: every conversation counts as changed on B, even one
    // nobody wrote.
    let untouched = parley_domain::model::ConversationId(id + 1000);
    eventually(|| async { (!changes.unchanged_since(untouched, before)).then_some(()) }).await;
    for after in [latest, 0, latest] {
        let (status, body) = b.get(&path(after)).await;
        assert_error(status, &body, StatusCode::NOT_FOUND, "not_found");
    }
}
