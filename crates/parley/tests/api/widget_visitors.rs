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
        assert_eq!(body["visitor"]["email_hint"], serde_json::Value::Null);
        assert_eq!(body["visitor"]["verified"], false);

        let (status, body) = app
            .post(&path, json!({"token": f.token, "uuid": uuid, "email": "ann@example.com", "phone": "+14155550123", "current_url": "https://acme.example/"}))
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(body["visitor"]["email_hint"], "a***@example.com");
        assert_eq!(body["visitor"]["phone_hint"], "+1*******123");
        let text = body.to_string();
        assert!(!text.contains("ann@example.com") && !text.contains("+14155550123"), "contact details never come back: {text}");
    }
    // What was synchronised is stored: operators see it.
    let admin = app.login("admin@acme.example.com").await;
    app.open_conversation("/api", &f.token, "visitor-/api", "hi").await;
    let (_, list) = app.authed(reqwest::Method::GET, "/api/mobile/conversations", &admin, None).await;
    let visitor = &list["conversations"][0]["visitor"];
    assert_eq!(
        (visitor["name"].as_str(), visitor["email"].as_str()),
        (Some("Ann"), Some("ann@example.com")),
        "fields not sent later are kept"
    );
}

#[tokio::test]
async fn the_same_uuid_on_two_sites_is_two_visitors() {
    let app = TestApp::spawn().await;
    let a = app.fixture("acme", &[]).await;
    let b = app.fixture("globex", &[]).await;
    let (s1, _) = app.post("/api/widget/visitors", json!({"token": a.token, "uuid": "shared", "email": "a@acme.example"})).await;
    let (s2, body) = app.post("/api/widget/visitors", json!({"token": b.token, "uuid": "shared"})).await;
    assert_eq!((s1, s2), (StatusCode::CREATED, StatusCode::CREATED));
    assert_eq!(body["visitor"]["email_hint"], serde_json::Value::Null, "nothing of the other tenant's visitor shows");
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
    app.post("/api/widget/visitors", json!({"token": f.token, "uuid": "v", "email": "ann@example.com"})).await;
    let (status, _) =
        app.post("/api/widget/visitors", json!({"token": f.token, "uuid": "v", "email": "bob@example.com", "phone": "bad"})).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    let (_, body) = app.post("/api/widget/visitors", json!({"token": f.token, "uuid": "v"})).await;
    assert_eq!(body["visitor"]["email_hint"], "a***@example.com");
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
