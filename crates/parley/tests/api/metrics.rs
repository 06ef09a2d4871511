//! `GET /metrics`: present, in the Prometheus text format, and counting.

use parley_domain::model::Role;
use reqwest::{Method, StatusCode};
use serde_json::json;

use crate::helpers::*;

/// The value of the first sample line that starts with `prefix` once its
/// `parley_instance` label (on every line) is left out.
fn sample(text: &str, prefix: &str) -> f64 {
    text.lines()
        .map(without_instance)
        .find(|l| l.starts_with(prefix))
        .and_then(|l| l.rsplit(' ').next().and_then(|v| v.parse().ok()))
        .unwrap_or(0.0)
}

fn without_instance(line: &str) -> String {
    let Some(start) = line.find("{parley_instance=\"") else { return line.to_owned() };
    let value_end = line[start + 18..].find('"').map_or(line.len(), |i| start + 18 + i + 1);
    let rest = &line[value_end..];
    match rest.strip_prefix(',') {
        Some(more) => format!("{}{{{more}", &line[..start]),
        None => format!("{}{}", &line[..start], rest.strip_prefix('}').unwrap_or(rest)),
    }
}

/// Every sample names the instance that counted it.
#[tokio::test]
async fn every_sample_names_its_instance() {
    let named = TestApp::with().var("PARLEY_METRICS_TOKEN", METRICS_TOKEN).var("PARLEY_INSTANCE", "web-2").start().await;
    let text = scrape_metrics(&named).await;
    let samples: Vec<&str> = text.lines().filter(|l| !l.starts_with('#') && !l.is_empty()).collect();
    assert!(!samples.is_empty());
    for line in samples {
        assert!(line.contains("{parley_instance=\"web-2\""), "{line}");
    }
    // Unnamed, an instance is its host and port: distinct per process.
    let default = TestApp::with().var("PARLEY_METRICS_TOKEN", METRICS_TOKEN).start().await;
    let port = default.base.rsplit(':').next().unwrap().to_owned();
    let text = scrape_metrics(&default).await;
    let line = text.lines().find(|l| l.starts_with("parley_sweeps_total")).expect("sweeps");
    assert!(line.contains(&format!(":{port}\"}}")), "{line}");
}

#[tokio::test]
async fn metrics_count_requests_messages_attempts_and_state() {
    let app = TestApp::with()
        .var("PARLEY_WEBHOOK_ALLOW_PRIVATE", "true")
        .var("PARLEY_WEBHOOK_POLL_INTERVAL", "20ms")
        .var("PARLEY_METRICS_TOKEN", METRICS_TOKEN)
        .start()
        .await;
    let f = app.fixture("acme", &[]).await;
    let before = scrape_metrics(&app).await;
    for name in ["parley_webhook_queue_depth", "parley_open_conversations", "parley_sweeps"] {
        assert!(before.contains(&format!("# TYPE {name}")), "{name} missing:\n{before}");
    }

    let admin = app.login("admin@acme.example.com").await;
    let receiver = crate::receiver::Receiver::start().await;
    app.authed(Method::POST, "/api/admin/webhooks", &admin, Some(json!({"url": receiver.url, "events": ["conversation.created"]}))).await;
    let public_id = app.open_conversation("/api", &f.token, "ann", "hi").await;
    app.post_message("/api", &f.token, &public_id, "again").await;
    receiver.next().await;

    let after = eventually(|| async {
        let text = scrape_metrics(&app).await;
        (sample(&text, "parley_webhook_attempts_total{outcome=\"delivered\"}") >= 1.0).then_some(text)
    })
    .await;
    assert_eq!(sample(&after, "parley_messages_created_total{sender=\"visitor\"}"), 2.0);
    assert_eq!(sample(&after, "parley_open_conversations"), 1.0);
    let route = "parley_http_requests_total{route=\"/api/widget/conversations\",method=\"POST\",status=\"201\"}";
    assert_eq!(sample(&after, route), 1.0, "{after}");
    let latency = "parley_http_request_duration_seconds_count{route=\"/api/widget/conversations\",method=\"POST\"}";
    assert_eq!(sample(&after, latency), 1.0);
    assert!(after.contains("# TYPE parley_http_request_duration_seconds histogram"));
    assert!(!after.contains(&f.token) && !after.contains(&public_id), "tokens and ids never appear in labels");

    // A message is counted once it is committed, wherever it was sent
    // from: a repeat that added nothing counts for nothing, a note is not
    // a message to the visitor.
    for _ in 0..2 {
        let body = json!({"token": f.token, "body": "sent twice", "client_message_id": "c-1"});
        let (status, _) = app.post(&format!("/api/widget/conversations/{public_id}/messages"), body).await;
        assert_eq!(status, StatusCode::CREATED);
    }
    let (_, list) = app.authed(Method::GET, "/api/mobile/conversations", &admin, None).await;
    let id = list["conversations"][0]["id"].as_i64().unwrap();
    let reply = json!({"body": "an answer", "client_message_id": "r-1"});
    for _ in 0..2 {
        app.authed(Method::POST, &format!("/api/mobile/conversations/{id}/messages"), &admin, Some(reply.clone())).await;
    }
    app.transfer_with_note(&admin, id, json!(app.operator(&f, "bea@acme.example.com", Role::Admin, &[]).await), "a note").await;
    let text = scrape_metrics(&app).await;
    assert_eq!(sample(&text, "parley_messages_created_total{sender=\"visitor\"}"), 3.0, "{text}");
    assert_eq!(sample(&text, "parley_messages_created_total{sender=\"operator\"}"), 1.0, "the note is not counted");
}

#[tokio::test]
async fn metrics_are_not_public_by_default() {
    let app = TestApp::spawn().await;
    let (status, body) = app.get("/metrics").await;
    assert_error(status, &body, StatusCode::NOT_FOUND, "not_found");
    let (status, _) = app.send(Method::GET, "/metrics", None, &[("authorization", "Bearer anything-at-all-really")]).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "no token is configured, so none opens it");
}

#[tokio::test]
async fn metrics_on_the_main_address_need_the_token() {
    let app = TestApp::with().var("PARLEY_METRICS_TOKEN", METRICS_TOKEN).start().await;
    for auth in [None, Some("Bearer metrics-token-wrong-guess"), Some("Bearer "), Some(METRICS_TOKEN)] {
        let headers: Vec<(&str, &str)> = auth.map(|a| vec![("authorization", a)]).unwrap_or_default();
        let (status, body) = app.send(Method::GET, "/metrics", None, &headers).await;
        assert_error(status, &body, StatusCode::NOT_FOUND, "not_found");
    }
    assert!(scrape_metrics(&app).await.contains("parley_open_conversations"));
}

#[tokio::test]
async fn metrics_can_live_on_their_own_address() {
    let app = TestApp::with().var("PARLEY_METRICS_LISTEN", "127.0.0.1:0").var("PARLEY_METRICS_TOKEN", METRICS_TOKEN).start().await;
    let (status, _) = app.send(Method::GET, "/metrics", None, &[("authorization", &format!("Bearer {METRICS_TOKEN}"))]).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "not on the public address, even with the token");
    let base = app.metrics_base.clone().expect("metrics address");
    let res = app.client.get(format!("{base}/metrics")).send().await.unwrap();
    assert_eq!(res.status(), StatusCode::NOT_FOUND, "the token is required there too");
    let text = scrape_metrics_at(&app, &base).await;
    assert!(text.contains("parley_open_conversations"));
}

#[tokio::test]
async fn odd_methods_do_not_create_new_series() {
    let app = TestApp::with().var("PARLEY_METRICS_TOKEN", METRICS_TOKEN).start().await;
    for n in 0..5 {
        let method = reqwest::Method::from_bytes(format!("ZZ{n}").as_bytes()).unwrap();
        app.client.request(method, app.url("/nothing")).send().await.unwrap();
    }
    let text = scrape_metrics(&app).await;
    assert!(!text.contains("ZZ0"), "client-chosen methods never become label values");
    assert_eq!(sample(&text, "parley_http_requests_total{route=\"unmatched\",method=\"other\",status=\"404\"}"), 5.0);
}

#[tokio::test]
async fn other_methods_on_metrics_look_like_an_unknown_route() {
    let app = TestApp::with().var("PARLEY_METRICS_TOKEN", METRICS_TOKEN).start().await;
    let auth = format!("Bearer {METRICS_TOKEN}");
    for method in [Method::POST, Method::DELETE, Method::PUT] {
        let (status, body) = app.send(method.clone(), "/metrics", None, &[("authorization", &auth)]).await;
        assert_error(status, &body, StatusCode::NOT_FOUND, "not_found");
    }
    let (status, _) = app.send(Method::GET, "/metrics", None, &[("authorization", &format!("bearer {METRICS_TOKEN}"))]).await;
    assert_eq!(status, StatusCode::OK, "the scheme is case-insensitive");
}
