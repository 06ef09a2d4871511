//! One tenant's slow or failing endpoints must not delay another tenant's
//! deliveries: fair shares of the worker's slots, a circuit breaker per
//! endpoint, and a bound on endpoints per tenant.

use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::sync::mpsc;

use crate::helpers::*;
use crate::receiver::{Receiver, Reply};
use crate::webhooks::register;

/// An endpoint that accepts connections and never answers; reports each
/// connection it holds.
async fn black_hole(accepted: mpsc::UnboundedSender<()>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            held.push(socket);
            let _ = accepted.send(());
        }
    });
    url
}

async fn attempts_of(app: &TestApp, admin: &str, endpoint: i64) -> usize {
    let (_, body) = app.authed(Method::GET, &format!("/api/v1/admin/webhooks/{endpoint}/deliveries?per_page=100"), admin, None).await;
    body["deliveries"].as_array().unwrap().iter().map(|d| d["attempts"].as_array().unwrap().len()).sum()
}

/// Ten endpoints of one tenant that never answer, with a backlog that
/// could fill every slot: another tenant's event is still delivered at
/// once, while the first tenant's attempts are all still waiting.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_tenants_hanging_endpoints_do_not_hold_back_another_tenant() {
    let app = TestApp::with()
        .var("PARLEY_WEBHOOK_ALLOW_PRIVATE", "true")
        .var("PARLEY_WEBHOOK_POLL_INTERVAL", "20ms")
        .var("PARLEY_WEBHOOK_CONCURRENCY", "16")
        .var("PARLEY_WEBHOOK_TIMEOUT", "60s")
        .var("PARLEY_WEBHOOK_LEASE", "120s")
        .start()
        .await;
    let hog = app.fixture("hog", &[]).await;
    let hog_admin = app.login("admin@hog.example.com").await;
    let (accepted_tx, mut accepted) = mpsc::unbounded_channel();
    let mut hog_endpoints = Vec::new();
    for _ in 0..10 {
        let url = black_hole(accepted_tx.clone()).await;
        hog_endpoints.push(register(&app, &hog_admin, &url, Some(json!(["message.created"]))).await.0);
    }
    let public_id = app.open_conversation("/api", &hog.token, "v", "start").await;
    for n in 0..5 {
        app.post_message("/api", &hog.token, &public_id, &format!("m{n}")).await;
    }
    // The hog's attempts are out and hanging.
    for _ in 0..8 {
        tokio::time::timeout(Duration::from_secs(10), accepted.recv()).await.expect("hog attempts start").unwrap();
    }

    let other = app.fixture("other", &[]).await;
    let other_admin = app.login("admin@other.example.com").await;
    let receiver = Receiver::start().await;
    register(&app, &other_admin, &receiver.url, Some(json!(["conversation.created"]))).await;
    app.open_conversation("/api", &other.token, "w", "hello").await;
    let delivered = receiver.next().await;
    assert_eq!(delivered.json()["event"], "conversation.created");
    for endpoint in hog_endpoints {
        assert_eq!(
            attempts_of(&app, &hog_admin, endpoint).await,
            0,
            "no hog attempt has ended yet: the other tenant did not wait for them"
        );
    }
}

/// After five failures in a row an endpoint is paused as a whole; when the
/// pause is over one probe decides, and a success closes the circuit.
#[tokio::test]
async fn an_endpoint_that_keeps_failing_is_paused_then_probed() {
    let app = TestApp::with()
        .var("PARLEY_WEBHOOK_ALLOW_PRIVATE", "true")
        .var("PARLEY_WEBHOOK_POLL_INTERVAL", "20ms")
        .var("PARLEY_WEBHOOK_RETRY_SCHEDULE", "5s,5s,5s")
        .start()
        .await;
    let f = app.fixture("acme", &[]).await;
    let admin = app.login("admin@acme.example.com").await;
    let receiver = Receiver::start().await;
    // Five failures pause the endpoint. A sixth delivery (there are six
    // events) may already be out when the first failure is counted (on
    // PostgreSQL outcomes commit side by side): it fails too, so the
    // count does not depend on that timing.
    receiver.reply(&vec![Reply::Status(500); 6]);
    let (id, _) = register(&app, &admin, &receiver.url, Some(json!(["message.created"]))).await;
    let public_id = app.open_conversation("/api", &f.token, "v", "start").await;
    for n in 0..5 {
        app.post_message("/api", &f.token, &public_id, &format!("m{n}")).await;
    }
    for _ in 0..5 {
        receiver.next().await;
    }
    let webhook = eventually(|| async {
        let (_, list) = app.authed(Method::GET, "/api/v1/admin/webhooks", &admin, None).await;
        let w = list["webhooks"][0].clone();
        (w["consecutive_failures"].as_u64() >= Some(5) && !w["paused_until"].is_null()).then_some(w)
    })
    .await;
    assert_eq!(webhook["paused_until"], "2026-01-01T00:00:30.000Z", "paused 30 s after the fifth failure");

    // The retries fall due after 5 s, but the endpoint is paused until 30 s.
    // The sixth delivery may have been out when the pause began (see
    // above): its attempt may still be recorded, and no other.
    let before = attempts_of(&app, &admin, id).await;
    app.clock.advance(Duration::from_secs(10));
    app.post_message("/api", &f.token, &public_id, "while paused").await;
    assert!(attempts_of(&app, &admin, id).await <= before.max(6), "nothing is attempted while paused");
    receiver.clear_script();

    app.clock.advance(Duration::from_secs(21));
    let probe = receiver.next().await;
    assert_eq!(probe.json()["event"], "message.created");
    for _ in 0..5 {
        receiver.next().await;
    }
    let (_, list) = app.authed(Method::GET, "/api/v1/admin/webhooks", &admin, None).await;
    let w = &list["webhooks"][0];
    assert_eq!((w["consecutive_failures"].as_u64(), &w["paused_until"]), (Some(0), &Value::Null), "a success closes the circuit");
}

#[tokio::test]
async fn endpoints_per_tenant_are_bounded() {
    let app = TestApp::with().var("PARLEY_WEBHOOK_ALLOW_PRIVATE", "true").var("PARLEY_WEBHOOK_ENDPOINTS_PER_TENANT", "3").start().await;
    app.fixture("acme", &[]).await;
    app.fixture("globex", &[]).await;
    let admin = app.login("admin@acme.example.com").await;
    for n in 0..3 {
        register(&app, &admin, &format!("http://127.0.0.1:9/hook{n}"), None).await;
    }
    for prefix in PREFIXES {
        let (status, body) =
            app.authed(Method::POST, &format!("{prefix}/admin/webhooks"), &admin, Some(json!({"url": "http://127.0.0.1:9/more"}))).await;
        assert_fields(status, &body, &["url"]);
    }
    let other = app.login("admin@globex.example.com").await;
    let (status, _) = app.authed(Method::POST, "/api/admin/webhooks", &other, Some(json!({"url": "http://127.0.0.1:9/x"}))).await;
    assert_eq!(status, StatusCode::CREATED, "another tenant has its own bound");
}

/// Sixteen attempts out when the endpoint goes down all fail: that is one
/// outage, paused for 30 s, not sixteen that push the pause to an hour.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_burst_of_failures_pauses_the_endpoint_once() {
    let app = TestApp::with()
        .var("PARLEY_WEBHOOK_ALLOW_PRIVATE", "true")
        .var("PARLEY_WEBHOOK_POLL_INTERVAL", "20ms")
        .var("PARLEY_WEBHOOK_RETRY_SCHEDULE", "1h")
        .start()
        .await;
    let f = app.fixture("acme", &[]).await;
    let admin = app.login("admin@acme.example.com").await;
    // Answers 500 once sixteen requests are waiting, so all sixteen are out at once.
    let barrier = std::sync::Arc::new(tokio::sync::Barrier::new(16));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    let hold = barrier.clone();
    let router = axum::Router::new().fallback(move || {
        let hold = hold.clone();
        async move {
            hold.wait().await;
            axum::http::StatusCode::INTERNAL_SERVER_ERROR
        }
    });
    tokio::spawn(async move { axum::serve(listener, router).await });
    let (id, _) = register(&app, &admin, &url, Some(json!(["message.created"]))).await;
    let public_id = app.open_conversation("/api", &f.token, "v", "start").await;
    for n in 0..15 {
        app.post_message("/api", &f.token, &public_id, &format!("m{n}")).await;
    }
    eventually(|| async { (attempts_of(&app, &admin, id).await == 16).then_some(()) }).await;
    let (_, list) = app.authed(Method::GET, "/api/v1/admin/webhooks", &admin, None).await;
    let w = &list["webhooks"][0];
    assert_eq!(w["consecutive_failures"], 16);
    assert_eq!(w["paused_until"], "2026-01-01T00:00:30.000Z", "one pause of 30 s: {w}");
}

/// A dead endpoint's deliveries wait while it is paused without making the
/// platform's health degraded, and they are given up once their retry
/// schedule's span has passed, so nothing waits for ever.
#[tokio::test]
async fn a_dead_endpoint_neither_degrades_health_nor_keeps_its_deliveries_for_ever() {
    let app = TestApp::with()
        .var("PARLEY_WEBHOOK_ALLOW_PRIVATE", "true")
        .var("PARLEY_WEBHOOK_POLL_INTERVAL", "20ms")
        .var("PARLEY_WEBHOOK_RETRY_SCHEDULE", "5s,5s")
        .var("PARLEY_HEALTH_QUEUE_MAX_AGE", "10s")
        .var("PARLEY_SWEEP_INTERVAL", "20ms")
        .start()
        .await;
    let f = app.fixture("acme", &[]).await;
    let admin = app.login("admin@acme.example.com").await;
    // Nothing listens there: every attempt is refused at once.
    let dead = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", dead.local_addr().unwrap());
    drop(dead);
    let (id, _) = register(&app, &admin, &url, Some(json!(["message.created"]))).await;
    let public_id = app.open_conversation("/api", &f.token, "v", "start").await;
    for n in 0..5 {
        app.post_message("/api", &f.token, &public_id, &format!("m{n}")).await;
    }
    eventually(|| async {
        let (_, list) = app.authed(Method::GET, "/api/v1/admin/webhooks", &admin, None).await;
        (!list["webhooks"][0]["paused_until"].is_null()).then_some(())
    })
    .await;

    // Retries are due, but the endpoint is paused: that is not lag.
    app.clock.advance(Duration::from_secs(20));
    let (_, health) = app.get("/health").await;
    let webhooks = &health["checks"]["webhooks"];
    assert_eq!((webhooks["status"].as_str(), webhooks["lag_seconds"].as_u64()), (Some("ok"), Some(0)), "{health}");

    app.clock.advance(Duration::from_secs(120));
    eventually(|| async {
        let (_, log) = app.authed(Method::GET, &format!("/api/v1/admin/webhooks/{id}/deliveries"), &admin, None).await;
        let all = log["deliveries"].as_array().unwrap();
        (all.len() == 6 && all.iter().all(|d| d["status"] == "failed")).then_some(())
    })
    .await;
}
