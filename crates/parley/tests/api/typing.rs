//! Typing indicators: the visitor's reach the operators who see the
//! conversation, an operator's reach the visitor's widget, through every
//! instance; they are never stored, so a replay, a catch-up and the
//! webhooks never bring one; a sender is passed on at most once every two
//! seconds; and nobody else hears them.

use std::time::Duration;

use parley_domain::model::Role;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::helpers::*;
use crate::sse::{self, EventStream, Frame};

async fn operator_stream(app: &TestApp, token: &str) -> EventStream {
    let auth = format!("Bearer {token}");
    sse::open_ok(app, "/api/v1/mobile/events", &[("authorization", auth.as_str())]).await
}

async fn widget_stream(app: &TestApp, token: &str, public_id: &str, cursor: &str) -> EventStream {
    sse::open_ok(app, &format!("/api/v1/widget/conversations/{public_id}/events?token={token}&last_event_id={cursor}"), &[]).await
}

async fn cursor(app: &TestApp, token: &str, public_id: &str) -> String {
    let (status, body) = app.get(&format!("/api/v1/widget/conversations/{public_id}/messages?token={token}")).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body["cursor"].as_str().unwrap().to_owned()
}

async fn visitor_types(app: &TestApp, token: &str, public_id: &str) -> (StatusCode, Value) {
    app.post(&format!("/api/v1/widget/conversations/{public_id}/typing"), json!({"token": token})).await
}

async fn operator_types(app: &TestApp, bearer: &str, id: i64) -> (StatusCode, Value) {
    app.authed(Method::POST, &format!("/api/v1/mobile/conversations/{id}/typing"), bearer, None).await
}

/// The next event (comments skipped) within `wait`, or `None`.
async fn next_event(stream: &mut EventStream, wait: Duration) -> Option<(Option<String>, String, Value)> {
    let deadline = tokio::time::Instant::now() + wait;
    loop {
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        match stream.frame_within(left).await {
            Ok(Some(Frame::Event { id, event, data })) => return Some((id, event, data)),
            Ok(Some(Frame::Comment(_))) => continue,
            Ok(None) | Err(()) => return None,
        }
    }
}

/// `next_event`, past what the client has already read: the
/// conversation's opening and its messages up to `seen`. On PostgreSQL
/// their entries can reach a stream after the read that showed them, when
/// another transaction was still running at that read; a client drops
/// them by their ids.
async fn next_news(stream: &mut EventStream, wait: Duration, seen: i64) -> Option<(Option<String>, String, Value)> {
    loop {
        let event = next_event(stream, wait).await?;
        let known = event.1 == "conversation.created"
            || (event.1 == "message.created" && event.2["message"]["id"].as_i64().is_some_and(|id| id <= seen));
        if !known {
            return Some(event);
        }
    }
}

async fn conversation_id(app: &TestApp, bearer: &str, public_id: &str) -> i64 {
    let (_, list) = app.authed(Method::GET, "/api/v1/mobile/conversations?per_page=100", bearer, None).await;
    list["conversations"].as_array().unwrap().iter().find(|c| c["public_id"] == public_id).expect("the conversation")["id"]
        .as_i64()
        .unwrap()
}

#[tokio::test]
async fn each_side_sees_the_other_typing_once_and_never_again_in_a_replay() {
    let app = TestApp::spawn().await;
    let f = app.fixture("acme", &[]).await;
    let admin = app.login("admin@acme.example.com").await;
    let public_id = app.open_conversation("/api/v1", &f.token, "v1", "hello").await;
    let id = conversation_id(&app, &admin, &public_id).await;
    let start = cursor(&app, &f.token, &public_id).await;
    let (_, read) = app.get(&format!("/api/v1/widget/conversations/{public_id}/messages?token={}", f.token)).await;
    let hello = read["messages"][0]["id"].as_i64().expect("the first message");
    let mut operators = operator_stream(&app, &admin).await;
    let mut visitor = widget_stream(&app, &f.token, &public_id, &start).await;

    let (status, body) = visitor_types(&app, &f.token, &public_id).await;
    assert_eq!(status, StatusCode::NO_CONTENT, "{body}");
    let (id_field, kind, data) = next_news(&mut operators, Duration::from_secs(10), hello).await.expect("the operator hears it");
    assert_eq!(kind, "typing");
    assert_eq!(id_field, None, "not a cursor: a resume never brings it back");
    assert_eq!(data["conversation_id"], id);
    assert_eq!(data["public_id"], public_id.as_str());
    assert_eq!(data["sender"]["type"], "visitor");
    assert_eq!(data["expires_in_ms"], 5000);

    // A second one at once is answered the same and not passed on.
    let (status, _) = visitor_types(&app, &f.token, &public_id).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, _) = operator_types(&app, &admin, id).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (_, kind, data) = next_news(&mut visitor, Duration::from_secs(10), hello).await.expect("the visitor hears the operator");
    assert_eq!((kind.as_str(), data["sender"]["type"].as_str()), ("typing", Some("operator")), "{data}");
    assert!(data["sender"]["name"].as_str().is_some_and(|n| !n.is_empty()), "the operator's name: {data}");
    assert!(data.get("conversation_id").is_none(), "the widget gets no internal id: {data}");
    app.authed(Method::POST, &format!("/api/v1/mobile/conversations/{id}/messages"), &admin, Some(json!({"body": "Hi!"}))).await;
    let (_, kind, _) = next_news(&mut operators, Duration::from_secs(10), hello).await.expect("the reply");
    assert_eq!(kind, "message.created", "the second visitor indicator was dropped, and an operator's own is not echoed to operators");
    let (_, kind, _) = next_news(&mut visitor, Duration::from_secs(10), hello).await.expect("the reply");
    assert_eq!(kind, "message.created", "the visitor's own indicators are not echoed to it");

    // Replays, catch-ups and webhooks never hold one.
    let mut replay = widget_stream(&app, &f.token, &public_id, &start).await;
    let (_, kind, _) = next_event(&mut replay, Duration::from_secs(10)).await.expect("the replay");
    assert_eq!(kind, "message.created");
    let (_, catchup) = app.authed(Method::GET, "/api/v1/mobile/events", &admin, None).await;
    assert!(!catchup.to_string().contains("typing"), "{catchup}");
    assert!(!app.events("acme").await.iter().any(|e| e.contains("typing")), "no webhook event");
}

#[tokio::test]
async fn nobody_else_hears_and_nobody_else_may_send() {
    let app = TestApp::spawn().await;
    let acme = app.fixture("acme", &[]).await;
    let globex = app.fixture("globex", &[]).await;
    let second_site = app.site("acme-docs", acme.scope.tenant, &[]).await;
    app.operator(&acme, "agent@acme.example", Role::Agent, &[second_site.scope.site]).await;
    let admin = app.login("admin@acme.example.com").await;
    let agent = app.login("agent@acme.example").await;
    let globex_admin = app.login("admin@globex.example.com").await;
    let public_id = app.open_conversation("/api/v1", &acme.token, "v1", "hello").await;
    let id = conversation_id(&app, &admin, &public_id).await;
    let other = app.open_conversation("/api/v1", &acme.token, "v2", "hello").await;
    let other_cursor = cursor(&app, &acme.token, &other).await;

    let mut globex_stream = operator_stream(&app, &globex_admin).await;
    let mut agent_stream = operator_stream(&app, &agent).await;
    let mut other_visitor = widget_stream(&app, &acme.token, &other, &other_cursor).await;
    let mut admin_stream = operator_stream(&app, &admin).await;

    // Another tenant's or another site's token cannot name the conversation.
    for token in [&globex.token, &second_site.token] {
        let (status, body) = visitor_types(&app, token, &public_id).await;
        assert_error(status, &body, StatusCode::NOT_FOUND, "not_found");
    }
    for unknown in ["conv_unknown".to_owned(), "x".repeat(5_000), "conv_<script>".to_owned()] {
        let (status, body) = visitor_types(&app, &acme.token, &unknown).await;
        assert_error(status, &body, StatusCode::NOT_FOUND, "not_found");
    }
    let (status, body) = app.post(&format!("/api/v1/widget/conversations/{public_id}/typing"), json!({})).await;
    assert_fields(status, &body, &["token"]);
    for who in [&globex_admin, &agent] {
        let (status, body) = operator_types(&app, who, id).await;
        assert_error(status, &body, StatusCode::NOT_FOUND, "not_found");
    }
    let (status, body) = app.post(&format!("/api/v1/mobile/conversations/{id}/typing"), json!({})).await;
    assert_error(status, &body, StatusCode::UNAUTHORIZED, "unauthenticated");
    for bad in ["0", "x", "99999999999999999999"] {
        let (status, body) = app.authed(Method::POST, &format!("/api/v1/mobile/conversations/{bad}/typing"), &admin, None).await;
        assert_error(status, &body, StatusCode::NOT_FOUND, "not_found");
    }

    let (status, _) = visitor_types(&app, &acme.token, &public_id).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, _) = operator_types(&app, &admin, id).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    // On PostgreSQL the entries of the conversations opened above may
    // still reach the admin's stream first: they are the admin's to see.
    let heard = loop {
        let (_, kind, data) = next_event(&mut admin_stream, Duration::from_secs(10)).await.expect("the admin hears it");
        if kind == "typing" {
            break data;
        }
    };
    assert_eq!(heard["public_id"], public_id.as_str());
    for stream in [&mut globex_stream, &mut agent_stream] {
        if let Some((_, kind, data)) = next_event(stream, Duration::from_millis(500)).await {
            panic!("heard {kind} {data}");
        }
    }
    // The other visitor's own conversation may still bring its entries;
    // nothing of this one's typing.
    while let Some((_, kind, data)) = next_event(&mut other_visitor, Duration::from_millis(500)).await {
        assert_ne!(kind, "typing", "heard {data}");
    }
}

#[tokio::test]
async fn an_indicator_reaches_the_streams_of_another_instance() {
    if backend() != "postgres" {
        return;
    }
    let a = TestApp::spawn().await;
    let b = TestApp::with().var("PARLEY_DATABASE_URL", &a.database_url).start().await;
    let f = a.fixture("acme", &[]).await;
    let admin = b.login("admin@acme.example.com").await;
    let public_id = a.open_conversation("/api/v1", &f.token, "v1", "hello").await;
    let id = conversation_id(&b, &admin, &public_id).await;
    let start = cursor(&a, &f.token, &public_id).await;
    let mut operators = operator_stream(&b, &admin).await;
    let mut visitor = widget_stream(&a, &f.token, &public_id, &start).await;

    // Sent through A, heard on B's operator stream; and back.
    let (status, _) = visitor_types(&a, &f.token, &public_id).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (_, kind, data) = next_event(&mut operators, Duration::from_secs(10)).await.expect("heard on the other instance");
    assert_eq!((kind.as_str(), data["public_id"].as_str()), ("typing", Some(public_id.as_str())));
    let (status, _) = operator_types(&b, &admin, id).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (_, kind, data) = next_event(&mut visitor, Duration::from_secs(10)).await.expect("heard on the other instance");
    assert_eq!((kind.as_str(), data["sender"]["type"].as_str()), ("typing", Some("operator")));
}

#[tokio::test]
async fn one_address_cannot_flood_the_indicators() {
    let app = TestApp::spawn().await;
    let f = app.fixture("acme", &[]).await;
    // Sent at once: however slowly they are served, 300 outrun the
    // address's burst of 40 and its 20 a second.
    let ids: Vec<String> = (0..300).map(|i| format!("conv_madeup{i}")).collect();
    let answers = futures::future::join_all(ids.iter().map(|id| visitor_types(&app, &f.token, id))).await;
    let limited = answers.iter().filter(|(status, _)| *status == StatusCode::TOO_MANY_REQUESTS).count();
    assert!(answers.iter().all(|(s, _)| matches!(*s, StatusCode::NOT_FOUND | StatusCode::TOO_MANY_REQUESTS)));
    assert!(limited > 0, "a burst of indicators from one address is cut short");
}
