use reqwest::{Method, StatusCode};
use serde_json::json;

use crate::helpers::*;

#[tokio::test]
async fn first_sync_creates_then_later_syncs_update() {
    let app = TestApp::spawn().await;
    let f = app.fixture("acme", &[]).await;
    for prefix in PREFIXES {
        let path = format!("{prefix}/widget/visitors");
        let uuid = format!("visitor-{prefix}");
        let (status, body) = app.post(&path, json!({"token": f.token, "uuid": uuid, "name": "  Ann  "})).await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        assert_eq!(body["visitor"]["uuid"], uuid.as_str());
        assert_eq!(body["visitor"]["name"], "Ann", "names are trimmed");
        assert_eq!(body["visitor"]["email"], serde_json::Value::Null);
        assert_eq!(body["visitor"]["verified"], false);

        let (status, body) = app
            .post(&path, json!({"token": f.token, "uuid": uuid, "email": "ann@example.com", "phone": "+14155550123", "current_url": "https://acme.example/"}))
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(body["visitor"]["name"], "Ann", "fields not sent are kept");
        assert_eq!(body["visitor"]["email"], "ann@example.com");
        assert_eq!(body["visitor"]["phone"], "+14155550123");
    }
}

#[tokio::test]
async fn the_same_uuid_on_two_sites_is_two_visitors() {
    let app = TestApp::spawn().await;
    let a = app.fixture("acme", &[]).await;
    let b = app.fixture("globex", &[]).await;
    let (s1, _) = app.post("/api/widget/visitors", json!({"token": a.token, "uuid": "shared", "name": "A"})).await;
    let (s2, body) = app.post("/api/widget/visitors", json!({"token": b.token, "uuid": "shared"})).await;
    assert_eq!((s1, s2), (StatusCode::CREATED, StatusCode::CREATED));
    assert_eq!(body["visitor"]["name"], serde_json::Value::Null, "nothing of the other tenant's visitor shows");
}

#[tokio::test]
async fn every_bad_field_is_named() {
    let app = TestApp::spawn().await;
    let f = app.fixture("acme", &[]).await;
    for prefix in PREFIXES {
        let path = format!("{prefix}/widget/visitors");
        let (status, body) = app.post(&path, json!({})).await;
        assert_fields(status, &body, &["token", "uuid"]);
        let (status, body) = app
            .post(
                &path,
                json!({
                    "token": f.token,
                    "uuid": "x".repeat(129),
                    "name": "n".repeat(256),
                    "email": "not-an-email",
                    "phone": "0044 20 1234",
                    "current_url": "javascript:alert(1)",
                }),
            )
            .await;
        assert_fields(status, &body, &["current_url", "email", "name", "phone", "uuid"]);
        let (status, body) = app.post(&path, json!({"token": f.token, "uuid": "", "email": 5})).await;
        assert_fields(status, &body, &["email", "uuid"]);
        let (status, body) = app.post(&path, json!({"token": f.token, "uuid": "a\u{0007}b"})).await;
        assert_fields(status, &body, &["uuid"]);
    }
}

#[tokio::test]
async fn a_rejected_sync_changes_nothing() {
    let app = TestApp::spawn().await;
    let f = app.fixture("acme", &[]).await;
    app.post("/api/widget/visitors", json!({"token": f.token, "uuid": "v", "name": "Ann"})).await;
    let (status, _) = app.post("/api/widget/visitors", json!({"token": f.token, "uuid": "v", "name": "Bob", "email": "bad"})).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    let (_, body) = app.post("/api/widget/visitors", json!({"token": f.token, "uuid": "v"})).await;
    assert_eq!(body["visitor"]["name"], "Ann");
}

#[tokio::test]
async fn unknown_token_and_foreign_origin_are_refused() {
    let app = TestApp::spawn().await;
    let f = app.fixture("acme", &["acme.example"]).await;
    for prefix in PREFIXES {
        let path = format!("{prefix}/widget/visitors");
        let (status, body) = app.post(&path, json!({"token": "inst_nope", "uuid": "v"})).await;
        assert_error(status, &body, StatusCode::NOT_FOUND, "not_found");
        let (status, body) =
            app.send(Method::POST, &path, Some(json!({"token": f.token, "uuid": "v"})), &[("origin", "https://evil.example")]).await;
        assert_error(status, &body, StatusCode::FORBIDDEN, "origin_not_allowed");
    }
}
