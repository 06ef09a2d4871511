use reqwest::{Method, StatusCode};
use serde_json::json;

use crate::helpers::*;

#[tokio::test]
async fn opening_a_conversation_returns_it_with_the_first_message() {
    let app = TestApp::spawn().await;
    let f = app.fixture("acme", &[]).await;
    for prefix in PREFIXES {
        app.post(&format!("{prefix}/widget/visitors"), json!({"token": f.token, "uuid": "ann", "name": "Ann"})).await;
        let (status, body) = app
            .post(
                &format!("{prefix}/widget/conversations"),
                json!({"token": f.token, "visitor_uuid": "ann", "message": " Where is my order? ", "privacy_accepted": true,
                       "subject": "Order 42", "current_url": "https://acme.example/orders"}),
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        let c = &body["conversation"];
        assert!(c["public_id"].as_str().unwrap().len() >= 22, "public ids carry at least 128 random bits");
        assert_eq!(c["status"], "unassigned");
        assert_eq!(c["subject"], "Order 42");
        assert_eq!(c["created_at"], "2026-01-01T00:00:00.000Z");
        let messages = body["messages"].as_array().unwrap();
        assert_eq!(messages.len(), 1);
        assert_eq!(messages[0]["body"], "Where is my order?");
        assert_eq!(messages[0]["sender"], json!({"type": "visitor", "name": "Ann"}));
        assert!(messages[0]["id"].as_i64().unwrap() > 0);
    }
    // conversation.created and message.created for each conversation.
    assert_eq!(app.events("acme").await, ["conversation.created", "message.created", "conversation.created", "message.created"]);
}

#[tokio::test]
async fn an_unregistered_visitor_is_created_on_the_way() {
    let app = TestApp::spawn().await;
    let f = app.fixture("acme", &[]).await;
    app.open_conversation("/api", &f.token, "new-visitor", "hi").await;
    let (status, _) = app.post("/api/widget/visitors", json!({"token": f.token, "uuid": "new-visitor"})).await;
    assert_eq!(status, StatusCode::OK, "the visitor exists now");
}

#[tokio::test]
async fn privacy_must_be_accepted() {
    let app = TestApp::spawn().await;
    let f = app.fixture("acme", &[]).await;
    for prefix in PREFIXES {
        let path = format!("{prefix}/widget/conversations");
        for privacy in [json!(false), json!("true"), json!(null)] {
            let (status, body) =
                app.post(&path, json!({"token": f.token, "visitor_uuid": "v", "message": "hi", "privacy_accepted": privacy})).await;
            assert_fields(status, &body, &["privacy_accepted"]);
        }
    }
    assert_eq!(app.events("acme").await.len(), 0, "nothing was written");
}

#[tokio::test]
async fn every_bad_field_is_named() {
    let app = TestApp::spawn().await;
    let f = app.fixture("acme", &[]).await;
    for prefix in PREFIXES {
        let path = format!("{prefix}/widget/conversations");
        let (status, body) = app.post(&path, json!({})).await;
        assert_fields(status, &body, &["message", "privacy_accepted", "token", "visitor_uuid"]);
        let (status, body) = app
            .post(
                &path,
                json!({"token": f.token, "visitor_uuid": "v", "message": " \n ", "privacy_accepted": true,
                       "subject": "s".repeat(256), "current_url": "/relative"}),
            )
            .await;
        assert_fields(status, &body, &["current_url", "message", "subject"]);
        let (status, body) =
            app.post(&path, json!({"token": f.token, "visitor_uuid": "v", "message": "x".repeat(5001), "privacy_accepted": true})).await;
        assert_fields(status, &body, &["message"]);
    }
}

#[tokio::test]
async fn unknown_token_and_foreign_origin_are_refused() {
    let app = TestApp::spawn().await;
    let f = app.fixture("acme", &["acme.example"]).await;
    let body = json!({"token": f.token, "visitor_uuid": "v", "message": "hi", "privacy_accepted": true});
    for prefix in PREFIXES {
        let path = format!("{prefix}/widget/conversations");
        let mut unknown = body.clone();
        unknown["token"] = json!("inst_nope");
        let (status, res) = app.post(&path, unknown).await;
        assert_error(status, &res, StatusCode::NOT_FOUND, "not_found");
        let (status, res) = app.send(Method::POST, &path, Some(body.clone()), &[("origin", "https://evil.example")]).await;
        assert_error(status, &res, StatusCode::FORBIDDEN, "origin_not_allowed");
    }
}
