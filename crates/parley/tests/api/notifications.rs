//! Operator notifications: read markers and unread counts kept by the
//! server, and the devices a sign-in registers.

use parley_domain::model::Role;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::helpers::*;

/// The conversation's id and its messages' ids, oldest first, as the
/// operator `token` reads them.
async fn messages(app: &TestApp, token: &str, public_id: &str) -> (i64, Vec<i64>) {
    let (_, list) = app.authed(Method::GET, "/api/mobile/conversations", token, None).await;
    let conversation = list["conversations"]
        .as_array()
        .and_then(|l| l.iter().find(|c| c["public_id"] == public_id))
        .and_then(|c| c["id"].as_i64())
        .expect("the conversation");
    let (status, body) = app.authed(Method::GET, &format!("/api/mobile/conversations/{conversation}/messages"), token, None).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let ids = body["messages"].as_array().expect("messages").iter().map(|m| m["id"].as_i64().expect("id")).collect();
    (conversation, ids)
}

async fn unread(app: &TestApp, token: &str, conversation: i64) -> (Value, Value) {
    let (_, one) = app.authed(Method::GET, &format!("/api/mobile/conversations/{conversation}"), token, None).await;
    let (_, me) = app.authed(Method::GET, "/api/mobile/me", token, None).await;
    (one["conversation"]["unread_count"].clone(), me["unread_conversations"].clone())
}

async fn mark(app: &TestApp, token: &str, conversation: i64, message: Value) -> (StatusCode, Value) {
    app.authed(Method::POST, &format!("/api/v1/mobile/conversations/{conversation}/read"), token, Some(json!({"message_id": message})))
        .await
}

#[tokio::test]
async fn unread_counts_follow_each_operators_marker_and_never_move_back() {
    let app = TestApp::spawn().await;
    let f = app.fixture("acme", &[]).await;
    app.operator(&f, "bea@acme.example.com", Role::Agent, &[f.scope.site]).await;
    let admin = app.login("admin@acme.example.com").await;
    let bea = app.login("bea@acme.example.com").await;
    let public_id = app.open_conversation("/api", &f.token, "v1", "hello").await;
    app.post_message("/api", &f.token, &public_id, "are you there?").await;
    app.post_message("/api", &f.token, &public_id, "anyone?").await;
    let (id, ids) = messages(&app, &admin, &public_id).await;
    assert_eq!(unread(&app, &admin, id).await, (json!(3), json!(1)), "nothing read yet");

    let (status, marker) = mark(&app, &admin, id, json!(ids[1])).await;
    assert_eq!(status, StatusCode::OK, "{marker}");
    assert_eq!(marker, json!({"conversation_id": id, "message_id": ids[1], "unread_count": 1}));
    let (_, earlier) = mark(&app, &admin, id, json!(ids[0])).await;
    assert_eq!(earlier["message_id"], json!(ids[1]), "a marker never moves backwards");
    assert_eq!(unread(&app, &admin, id).await, (json!(1), json!(1)));
    assert_eq!(unread(&app, &bea, id).await, (json!(3), json!(1)), "each operator has its own marker");

    let (status, _) =
        app.authed(Method::POST, &format!("/api/mobile/conversations/{id}/messages"), &admin, Some(json!({"body": "yes?"}))).await;
    assert!(status.is_success(), "{status}");
    assert_eq!(unread(&app, &admin, id).await, (json!(1), json!(1)), "an operator's message is not unread");
    let (_, all) = mark(&app, &admin, id, json!(ids[2])).await;
    assert_eq!(all["unread_count"], 0);
    assert_eq!(unread(&app, &admin, id).await, (json!(0), json!(0)));
    let (_, list) = app.authed(Method::GET, "/api/mobile/conversations", &admin, None).await;
    assert_eq!(list["conversations"][0]["unread_count"], 0, "the list counts the same");

    app.post_message("/api", &f.token, &public_id, "one more").await;
    assert_eq!(unread(&app, &admin, id).await, (json!(1), json!(1)), "a new visitor message is unread again");
    let (status, _) = app.authed(Method::POST, &format!("/api/mobile/conversations/{id}/close"), &admin, None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(unread(&app, &admin, id).await, (json!(1), json!(0)), "a closed conversation is not in the badge");
}

#[tokio::test]
async fn read_markers_refuse_bad_input_and_other_scopes_and_store_nothing() {
    let app = TestApp::spawn().await;
    let f = app.fixture("acme", &[]).await;
    let second = app.site("acme", f.scope.tenant, &[]).await;
    app.operator(&f, "bea@acme.example.com", Role::Agent, &[second.scope.site]).await;
    app.fixture("globex", &[]).await;
    let admin = app.login("admin@acme.example.com").await;
    let bea = app.login("bea@acme.example.com").await;
    let outsider = app.login("admin@globex.example.com").await;
    let public_id = app.open_conversation("/api", &f.token, "v1", "hello").await;
    let elsewhere = app.open_conversation("/api", &f.token, "v2", "elsewhere").await;
    let (id, ids) = messages(&app, &admin, &public_id).await;
    let (_, others) = messages(&app, &admin, &elsewhere).await;

    for (body, why) in [
        (json!({}), "missing"),
        (json!({"message_id": 0}), "zero"),
        (json!({"message_id": "1"}), "a string"),
        (json!({"message_id": 1.5}), "a fraction"),
        (json!({"message_id": others[0]}), "a message of another conversation"),
        (json!({"message_id": i64::MAX}), "no such message"),
    ] {
        let (status, answer) = app.authed(Method::POST, &format!("/api/mobile/conversations/{id}/read"), &admin, Some(body)).await;
        assert_error(status, &answer, StatusCode::UNPROCESSABLE_ENTITY, "validation_failed");
        assert!(answer["error"]["fields"]["message_id"].is_array(), "{why}: {answer}");
    }
    assert_eq!(unread(&app, &admin, id).await.0, json!(1), "nothing was stored");

    let (status, answer) = mark(&app, &outsider, id, json!(ids[0])).await;
    assert_error(status, &answer, StatusCode::NOT_FOUND, "not_found");
    let (status, answer) = mark(&app, &bea, id, json!(ids[0])).await;
    assert_error(status, &answer, StatusCode::NOT_FOUND, "not_found");
    let (status, answer) = mark(&app, &admin, 999_999, json!(ids[0])).await;
    assert_error(status, &answer, StatusCode::NOT_FOUND, "not_found");
    let (status, answer) =
        app.send(Method::POST, &format!("/api/mobile/conversations/{id}/read"), Some(json!({"message_id": ids[0]})), &[]).await;
    assert_error(status, &answer, StatusCode::UNAUTHORIZED, "unauthenticated");
    assert_eq!(unread(&app, &admin, id).await.0, json!(1), "nothing was stored");
    let (_, me) = app.authed(Method::GET, "/api/mobile/me", &bea, None).await;
    assert_eq!(me["unread_conversations"], 0, "an agent counts only its sites' conversations");
}

async fn devices(app: &TestApp, token: &str) -> Vec<Value> {
    let (status, body) = app.authed(Method::GET, "/api/mobile/devices", token, None).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body["devices"].as_array().expect("devices").clone()
}

async fn register(app: &TestApp, token: &str, body: Value) -> (StatusCode, Value) {
    app.authed(Method::POST, "/api/v1/mobile/devices", token, Some(body)).await
}

const APNS_TOKEN: &str = "740f4707bebcf74f9b7c25d48e3358945f6aa01da5ddb387462c7eaf61bb78ad";

#[tokio::test]
async fn a_device_belongs_to_its_sign_in_and_its_push_token_to_one_device() {
    let app = TestApp::spawn().await;
    let f = app.fixture("acme", &[]).await;
    app.operator(&f, "bea@acme.example.com", Role::Agent, &[f.scope.site]).await;
    app.fixture("globex", &[]).await;
    let admin = app.login("admin@acme.example.com").await;
    let bea = app.login("bea@acme.example.com").await;
    let outsider = app.login("admin@globex.example.com").await;

    let (status, made) =
        register(&app, &admin, json!({"platform": "ios", "push_token": APNS_TOKEN, "name": "Ann's iPhone", "locale": "en-GB"})).await;
    assert_eq!(status, StatusCode::CREATED, "{made}");
    let device = &made["device"];
    assert_eq!(device["platform"], "ios");
    assert_eq!(device["name"], "Ann's iPhone");
    assert_eq!(device["last_push_at"], Value::Null);
    assert!(!made.to_string().contains(APNS_TOKEN), "the push token is never shown");
    assert_eq!(devices(&app, &admin).await, vec![device.clone()]);
    assert!(devices(&app, &bea).await.is_empty(), "another operator's list");
    assert!(devices(&app, &outsider).await.is_empty(), "another tenant's list");
    let id = device["id"].as_i64().expect("id");
    for token in [&bea, &outsider] {
        let (status, body) = app.authed(Method::DELETE, &format!("/api/mobile/devices/{id}"), token, None).await;
        assert_error(status, &body, StatusCode::NOT_FOUND, "not_found");
    }
    assert_eq!(devices(&app, &admin).await.len(), 1, "still there");

    // The same phone signed in as another operator: the token moves.
    let (status, _) = register(&app, &bea, json!({"platform": "ios", "push_token": APNS_TOKEN})).await;
    assert_eq!(status, StatusCode::CREATED);
    assert!(devices(&app, &admin).await.is_empty(), "the push token left its first device");
    assert_eq!(devices(&app, &bea).await.len(), 1);

    // Logout ends the sign-in and its devices with it.
    let (status, _) = app.authed(Method::POST, "/api/mobile/logout", &bea, None).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let bea = app.login("bea@acme.example.com").await;
    assert!(devices(&app, &bea).await.is_empty(), "logout removed the device");

    // A new password (an admin's change) ends every sign-in and device.
    let (_, made) = register(&app, &bea, json!({"platform": "android", "push_token": "fcm:token-1"})).await;
    let bea_id = app.authed(Method::GET, "/api/mobile/me", &bea, None).await.1["user"]["id"].as_i64().expect("id");
    let (status, _) = app
        .authed(Method::PATCH, &format!("/api/admin/operators/{bea_id}"), &admin, Some(json!({"password": "another long password"})))
        .await;
    assert_eq!(status, StatusCode::OK);
    let again = app.post("/api/mobile/login", json!({"email": "bea@acme.example.com", "password": "another long password"})).await.1;
    let bea = again["token"].as_str().expect("token").to_owned();
    assert!(devices(&app, &bea).await.is_empty(), "{made}: removed with the old sign-ins");

    // The longest push token fits, on both databases.
    let (status, made) = register(&app, &admin, json!({"platform": "android", "push_token": "t".repeat(4096)})).await;
    assert_eq!(status, StatusCode::CREATED, "{made}");
    let long = made["device"]["id"].as_i64().expect("id");
    app.authed(Method::DELETE, &format!("/api/mobile/devices/{long}"), &admin, None).await;

    // At most twenty devices an operator.
    for n in 0..20 {
        let (status, body) = register(&app, &admin, json!({"platform": "android", "push_token": format!("fcm:many-{n}")})).await;
        assert_eq!(status, StatusCode::CREATED, "{n}: {body}");
    }
    let (status, body) = register(&app, &admin, json!({"platform": "android", "push_token": "fcm:one-too-many"})).await;
    assert_error(status, &body, StatusCode::UNPROCESSABLE_ENTITY, "validation_failed");
    let (status, _) = register(&app, &admin, json!({"platform": "android", "push_token": "fcm:many-3"})).await;
    assert_eq!(status, StatusCode::CREATED, "registering a device again is not a new one");
    for d in devices(&app, &admin).await {
        app.authed(Method::DELETE, &format!("/api/mobile/devices/{}", d["id"]), &admin, None).await;
    }

    // Removing one's own device.
    let (_, made) = register(&app, &admin, json!({"platform": "android", "push_token": "fcm:token-2"})).await;
    let id = made["device"]["id"].as_i64().expect("id");
    let (status, _) = app.authed(Method::DELETE, &format!("/api/mobile/devices/{id}"), &admin, None).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    assert!(devices(&app, &admin).await.is_empty());
    let (status, body) = app.authed(Method::DELETE, &format!("/api/mobile/devices/{id}"), &admin, None).await;
    assert_error(status, &body, StatusCode::NOT_FOUND, "not_found");
}

fn subscription(endpoint: &str) -> Value {
    // A P-256 public key (uncompressed) and a 16-byte secret, base64url.
    let p256dh = format!("B{}", "A".repeat(86));
    json!({"endpoint": endpoint, "keys": {"p256dh": p256dh, "auth": "AAAAAAAAAAAAAAAAAAAAAA"}})
}

#[tokio::test]
async fn a_browser_registers_its_subscription_as_an_object_or_as_its_json() {
    let app = TestApp::with().var("PARLEY_WEBHOOK_ALLOW_PRIVATE", "true").start().await;
    app.fixture("acme", &[]).await;
    let admin = app.login("admin@acme.example.com").await;
    let (status, made) = register(&app, &admin, json!({"platform": "web", "push_token": subscription("https://127.0.0.1:9/push/1")})).await;
    assert_eq!(status, StatusCode::CREATED, "{made}");
    let text = subscription("https://127.0.0.1:9/push/2").to_string();
    let (status, made) = register(&app, &admin, json!({"platform": "web", "push_token": text, "name": "Firefox"})).await;
    assert_eq!(status, StatusCode::CREATED, "{made}");
    assert_eq!(devices(&app, &admin).await.len(), 2);
}

#[tokio::test]
async fn bad_devices_are_refused_and_store_nothing() {
    let app = TestApp::spawn().await;
    app.fixture("acme", &[]).await;
    let admin = app.login("admin@acme.example.com").await;
    let mut bad_key = subscription("https://push.example.com/x");
    bad_key["keys"]["p256dh"] = json!("AAAA");
    let mut no_keys = subscription("https://push.example.com/x");
    no_keys["keys"] = Value::Null;
    for (body, field) in [
        (json!({"push_token": APNS_TOKEN}), "platform"),
        (json!({"platform": "blackberry", "push_token": APNS_TOKEN}), "platform"),
        (json!({"platform": "ios"}), "push_token"),
        (json!({"platform": "ios", "push_token": ""}), "push_token"),
        (json!({"platform": "ios", "push_token": "has space"}), "push_token"),
        (json!({"platform": "ios", "push_token": "x".repeat(4097)}), "push_token"),
        (json!({"platform": "android", "push_token": {"token": "x"}}), "push_token"),
        (json!({"platform": "web", "push_token": "not json"}), "push_token"),
        (json!({"platform": "web", "push_token": no_keys}), "push_token"),
        (json!({"platform": "web", "push_token": bad_key}), "push_token"),
        (json!({"platform": "web", "push_token": subscription("http://push.example.com/x")}), "push_token"),
        (json!({"platform": "web", "push_token": subscription("https://127.0.0.1/push")}), "push_token"),
        (json!({"platform": "web", "push_token": subscription("https://user:pw@push.example.com/x")}), "push_token"),
        (json!({"platform": "web", "push_token": subscription("https://push.example.com/x#again")}), "push_token"),
        (json!({"platform": "ios", "push_token": APNS_TOKEN, "locale": "english please"}), "locale"),
        (json!({"platform": "ios", "push_token": APNS_TOKEN, "name": "x".repeat(256)}), "name"),
    ] {
        let (status, answer) = register(&app, &admin, body.clone()).await;
        assert_error(status, &answer, StatusCode::UNPROCESSABLE_ENTITY, "validation_failed");
        assert!(answer["error"]["fields"][field].is_array(), "{body}: {answer}");
    }
    let (status, answer) =
        app.send(Method::POST, "/api/mobile/devices", Some(json!({"platform": "ios", "push_token": APNS_TOKEN})), &[]).await;
    assert_error(status, &answer, StatusCode::UNAUTHORIZED, "unauthenticated");
    assert!(devices(&app, &admin).await.is_empty(), "nothing was stored");
}

/// The web app reads the same markers: its inbox marks what the operator
/// has not read, and showing a conversation's page reads it, for the
/// mobile API too.
#[tokio::test]
async fn the_web_app_shows_and_moves_the_same_markers() {
    let app = TestApp::spawn().await;
    let f = app.fixture("acme", &[]).await;
    let admin = app.login("admin@acme.example.com").await;
    let public_id = app.open_conversation("/api", &f.token, "v1", "hello").await;
    let (id, _) = messages(&app, &admin, &public_id).await;
    let mut browser = crate::web_browser::Browser::signed_in(&app, "admin@acme.example.com").await;
    let inbox = browser.inbox("").await;
    assert!(inbox.html.contains("<a class=\"conversation unread\""), "{}", inbox.html);
    assert!(inbox.html.contains("Unread"));

    let hidden = browser.send(Method::GET, &format!("/app/conversations/{id}"), None, &[("x-parley-hidden", "1")]).await;
    assert_eq!(hidden.status, StatusCode::OK);
    assert_eq!(unread(&app, &admin, id).await, (json!(1), json!(1)), "a tab nobody looks at reads nothing");
    let lured = browser.send(Method::GET, &format!("/app/conversations/{id}"), None, &[("sec-fetch-site", "cross-site")]).await;
    assert_eq!(lured.status, StatusCode::OK);
    assert_eq!(unread(&app, &admin, id).await, (json!(1), json!(1)), "a page another site opened reads nothing");
    let page = browser.conversation(id).await;
    assert_eq!(page.status, StatusCode::OK);
    assert_eq!(unread(&app, &admin, id).await, (json!(0), json!(0)), "shown is read, for every client of the operator");
    let inbox = browser.inbox("").await;
    assert!(!inbox.html.contains("conversation unread"), "{}", inbox.html);

    app.post_message("/api", &f.token, &public_id, "still there?").await;
    assert!(browser.inbox("").await.html.contains("conversation unread"), "a new visitor message is unread again");
}

/// The limit of 20 devices holds when several sign-ins of one operator
/// register at once (PostgreSQL runs their units side by side).
#[tokio::test]
async fn the_device_limit_holds_for_registrations_side_by_side() {
    let app = TestApp::spawn().await;
    app.fixture("acme", &[]).await;
    let first = app.login("admin@acme.example.com").await;
    for n in 0..15 {
        let (status, body) = register(&app, &first, json!({"platform": "android", "push_token": format!("existing-{n}")})).await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
    }
    let mut sign_ins = Vec::new();
    for _ in 0..10 {
        sign_ins.push(app.login("admin@acme.example.com").await);
    }
    let attempts = sign_ins.iter().enumerate().map(|(n, token)| {
        let app = &app;
        async move { register(app, token, json!({"platform": "android", "push_token": format!("racing-{n}")})).await.0 }
    });
    let statuses = futures::future::join_all(attempts).await;
    let created = statuses.iter().filter(|s| **s == StatusCode::CREATED).count();
    assert_eq!(created, 5, "five more fit under the limit: {statuses:?}");
    assert!(statuses.iter().all(|s| *s == StatusCode::CREATED || *s == StatusCode::UNPROCESSABLE_ENTITY), "{statuses:?}");
    assert_eq!(devices(&app, &first).await.len(), 20);
}
