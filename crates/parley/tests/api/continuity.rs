//! What the widget missed: read markers from the widget, the receipts
//! operators see (mobile API and operator feed), and every bad input of
//! the read and transcript routes, in a second tenant and a second site.

use parley_domain::model::Role;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::helpers::*;

/// The conversation's integer id as operators know it.
async fn conversation_id(app: &TestApp, token: &str) -> i64 {
    let (status, body) = app.authed(Method::GET, "/api/v1/mobile/conversations", token, None).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body["conversations"][0]["id"].as_i64().expect("id")
}

async fn reply(app: &TestApp, token: &str, id: i64, text: &str) -> i64 {
    let (status, body) =
        app.authed(Method::POST, &format!("/api/v1/mobile/conversations/{id}/messages"), token, Some(json!({"body": text}))).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body["message"]["id"].as_i64().expect("message id")
}

fn read_at(messages: &Value, id: i64) -> Value {
    messages["messages"].as_array().expect("messages").iter().find(|m| m["id"] == id).expect("the message")["read_by_visitor_at"].clone()
}

#[tokio::test]
async fn the_widget_reads_operator_messages_and_operators_see_the_receipts() {
    let app = TestApp::spawn().await;
    let f = app.fixture("acme", &[]).await;
    let admin = app.login("admin@acme.example.com").await;
    for prefix in PREFIXES {
        let public_id = app.open_conversation(prefix, &f.token, &format!("ann{prefix}"), "hello").await;
        let id = conversation_id(&app, &admin).await;
        let (first, second) = (reply(&app, &admin, id, "one").await, reply(&app, &admin, id, "two").await);
        let messages_path = format!("{prefix}/widget/conversations/{public_id}/messages?token={}", f.token);
        let (_, widget) = app.get(&messages_path).await;
        assert_eq!(read_at(&widget, first), Value::Null, "unread: the widget counts it");
        let (_, events) = app.authed(Method::GET, "/api/v1/mobile/conversations", &admin, None).await;
        let cursor = events["meta"]["cursor"].as_str().expect("cursor").to_owned();

        let read_path = format!("{prefix}/widget/conversations/{public_id}/read");
        let (status, body) = app.post(&read_path, json!({"token": f.token, "message_id": first})).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(body, json!({"message_id": first, "unread_count": 1}));
        let (_, widget) = app.get(&messages_path).await;
        assert!(read_at(&widget, first).is_string(), "{widget}");
        assert_eq!(read_at(&widget, second), Value::Null);

        let (_, mobile) = app.authed(Method::GET, &format!("/api/v1/mobile/conversations/{id}/messages"), &admin, None).await;
        assert!(read_at(&mobile, first).is_string(), "operators see the receipt: {mobile}");
        assert_eq!(read_at(&mobile, second), Value::Null);

        // Operators hear of it on their feed: the conversation, with the
        // last message read and its receipt.
        // (On PostgreSQL an entry is readable once every transaction
        // before it has ended: it may take a moment.)
        let read = eventually(|| async {
            let (status, feed) = app.authed(Method::GET, &format!("/api/v1/mobile/events?after={cursor}"), &admin, None).await;
            assert_eq!(status, StatusCode::OK, "{feed}");
            let events = feed["events"].as_array().expect("events").clone();
            events.into_iter().find(|e| e["event"] == "conversation.updated" && e["data"]["message"]["id"] == first)
        })
        .await;
        assert!(read["data"]["message"]["read_by_visitor_at"].is_string(), "{read}");

        // Never backwards, and reading again changes nothing.
        let (status, body) = app.post(&read_path, json!({"token": f.token, "message_id": second})).await;
        assert_eq!((status, body["unread_count"].as_u64()), (StatusCode::OK, Some(0)));
        let (_, before) = app.get(&messages_path).await;
        let (status, _) = app.post(&read_path, json!({"token": f.token, "message_id": first})).await;
        assert_eq!(status, StatusCode::OK);
        let (_, after) = app.get(&messages_path).await;
        assert_eq!(read_at(&before, second), read_at(&after, second), "a receipt keeps its first time");
        app.authed(Method::POST, &format!("/api/v1/mobile/conversations/{id}/close"), &admin, None).await;
    }
}

#[tokio::test]
async fn bad_read_markers_are_refused_and_change_nothing() {
    let app = TestApp::spawn().await;
    let f = app.fixture("acme", &[]).await;
    let other = app.fixture("globex", &[]).await;
    let second_site = app.site("acme-docs", f.scope.tenant, &[]).await;
    let admin = app.login("admin@acme.example.com").await;
    let public_id = app.open_conversation("/api", &f.token, "ann", "hello").await;
    let id = conversation_id(&app, &admin).await;
    let answer = reply(&app, &admin, id, "an answer").await;
    let elsewhere = app.open_conversation("/api", &f.token, "bob", "another").await;
    let (_, list) = app.get(&format!("/api/widget/conversations/{elsewhere}/messages?token={}", f.token)).await;
    let foreign_message = list["messages"][0]["id"].as_i64().expect("id");
    let path = format!("/api/v1/widget/conversations/{public_id}/read");

    let (status, body) = app.post(&path, json!({"token": f.token, "message_id": foreign_message})).await;
    assert_fields(status, &body, &["message_id"]);
    // A note is not the visitor's to read, nor to learn of.
    let bea = app.operator(&f, "bea@acme.example.com", Role::Admin, &[]).await;
    app.authed(Method::POST, &format!("/api/v1/mobile/conversations/{id}/assign"), &admin, None).await;
    app.transfer_with_note(&admin, id, json!(bea), "a note for bea").await;
    let (_, mobile) = app.authed(Method::GET, &format!("/api/v1/mobile/conversations/{id}/messages"), &admin, None).await;
    let note = mobile["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .find(|m| m["internal"] == true && m["body"] == "a note for bea")
        .expect("the note")["id"]
        .clone();
    let (status, body) = app.post(&path, json!({"token": f.token, "message_id": note})).await;
    assert_fields(status, &body, &["message_id"]);
    for bad in [
        json!({"token": f.token}),
        json!({"token": f.token, "message_id": "x"}),
        json!({"token": f.token, "message_id": -1}),
        json!({"message_id": answer}),
    ] {
        let (status, body) = app.post(&path, bad.clone()).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{bad}: {body}");
    }
    let (status, body) = app.send(Method::POST, &path, None, &[("content-type", "text/plain")]).await;
    assert_error(status, &body, StatusCode::UNSUPPORTED_MEDIA_TYPE, "unsupported_media_type");
    // Another tenant's installation, or another site's, does not reach it.
    for token in [&other.token, &second_site.token] {
        let (status, body) = app.post(&path, json!({"token": token, "message_id": answer})).await;
        assert_error(status, &body, StatusCode::NOT_FOUND, "not_found");
    }
    let (status, body) = app.post("/api/v1/widget/conversations/conv_nope/read", json!({"token": f.token, "message_id": answer})).await;
    assert_error(status, &body, StatusCode::NOT_FOUND, "not_found");
    let (_, mobile) = app.authed(Method::GET, &format!("/api/v1/mobile/conversations/{id}/messages"), &admin, None).await;
    assert_eq!(read_at(&mobile, answer), Value::Null, "nothing was read");
}

#[tokio::test]
async fn an_agent_without_the_site_never_sees_receipts_of_its_conversations() {
    let app = TestApp::spawn().await;
    let f = app.fixture("acme", &[]).await;
    let docs = app.site("acme-docs", f.scope.tenant, &[]).await;
    app.operator(&f, "agent@acme.example.com", Role::Agent, &[docs.scope.site]).await;
    let agent = app.login("agent@acme.example.com").await;
    let admin = app.login("admin@acme.example.com").await;
    let public_id = app.open_conversation("/api", &f.token, "ann", "hello").await;
    let id = conversation_id(&app, &admin).await;
    let (_, listed) = app.authed(Method::GET, "/api/v1/mobile/conversations", &agent, None).await;
    let cursor = listed["meta"]["cursor"].as_str().expect("cursor").to_owned();
    let answer = reply(&app, &admin, id, "an answer").await;
    let (status, _) =
        app.post(&format!("/api/widget/conversations/{public_id}/read"), json!({"token": f.token, "message_id": answer})).await;
    assert_eq!(status, StatusCode::OK);
    let (status, _) = app.authed(Method::GET, &format!("/api/v1/mobile/conversations/{id}/messages"), &agent, None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (_, feed) = app.authed(Method::GET, &format!("/api/v1/mobile/events?after={cursor}"), &agent, None).await;
    assert_eq!(feed["events"], json!([]), "nothing of another site's conversation");
}

#[tokio::test]
async fn a_transcript_needs_an_address_and_comes_once_an_hour() {
    let smtp = crate::smtp_sink::SmtpSink::start().await;
    let app = TestApp::with().var("PARLEY_SMTP_URL", &smtp.url()).var("PARLEY_MAIL_FROM", "noreply@parley.test").start().await;
    let f = app.fixture("acme", &[]).await;
    let other = app.fixture("globex", &[]).await;
    let no_address = app.open_conversation("/api", &f.token, "anon", "hello").await;
    let (status, body) = app.post(&format!("/api/v1/widget/conversations/{no_address}/transcript"), json!({"token": f.token})).await;
    assert_fields(status, &body, &["email"]);

    let (status, _) = app.post("/api/v1/widget/visitors", json!({"token": f.token, "uuid": "ann", "email": "ann.smith@example.com"})).await;
    assert_eq!(status, StatusCode::CREATED);
    let public_id = app.open_conversation("/api", &f.token, "ann", "hello").await;
    let path = format!("/api/v1/widget/conversations/{public_id}/transcript");
    let (status, body) = app.post(&path, json!({"token": f.token})).await;
    assert_fields(status, &body, &["email"]);
    crate::continuity_mail::verify(&app, &smtp, &f.token, &public_id).await;
    let (status, body) = app.post(&path, json!({"token": other.token})).await;
    assert_error(status, &body, StatusCode::NOT_FOUND, "not_found");
    let (status, body) = app.post(&path, json!({})).await;
    assert_fields(status, &body, &["token"]);
    let (status, body) = app.post(&path, json!({"token": f.token})).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    assert_eq!(body, json!({"email": "a***@example.com"}));
    let (status, body) = app.post(&path, json!({"token": f.token})).await;
    assert_error(status, &body, StatusCode::TOO_MANY_REQUESTS, "rate_limited");
    app.clock.advance(std::time::Duration::from_secs(3601));
    let (status, _) = app.post(&path, json!({"token": f.token})).await;
    assert_eq!(status, StatusCode::ACCEPTED);
}

#[tokio::test]
async fn without_an_email_channel_no_transcript_is_promised() {
    let app = TestApp::spawn().await;
    let f = app.fixture("acme", &[]).await;
    let (status, _) = app.post("/api/v1/widget/visitors", json!({"token": f.token, "uuid": "ann", "email": "ann@example.com"})).await;
    assert_eq!(status, StatusCode::CREATED);
    let public_id = app.open_conversation("/api", &f.token, "ann", "hello").await;
    let (status, body) = app.post(&format!("/api/v1/widget/conversations/{public_id}/transcript"), json!({"token": f.token})).await;
    assert_error(status, &body, StatusCode::CONFLICT, "conflict");
}
