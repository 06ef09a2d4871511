use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::json;

use crate::helpers::*;

#[tokio::test]
async fn ping_records_the_heartbeat_and_makes_the_installation_healthy() {
    let app = TestApp::spawn().await;
    let f = app.fixture("acme", &["acme.example"]).await;
    for (n, prefix) in PREFIXES.into_iter().enumerate() {
        app.clock.advance(Duration::from_secs(60));
        let (status, body) = app
            .post(
                &format!("{prefix}/widget/ping"),
                json!({"token": f.token, "current_url": "https://www.acme.example/pricing", "installation_type": "web", "version": "0.9.0"}),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(body["installation"]["status"], "healthy");
        assert_eq!(body["site"]["name"], "acme site");
        let expected_seen = if n == 0 { "2026-01-01T00:01:00.000Z" } else { "2026-01-01T00:02:00.000Z" };
        assert_eq!(body["installation"]["last_seen_at"], expected_seen);

        let (_, health) = app.get(&format!("{prefix}/widget/installations/{}/health", f.token)).await;
        assert_eq!(health["widget"]["version"], "0.9.0");
        assert_eq!(health["widget"]["page_host"], "www.acme.example");
        assert_eq!(health["widget"]["installation_type"], "web");
        let warnings = health["warnings"].to_string();
        assert!(!warnings.contains("No heartbeat"), "{warnings}");
        assert!(warnings.contains("older than the current"), "an outdated version is flagged: {warnings}");
    }
    // Only the first heartbeat changed the status: one health event.
    assert_eq!(app.events("acme").await, ["installation.health.changed"]);
}

#[tokio::test]
async fn ping_validates_every_field() {
    let app = TestApp::spawn().await;
    let f = app.fixture("acme", &[]).await;
    for prefix in PREFIXES {
        let path = format!("{prefix}/widget/ping");
        let (status, body) = app.post(&path, json!({})).await;
        assert_fields(status, &body, &["token"]);
        let (status, body) =
            app.post(&path, json!({"token": f.token, "current_url": "ftp://x", "version": 7, "installation_type": "x".repeat(65)})).await;
        assert_fields(status, &body, &["current_url", "installation_type", "version"]);
        let (status, body) = app.post(&path, json!({"token": "inst_unknown"})).await;
        assert_error(status, &body, StatusCode::NOT_FOUND, "not_found");
    }
}

#[tokio::test]
async fn ping_from_a_foreign_origin_is_refused_and_records_nothing() {
    let app = TestApp::spawn().await;
    let f = app.fixture("acme", &["acme.example"]).await;
    let (status, body) =
        app.send(Method::POST, "/api/widget/ping", Some(json!({"token": f.token})), &[("origin", "https://evil.example")]).await;
    assert_error(status, &body, StatusCode::FORBIDDEN, "origin_not_allowed");
    let (_, config) = app.get(&format!("/api/widget/config/{}", f.token)).await;
    assert_eq!(config["installation"]["status"], "pending");
    assert_eq!(app.events("acme").await.len(), 0);
}
