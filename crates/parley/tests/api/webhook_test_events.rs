//! Test events (`POST admin/webhooks/{id}/test`): an ordinary signed
//! delivery to one endpoint, marked `"test": true`, that nothing else sees.

use parley_domain::model::Role;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::helpers::*;
use crate::receiver::Receiver;
use crate::webhooks::{deliveries, delivery_log_when, register, verify, webhook_app};

const KINDS: [&str; 5] =
    ["conversation.created", "conversation.closed", "message.created", "installation.health.changed", "verification.completed"];

async fn send_test(app: &TestApp, token: &str, prefix: &str, id: i64, body: Value) -> (StatusCode, Value) {
    app.authed(Method::POST, &format!("{prefix}/admin/webhooks/{id}/test"), token, Some(body)).await
}

#[tokio::test]
async fn a_test_event_of_every_kind_arrives_signed_and_marked() {
    let app = webhook_app().await;
    app.fixture("acme", &[]).await;
    let admin = app.login("admin@acme.example.com").await;
    let receiver = Receiver::start().await;
    // Subscribed to one kind: a test of any kind still reaches it.
    let (id, secret) = register(&app, &admin, &receiver.url, Some(json!(["message.created"]))).await;

    for (n, kind) in KINDS.into_iter().enumerate() {
        let prefix = PREFIXES[n % 2];
        let (status, body) = send_test(&app, &admin, prefix, id, json!({ "event": kind })).await;
        assert_eq!(status, StatusCode::ACCEPTED, "{body}");
        assert_eq!(body["delivery"]["status"], "pending");
        assert_eq!(body["delivery"]["event"], kind);

        let envelope = verify(&receiver.next().await, &[&secret]);
        assert_eq!(envelope["test"], true);
        assert_eq!(envelope["event"], kind);
        assert_eq!(envelope["version"], "1");
        assert_eq!(envelope["tenant_slug"], "acme");
        assert_eq!(envelope["event_id"], body["delivery"]["event_id"]);
        assert!(envelope["data"].is_object());
        // One test at a time: the next waits until this one is logged.
        delivery_log_when(&app, &admin, id, |d| d["status"] == "delivered").await;
    }
    // The shapes are the real ones.
    let log = delivery_log_when(&app, &admin, id, |d| d["status"] == "delivered").await;
    assert_eq!(log["meta"]["total"], 5);
    let newest = &log["deliveries"][0];
    assert_eq!(newest["event"], "verification.completed");
    assert_eq!(newest["attempts"][0]["status_code"], 200);
}

#[tokio::test]
async fn a_test_event_reaches_no_other_endpoint_and_no_operator() {
    let app = webhook_app().await;
    let f = app.fixture("acme", &[]).await;
    let admin = app.login("admin@acme.example.com").await;
    let (tested, other) = (Receiver::start().await, Receiver::start().await);
    let (id, secret) = register(&app, &admin, &tested.url, None).await;
    register(&app, &admin, &other.url, None).await;
    let (_, list) = app.authed(Method::GET, "/api/mobile/conversations", &admin, None).await;
    let cursor = list["meta"]["cursor"].as_str().unwrap().to_owned();

    let (status, body) = send_test(&app, &admin, "/api", id, json!({"event": "message.created"})).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    assert_eq!(verify(&tested.next().await, &[&secret])["test"], true);

    // A real event afterwards reaches both, and is the first the other
    // endpoint and the operators' feed see.
    app.open_conversation("/api", &f.token, "ann", "Hello").await;
    let first = other.next().await.json();
    assert!(first.get("test").is_none(), "{first}");
    assert_eq!(first["event"], "conversation.created");
    let events = eventually(|| async {
        let (_, body) = app.authed(Method::GET, &format!("/api/mobile/events?after={cursor}"), &admin, None).await;
        (body["events"].as_array().is_some_and(|e| !e.is_empty())).then_some(body)
    })
    .await;
    let kinds: Vec<&str> = events["events"].as_array().unwrap().iter().map(|e| e["event"].as_str().unwrap()).collect();
    assert_eq!(kinds.first(), Some(&"conversation.created"), "the test event is not in the operators' feed");
    assert_eq!(other.next().await.json()["event"], "message.created");
    assert_eq!(deliveries(&app, &admin, id).await["meta"]["total"], 3, "the test and the conversation's two events");
}

#[tokio::test]
async fn test_event_inputs_are_validated_and_scoped() {
    let app = webhook_app().await;
    let f = app.fixture("acme", &[]).await;
    app.fixture("globex", &[]).await;
    app.operator(&f, "agent@acme.example", Role::Agent, &[]).await;
    let admin = app.login("admin@acme.example.com").await;
    let agent = app.login("agent@acme.example").await;
    let other = app.login("admin@globex.example.com").await;
    let (id, _) = register(&app, &admin, "http://127.0.0.1:9/hook", None).await;
    for prefix in PREFIXES {
        for bad in [
            json!({}),
            json!({"event": "conversation.updated"}),
            json!({"event": "nope"}),
            json!({"event": 5}),
            json!({"event": null}),
            json!({"event": ["message.created"]}),
        ] {
            let (status, body) = send_test(&app, &admin, prefix, id, bad).await;
            assert_fields(status, &body, &["event"]);
        }
        let (status, body) = send_test(&app, &agent, prefix, id, json!({"event": "message.created"})).await;
        assert_error(status, &body, StatusCode::FORBIDDEN, "forbidden");
        let (status, body) = send_test(&app, &other, prefix, id, json!({"event": "message.created"})).await;
        assert_error(status, &body, StatusCode::NOT_FOUND, "not_found");
        let (status, body) = send_test(&app, &admin, prefix, id + 100, json!({"event": "message.created"})).await;
        assert_error(status, &body, StatusCode::NOT_FOUND, "not_found");
        let (status, _) = app.send(Method::POST, &format!("{prefix}/admin/webhooks/{id}/test"), None, &[]).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
    }
    assert_eq!(deliveries(&app, &admin, id).await["meta"]["total"], 0, "nothing refused was queued");
}

#[tokio::test]
async fn a_disabled_endpoint_gets_no_test() {
    let app = webhook_app().await;
    app.fixture("acme", &[]).await;
    let admin = app.login("admin@acme.example.com").await;
    let receiver = Receiver::start().await;
    receiver.reply(&[crate::receiver::Reply::Status(410)]);
    let (id, _) = register(&app, &admin, &receiver.url, None).await;
    send_test(&app, &admin, "/api", id, json!({"event": "message.created"})).await;
    receiver.next().await;
    delivery_log_when(&app, &admin, id, |d| d["status"] == "failed").await;
    let (status, body) = send_test(&app, &admin, "/api", id, json!({"event": "message.created"})).await;
    assert_error(status, &body, StatusCode::CONFLICT, "conflict");
}

#[tokio::test]
async fn one_test_at_a_time_per_endpoint() {
    let app = webhook_app().await;
    app.fixture("acme", &[]).await;
    let admin = app.login("admin@acme.example.com").await;
    let receiver = Receiver::start().await;
    receiver.reply(&[crate::receiver::Reply::Status(500)]);
    let (id, _) = register(&app, &admin, &receiver.url, None).await;
    let (other, _) = register(&app, &admin, &format!("{}/other", receiver.url), None).await;
    let (status, body) = send_test(&app, &admin, "/api", id, json!({"event": "message.created"})).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    receiver.next().await;
    // Refused by the receiver, it waits for its retry: no second test meanwhile.
    let (status, body) = send_test(&app, &admin, "/api", id, json!({"event": "message.created"})).await;
    assert_error(status, &body, StatusCode::CONFLICT, "conflict");
    assert_eq!(deliveries(&app, &admin, id).await["meta"]["total"], 1);
    let (status, body) = send_test(&app, &admin, "/api", other, json!({"event": "message.created"})).await;
    assert_eq!(status, StatusCode::ACCEPTED, "another endpoint has its own: {body}");
}

#[tokio::test]
async fn a_form_sent_twice_makes_one_endpoint_and_one_token() {
    let app = webhook_app().await;
    app.fixture("acme", &[]).await;
    let admin = app.login("admin@acme.example.com").await;
    let body = json!({"url": "http://127.0.0.1:9/hook", "events": ["message.created", "conversation.closed"]});
    let (status, _) = app.authed(Method::POST, "/api/admin/webhooks", &admin, Some(body)).await;
    assert_eq!(status, StatusCode::CREATED);
    let again = json!({"url": "http://127.0.0.1:9/hook", "events": ["conversation.closed", "message.created"]});
    let (status, body) = app.authed(Method::POST, "/api/admin/webhooks", &admin, Some(again)).await;
    assert_error(status, &body, StatusCode::CONFLICT, "conflict");
    let other_events = json!({"url": "http://127.0.0.1:9/hook"});
    let (status, _) = app.authed(Method::POST, "/api/admin/webhooks", &admin, Some(other_events)).await;
    assert_eq!(status, StatusCode::CREATED, "the same URL for other events is another endpoint");

    let (status, _) = app.authed(Method::POST, "/api/admin/tokens", &admin, Some(json!({"name": "CI"}))).await;
    assert_eq!(status, StatusCode::CREATED);
    let (status, body) = app.authed(Method::POST, "/api/admin/tokens", &admin, Some(json!({"name": "CI"}))).await;
    assert_error(status, &body, StatusCode::CONFLICT, "conflict");
    let (_, list) = app.authed(Method::GET, "/api/admin/tokens", &admin, None).await;
    assert_eq!(list["tokens"].as_array().unwrap().len(), 1);
}
