//! `client_message_id` on the three message POSTs: a retry after a lost
//! answer creates nothing and answers exactly as the first request did,
//! whoever retries and however many at once.

use futures::future::join_all;
use parley_domain::model::Role;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::helpers::*;

async fn widget_messages(app: &TestApp, token: &str, public_id: &str) -> Vec<Value> {
    let (status, body) = app.get(&format!("/api/widget/conversations/{public_id}/messages?token={token}")).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body["messages"].as_array().unwrap().clone()
}

#[tokio::test]
async fn a_repeated_open_answers_the_conversation_it_opened() {
    let app = TestApp::spawn().await;
    let f = app.fixture("acme", &[]).await;
    for prefix in PREFIXES {
        let visitor = format!("visitor{prefix}");
        let open =
            json!({"token": f.token, "visitor_uuid": visitor, "message": "hello", "privacy_accepted": true, "client_message_id": "c-1"});
        let (status, first) = app.post(&format!("{prefix}/widget/conversations"), open.clone()).await;
        assert_eq!(status, StatusCode::CREATED, "{first}");
        assert_eq!(first["messages"][0]["client_message_id"], "c-1");
        let (status, again) = app.post(&format!("{prefix}/widget/conversations"), open).await;
        assert_eq!(status, StatusCode::CREATED, "{again}");
        assert_eq!(again["conversation"]["public_id"], first["conversation"]["public_id"]);
        assert_eq!(again["messages"][0]["id"], first["messages"][0]["id"]);
        assert_eq!(again["messages"].as_array().unwrap().len(), 1);

        // Another visitor's open with the same id is its own.
        let other = json!({"token": f.token, "visitor_uuid": format!("{visitor}-2"), "message": "hi", "privacy_accepted": true, "client_message_id": "c-1"});
        let (status, theirs) = app.post(&format!("{prefix}/widget/conversations"), other).await;
        assert_eq!(status, StatusCode::CREATED, "{theirs}");
        assert_ne!(theirs["conversation"]["public_id"], first["conversation"]["public_id"]);
    }
    let admin = app.login("admin@acme.example.com").await;
    let (_, list) = app.authed(Method::GET, "/api/mobile/conversations", &admin, None).await;
    assert_eq!(list["conversations"].as_array().unwrap().len(), 4, "two visitors on each prefix, one conversation each");
}

#[tokio::test]
async fn a_repeated_visitor_message_creates_nothing_and_answers_the_first() {
    let app = TestApp::spawn().await;
    let f = app.fixture("acme", &[]).await;
    let public_id = app.open_conversation("/api", &f.token, "v1", "hello").await;
    let path = format!("/api/v1/widget/conversations/{public_id}/messages");
    let send = json!({"token": f.token, "body": "where is my order?", "client_message_id": "m-1"});
    let (status, first) = app.post(&path, send.clone()).await;
    assert_eq!(status, StatusCode::CREATED, "{first}");
    let (status, again) = app.post(&path, send).await;
    assert_eq!(status, StatusCode::CREATED, "{again}");
    assert_eq!(again["message"], first["message"], "the same message, client id included");
    assert_eq!(first["message"]["client_message_id"], "m-1");

    // Retries racing each other still make one message.
    let racing = json!({"token": f.token, "body": "are you there?", "client_message_id": "m-2"});
    let answers = join_all((0..6).map(|_| app.post(&path, racing.clone()))).await;
    let ids: Vec<&Value> = answers
        .iter()
        .map(|(s, b)| {
            assert_eq!(*s, StatusCode::CREATED, "{b}");
            &b["message"]["id"]
        })
        .collect();
    assert!(ids.windows(2).all(|w| w[0] == w[1]), "{ids:?}");

    let bodies: Vec<String> =
        widget_messages(&app, &f.token, &public_id).await.iter().map(|m| m["body"].as_str().unwrap().to_owned()).collect();
    assert_eq!(bodies, ["hello", "where is my order?", "are you there?"]);
    let plain = widget_messages(&app, &f.token, &public_id).await;
    assert!(plain[0].get("client_message_id").is_none(), "a message sent without one carries none: {}", plain[0]);
}

#[tokio::test]
async fn an_operator_reply_is_idempotent_per_operator_and_conversation() {
    let app = TestApp::spawn().await;
    let f = app.fixture("acme", &[]).await;
    app.operator(&f, "agent@acme.example.com", Role::Agent, &[f.scope.site]).await;
    let (admin, agent) = (app.login("admin@acme.example.com").await, app.login("agent@acme.example.com").await);
    let public_id = app.open_conversation("/api", &f.token, "v1", "hello").await;
    app.open_conversation("/api", &f.token, "v2", "another").await;
    let (_, list) = app.authed(Method::GET, "/api/mobile/conversations", &admin, None).await;
    let ids: Vec<i64> = list["conversations"].as_array().unwrap().iter().map(|c| c["id"].as_i64().unwrap()).collect();
    let reply = |token: &str, id: i64, client: &str| {
        let (token, client) = (token.to_owned(), client.to_owned());
        let app = &app;
        async move {
            let (status, body) = app
                .authed(
                    Method::POST,
                    &format!("/api/mobile/conversations/{id}/messages"),
                    &token,
                    Some(json!({"body": "on it", "client_message_id": client})),
                )
                .await;
            assert_eq!(status, StatusCode::OK, "{body}");
            body["message"]["id"].as_i64().unwrap()
        }
    };
    let [older, newer] = [ids[1], ids[0]];
    let first = reply(&admin, older, "r-1").await;
    assert_eq!(reply(&admin, older, "r-1").await, first, "a repeat answers the first");
    assert_ne!(reply(&agent, older, "r-1").await, first, "another operator's id is its own");
    assert_ne!(reply(&admin, newer, "r-1").await, first, "so is another conversation's");
    // A visitor using the operator's id does not collide either.
    let (status, body) = app
        .post(
            &format!("/api/widget/conversations/{public_id}/messages"),
            json!({"token": f.token, "body": "x", "client_message_id": "r-1"}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_ne!(body["message"]["id"].as_i64().unwrap(), first);

    let (_, messages) = app.authed(Method::GET, &format!("/api/mobile/conversations/{older}/messages"), &admin, None).await;
    let with_id: Vec<&Value> = messages["messages"].as_array().unwrap().iter().filter(|m| m["client_message_id"] == "r-1").collect();
    assert_eq!(with_id.len(), 3, "admin's, agent's and the visitor's: {messages}");
}

#[tokio::test]
async fn a_malformed_client_message_id_is_refused_on_every_send() {
    let app = TestApp::spawn().await;
    let f = app.fixture("acme", &[]).await;
    let admin = app.login("admin@acme.example.com").await;
    let public_id = app.open_conversation("/api", &f.token, "v1", "hello").await;
    let (_, list) = app.authed(Method::GET, "/api/mobile/conversations", &admin, None).await;
    let id = list["conversations"][0]["id"].as_i64().unwrap();
    for bad in [json!(""), json!("   "), json!("x".repeat(65)), json!("a\u{0007}b"), json!(12), json!(["a"])] {
        let (status, body) = app
            .post(
                "/api/widget/conversations",
                json!({"token": f.token, "visitor_uuid": "v2", "message": "hi", "privacy_accepted": true, "client_message_id": bad}),
            )
            .await;
        assert_fields(status, &body, &["client_message_id"]);
        let (status, body) = app
            .post(
                &format!("/api/widget/conversations/{public_id}/messages"),
                json!({"token": f.token, "body": "hi", "client_message_id": bad}),
            )
            .await;
        assert_fields(status, &body, &["client_message_id"]);
        let (status, body) = app
            .authed(
                Method::POST,
                &format!("/api/mobile/conversations/{id}/messages"),
                &admin,
                Some(json!({"body": "hi", "client_message_id": bad})),
            )
            .await;
        assert_fields(status, &body, &["client_message_id"]);
    }
    assert_eq!(widget_messages(&app, &f.token, &public_id).await.len(), 1, "nothing was added");
    let longest = "x".repeat(64);
    let (status, body) = app
        .post(
            &format!("/api/widget/conversations/{public_id}/messages"),
            json!({"token": f.token, "body": "hi", "client_message_id": longest}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "64 characters are fine: {body}");
}
