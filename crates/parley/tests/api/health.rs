use reqwest::StatusCode;

use crate::helpers::*;

#[tokio::test]
async fn health_report_has_the_contract_shape_at_every_path() {
    let app = TestApp::spawn().await;
    for path in ["/health", "/api/health", "/api/v1/health"] {
        let (status, body) = app.get(path).await;
        assert_eq!(status, StatusCode::OK, "{path}");
        assert_eq!(body["status"], "ok");
        assert_eq!(body["app"]["name"], "parley");
        assert!(body["app"]["version"].as_str().is_some());
        let port = app.base.rsplit(':').next().unwrap();
        assert!(body["app"]["instance"].as_str().is_some_and(|i| i.ends_with(&format!(":{port}"))), "{body}");
        assert_eq!(body["checked_at"], "2026-01-01T00:00:00.000Z", "checked_at comes from the injected clock");
        assert_eq!(body["checks"]["database"]["status"], "ok");
        assert_eq!(body["checks"]["database"]["backend"], backend());
        assert!(body["checks"]["database"]["latency_ms"].as_f64().is_some());
        assert_eq!(body["checks"]["webhooks"]["pending"], 0);
    }
}

#[tokio::test]
async fn health_names_the_configured_instance() {
    let app = TestApp::with().var("PARLEY_INSTANCE", "web-1").start().await;
    let (_, body) = app.get("/health").await;
    assert_eq!(body["app"]["instance"], "web-1");
}

#[tokio::test]
async fn health_is_down_with_503_when_the_database_is_gone() {
    let app = TestApp::spawn().await;
    app.db.close().await;
    let (status, body) = app.get("/health").await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(body["status"], "down");
    assert_eq!(body["checks"]["database"]["status"], "down");
}

#[tokio::test]
async fn requests_while_the_database_is_gone_get_503_unavailable() {
    let app = TestApp::spawn().await;
    let f = app.fixture("acme", &[]).await;
    app.db.close().await;
    let (status, body) = app.get(&format!("/api/widget/config/{}", f.token)).await;
    assert_error(status, &body, StatusCode::SERVICE_UNAVAILABLE, "unavailable");
    assert!(!body.to_string().contains("sqlite"), "no internals in the message: {body}");
}
