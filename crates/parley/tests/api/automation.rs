//! Installation status over time, warnings, auto-close and the health
//! report, with the injected clock and a fast sweep interval.

use std::time::Duration;

use parley_domain::Clock;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::helpers::*;

const DAY: Duration = Duration::from_secs(86_400);

async fn swept_app(vars: &[(&str, &str)]) -> TestApp {
    let mut spawn = TestApp::with().var("PARLEY_SWEEP_INTERVAL", "20ms");
    for (k, v) in vars {
        spawn = spawn.var(k, v);
    }
    spawn.start().await
}

async fn status(app: &TestApp, token: &str) -> String {
    let (_, body) = app.get(&format!("/api/widget/config/{token}")).await;
    body["installation"]["status"].as_str().unwrap().to_owned()
}

async fn wait_for_status(app: &TestApp, token: &str, wanted: &str) {
    eventually(|| async { (status(app, token).await == wanted).then_some(()) }).await;
}

/// The `installation.health.changed` events, as (previous, new) pairs.
async fn health_changes(app: &TestApp) -> Vec<(String, String)> {
    let tenant = app.db.read(|r| Ok(r.tenant_by_slug("acme")?)).await.unwrap().unwrap().id;
    let events = app.db.read(move |r| Ok(r.recent_events(tenant, 1000)?)).await.unwrap();
    events
        .iter()
        .filter(|e| e.kind.as_str() == "installation.health.changed")
        .map(|e| {
            let v: Value = serde_json::from_str(&e.payload).unwrap();
            (v["data"]["previous_status"].as_str().unwrap().to_owned(), v["data"]["status"].as_str().unwrap().to_owned())
        })
        .collect()
}

fn pair(a: &str, b: &str) -> (String, String) {
    (a.to_owned(), b.to_owned())
}

#[tokio::test]
async fn every_status_transition_emits_its_event() {
    let app = swept_app(&[]).await;
    let f = app.fixture("acme", &[]).await;
    let admin = app.login("admin@acme.example.com").await;
    let (_, list) = app.authed(Method::GET, &format!("/api/admin/sites/{}/installations", f.scope.site.0), &admin, None).await;
    let id = list["installations"][0]["id"].as_i64().unwrap();
    let set_enabled = |enabled: bool| {
        let (app, admin) = (&app, admin.clone());
        async move { app.authed(Method::PATCH, &format!("/api/admin/installations/{id}"), &admin, Some(json!({"enabled": enabled}))).await }
    };
    assert_eq!(status(&app, &f.token).await, "pending");

    app.post("/api/widget/ping", json!({"token": f.token})).await;
    assert_eq!(status(&app, &f.token).await, "healthy");

    app.clock.advance(DAY + Duration::from_secs(1));
    wait_for_status(&app, &f.token, "stale").await;

    app.post("/api/widget/ping", json!({"token": f.token})).await;
    assert_eq!(status(&app, &f.token).await, "healthy");

    set_enabled(false).await;
    assert_eq!(status(&app, &f.token).await, "disabled");
    // Going stale while disabled changes nothing visible: no event.
    app.clock.advance(DAY + Duration::from_secs(1));
    eventually(|| async {
        let swept = app.db.read(|r| Ok(r.state("sweeper_last_run")?)).await.unwrap();
        (swept == Some(app.clock.now().as_millis())).then_some(())
    })
    .await;
    assert_eq!(status(&app, &f.token).await, "disabled");
    set_enabled(true).await;
    assert_eq!(status(&app, &f.token).await, "stale", "re-enabling restores the heartbeat state");

    assert_eq!(
        health_changes(&app).await,
        [
            pair("pending", "healthy"),
            pair("healthy", "stale"),
            pair("stale", "healthy"),
            pair("healthy", "disabled"),
            pair("disabled", "stale"),
        ]
    );
}

#[tokio::test]
async fn an_installation_without_heartbeats_stays_pending() {
    let app = swept_app(&[]).await;
    let f = app.fixture("acme", &[]).await;
    app.clock.advance(DAY * 3);
    eventually(|| async {
        let swept = app.db.read(|r| Ok(r.state("sweeper_last_run")?)).await.unwrap();
        (swept == Some(app.clock.now().as_millis())).then_some(())
    })
    .await;
    assert_eq!(status(&app, &f.token).await, "pending");
    assert!(health_changes(&app).await.is_empty());
}

async fn warnings(app: &TestApp, token: &str, query: &str) -> Vec<String> {
    let (status, body) = app.get(&format!("/api/v1/widget/installations/{token}/health{query}")).await;
    assert_eq!(status, StatusCode::OK);
    body["warnings"].as_array().unwrap().iter().map(|w| w.as_str().unwrap().to_owned()).collect()
}

fn has(list: &[String], needle: &str) -> bool {
    list.iter().any(|w| w.contains(needle))
}

#[tokio::test]
async fn each_warning_appears_when_it_applies_and_only_then() {
    let app = swept_app(&[]).await;
    let f = app.fixture("acme", &["acme.example"]).await;
    let w = warnings(&app, &f.token, "").await;
    assert_eq!(w.len(), 1);
    assert!(has(&w, "No heartbeat received yet"), "{w:?}");

    app.post("/api/widget/ping", json!({"token": f.token, "current_url": "https://www.acme.example/", "version": "1.0.0"})).await;
    assert!(warnings(&app, &f.token, "").await.is_empty(), "a healthy, current installation has nothing to fix");

    app.post("/api/widget/ping", json!({"token": f.token, "current_url": "https://shop.elsewhere.example/cart"})).await;
    let w = warnings(&app, &f.token, "").await;
    assert!(has(&w, "shop.elsewhere.example is not among the site's domains"), "{w:?}");
    app.post("/api/widget/ping", json!({"token": f.token, "current_url": "https://acme.example/", "version": "0.8.2"})).await;
    let w = warnings(&app, &f.token, "").await;
    assert!(has(&w, "version 0.8.2, older than the current"), "{w:?}");
    assert!(!has(&w, "not among the site's domains"), "the latest page host is fine again: {w:?}");
    let w = warnings(&app, &f.token, "?current_url=https%3A%2F%2Fother.example%2F").await;
    assert!(has(&w, "other.example is not among the site's domains"), "{w:?}");

    app.clock.advance(DAY * 2);
    let w = warnings(&app, &f.token, "").await;
    assert!(has(&w, "The last heartbeat was 2 days ago"), "{w:?}");

    let admin = app.login("admin@acme.example.com").await;
    let (_, list) = app.authed(Method::GET, &format!("/api/admin/sites/{}/installations", f.scope.site.0), &admin, None).await;
    let id = list["installations"][0]["id"].as_i64().unwrap();
    app.authed(Method::PATCH, &format!("/api/admin/installations/{id}"), &admin, Some(json!({"enabled": false}))).await;
    assert!(has(&warnings(&app, &f.token, "").await, "This installation is disabled"));
}

#[tokio::test]
async fn idle_conversations_close_by_themselves() {
    let app = swept_app(&[("PARLEY_AUTO_CLOSE_AFTER", "2h")]).await;
    let f = app.fixture("acme", &[]).await;
    let idle = app.open_conversation("/api", &f.token, "ann", "hello?").await;
    let busy = app.open_conversation("/api", &f.token, "bob", "hi").await;
    app.clock.advance(Duration::from_secs(3600));
    app.post_message("/api", &f.token, &busy, "still there?").await;
    app.clock.advance(Duration::from_secs(3601));

    let messages = |public_id: String| {
        let app = &app;
        let token = f.token.clone();
        async move {
            let (_, body) = app.get(&format!("/api/widget/conversations/{public_id}/messages?token={token}")).await;
            body
        }
    };
    let closed = eventually(|| async {
        let body = messages(idle.clone()).await;
        (body["conversation"]["status"] == "closed").then_some(body)
    })
    .await;
    let last = closed["messages"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["sender"]["type"], "system");
    assert_eq!(last["body"], "Conversation closed after a period without messages");
    assert_eq!(messages(busy.clone()).await["conversation"]["status"], "unassigned", "a conversation with a recent message stays open");

    // Later passes change nothing more.
    app.clock.advance(Duration::from_secs(1));
    let swept_at = app.clock.now().as_millis();
    eventually(|| async { (app.db.read(|r| Ok(r.state("sweeper_last_run")?)).await.unwrap() == Some(swept_at)).then_some(()) }).await;
    let tenant = f.scope.tenant;
    let events = app.db.read(move |r| Ok(r.recent_events(tenant, 1000)?)).await.unwrap();
    let closes: Vec<Value> =
        events.iter().filter(|e| e.kind.as_str() == "conversation.closed").map(|e| serde_json::from_str(&e.payload).unwrap()).collect();
    assert_eq!(closes.len(), 1);
    assert_eq!(closes[0]["data"]["closed_by"], "automation");
    assert_eq!(closes[0]["data"]["conversation"]["public_id"], idle.as_str());

    // A visitor message reopens it as usual.
    let (_, body) = app.post_message("/api", &f.token, &idle, "I'm back").await;
    assert_eq!(body["conversation"]["status"], "unassigned");
}

#[tokio::test]
async fn health_degrades_when_delivery_lags_not_when_retries_wait() {
    let app = swept_app(&[
        ("PARLEY_WEBHOOK_ALLOW_PRIVATE", "true"),
        ("PARLEY_WEBHOOK_RETRY_SCHEDULE", "1h"),
        ("PARLEY_WEBHOOK_POLL_INTERVAL", "20ms"),
        ("PARLEY_WEBHOOK_CONCURRENCY", "1"),
        ("PARLEY_WEBHOOK_TIMEOUT", "30s"),
    ])
    .await;
    let f = app.fixture("acme", &[]).await;
    let admin = app.login("admin@acme.example.com").await;
    let hanging = crate::receiver::Receiver::start().await;
    hanging.reply(&[crate::receiver::Reply::Hang]);
    // Nothing listens on port 9: attempts there fail and wait for their retry.
    app.authed(Method::POST, "/api/admin/webhooks", &admin, Some(json!({"url": "http://127.0.0.1:9/hook"}))).await;
    app.post("/api/widget/ping", json!({"token": f.token})).await;
    let failing = eventually(|| async {
        let (_, body) = app.get("/health").await;
        (body["checks"]["webhooks"]["failing_endpoints"] == 1).then_some(body)
    })
    .await;
    assert_eq!(failing["status"], "ok");
    app.clock.advance(Duration::from_secs(16 * 60));
    let waiting = eventually(|| async {
        let (_, body) = app.get("/health").await;
        (body["checks"]["sweeper"]["status"] == "ok").then_some(body)
    })
    .await;
    assert_eq!(waiting["checks"]["webhooks"]["oldest_pending_seconds"], 960);
    assert_eq!(waiting["checks"]["webhooks"]["lag_seconds"], 0, "a retry scheduled for later is not lag");
    assert_eq!(waiting["status"], "ok", "one failing endpoint does not degrade the platform");

    // Now the only worker slot hangs on another endpoint and new deliveries pile up.
    app.authed(Method::POST, "/api/admin/webhooks", &admin, Some(json!({"url": hanging.url}))).await;
    let public_id = app.open_conversation("/api", &f.token, "ann", "hi").await;
    hanging.next().await;
    app.post_message("/api", &f.token, &public_id, "anyone?").await;
    app.clock.advance(Duration::from_secs(16 * 60));
    let body = eventually(|| async {
        let (_, body) = app.get("/health").await;
        (body["checks"]["sweeper"]["status"] == "ok" && body["status"] == "degraded").then_some(body)
    })
    .await;
    assert_eq!(body["checks"]["webhooks"]["status"], "degraded");
    assert!(body["checks"]["webhooks"]["lag_seconds"].as_u64().unwrap() >= 960);
    let (status, _) = app.get("/health").await;
    assert_eq!(status, StatusCode::OK, "degraded still answers 200");
}

#[tokio::test]
async fn health_degrades_when_the_sweeper_is_late() {
    let app = TestApp::with().var("PARLEY_SWEEP_INTERVAL", "1h").start().await;
    let body = eventually(|| async {
        let (_, body) = app.get("/health").await;
        body["checks"]["sweeper"]["last_run_at"].is_string().then_some(body)
    })
    .await;
    assert_eq!(body["checks"]["sweeper"]["status"], "ok");
    assert_eq!(body["checks"]["sweeper"]["interval_seconds"], 3600);
    app.clock.advance(Duration::from_secs(3 * 3600 + 1));
    let (status, body) = app.get("/health").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["status"], "degraded");
    assert_eq!(body["checks"]["sweeper"]["status"], "degraded");
}

/// Events with their deliveries and attempts, spent tokens and challenges
/// are pruned once older than the retention; what is younger stays.
#[tokio::test]
async fn records_past_their_retention_are_pruned() {
    let smtp = crate::smtp_sink::SmtpSink::start().await;
    let app = swept_app(&[
        ("PARLEY_EVENT_RETENTION", "2d"),
        ("PARLEY_AUTO_CLOSE_AFTER", "30d"),
        ("PARLEY_MOBILE_TOKEN_TTL", "1h"),
        ("PARLEY_WEBHOOK_ALLOW_PRIVATE", "true"),
        ("PARLEY_SMTP_URL", &smtp.url()),
        ("PARLEY_MAIL_FROM", "noreply@parley.test"),
    ])
    .await;
    let f = app.fixture("acme", &[]).await;
    let admin_token = app.login("admin@acme.example.com").await;
    let receiver = crate::receiver::Receiver::start().await;
    let (endpoint, _) = crate::webhooks::register(&app, &admin_token, &receiver.url, Some(json!(["conversation.created"]))).await;
    let old = app.open_conversation("/api", &f.token, "old", "an old question").await;
    receiver.next().await;
    eventually(|| async { (delivery_count(&app, &admin_token, endpoint).await == 1).then_some(()) }).await;
    let path = format!("/api/widget/conversations/{old}/verification/start");
    let (status, started) = app.post(&path, json!({"token": f.token, "method": "email_otp", "target": "a@example.com"})).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{started}");
    let challenge = started["challenge"]["id"].as_i64().unwrap();
    assert!(app.db.read(move |r| Ok(r.challenge_by_id(parley_domain::model::ChallengeId(challenge))?)).await.unwrap().is_some());
    let digest = parley_domain::password::token_digest(&admin_token);

    app.clock.advance(3 * DAY);
    let fresh_admin = app.login("admin@acme.example.com").await;
    app.open_conversation("/api", &f.token, "new", "a new question").await;
    receiver.next().await;
    eventually(|| async { (app.events("acme").await == ["conversation.created", "message.created"]).then_some(()) }).await;
    eventually(|| async { (delivery_count(&app, &fresh_admin, endpoint).await == 1).then_some(()) }).await;
    let token_row = app.db.read(move |r| Ok(r.session(&digest)?.is_some())).await.unwrap();
    assert!(!token_row, "the expired token is gone");
    assert!(
        app.db.read(move |r| Ok(r.challenge_by_id(parley_domain::model::ChallengeId(challenge))?)).await.unwrap().is_none(),
        "the old challenge is gone"
    );
    let (_, conversations) = app.authed(Method::GET, "/api/mobile/conversations", &fresh_admin, None).await;
    assert_eq!(conversations["meta"]["total"], 2, "conversations and messages are the tenant's data: never pruned");
}

async fn delivery_count(app: &TestApp, token: &str, endpoint: i64) -> u64 {
    let path = format!("/api/v1/admin/webhooks/{endpoint}/deliveries");
    app.authed(Method::GET, &path, token, None).await.1["meta"]["total"].as_u64().unwrap()
}

/// An event whose delivery is still pending is kept past the retention, so
/// pruning never takes a delivery from under the worker.
#[tokio::test]
async fn an_event_with_a_pending_delivery_is_kept() {
    let app = swept_app(&[
        ("PARLEY_EVENT_RETENTION", "1d"),
        ("PARLEY_AUTO_CLOSE_AFTER", "30d"),
        ("PARLEY_WEBHOOK_ALLOW_PRIVATE", "true"),
        ("PARLEY_WEBHOOK_RETRY_SCHEDULE", "10d"),
    ])
    .await;
    let f = app.fixture("acme", &[]).await;
    let admin = app.login("admin@acme.example.com").await;
    let receiver = crate::receiver::Receiver::start().await;
    receiver.reply(&[crate::receiver::Reply::Status(500)]);
    let (endpoint, _) = crate::webhooks::register(&app, &admin, &receiver.url, Some(json!(["conversation.created"]))).await;
    app.open_conversation("/api", &f.token, "v", "hi").await;
    receiver.next().await;
    app.clock.advance(3 * DAY);
    let sweeps = |app: &TestApp| {
        let db = app.db.clone();
        async move { db.read(|r| Ok(r.state(parley_domain::automation::LAST_SWEEP_KEY)?)).await.unwrap() }
    };
    let now = app.clock.now().as_millis();
    eventually(|| async { (sweeps(&app).await >= Some(now)).then_some(()) }).await;
    let admin = app.login("admin@acme.example.com").await;
    assert_eq!(delivery_count(&app, &admin, endpoint).await, 1, "the pending delivery and its event stay");
    assert_eq!(app.events("acme").await, ["conversation.created", "message.created"][..1], "only the event still to deliver stays");
}
