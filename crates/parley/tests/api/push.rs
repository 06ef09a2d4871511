//! Operator pushes end to end: the server queues them with the change,
//! its worker sends them to loopback peers of APNs, FCM, a browser's push
//! service and a relay (see `push_peers`), which check what the real
//! providers check.

use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use parley_domain::model::Role;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::helpers::*;
use crate::push_peers::*;
use crate::web_browser::Browser;

/// A service-account file whose `token_uri` is the peer's.
pub(crate) fn service_account(dir: &std::path::Path, peer: &Peer) -> String {
    let account = json!({
        "type": "service_account",
        "project_id": PROJECT,
        "private_key_id": "test-key-id",
        "private_key": std::fs::read_to_string(fixture("fcm-key.pem")).expect("key"),
        "client_email": CLIENT_EMAIL,
        "token_uri": format!("{}/token", peer.base),
    });
    let path = dir.join("service-account.json");
    std::fs::write(&path, account.to_string()).expect("write");
    path.display().to_string()
}

/// Every provider pointed at the peer.
struct Setup {
    app: TestApp,
    peer: Peer,
    _dir: tempfile::TempDir,
}

/// A server whose every provider is the peer, with `vars` added.
fn with_providers(peer: &Peer, account: &str, vars: &[(&str, &str)]) -> crate::helpers::Spawn {
    let mut spawn = TestApp::with()
        .var("PARLEY_EXTRA_CA_FILE", &fixture("ca.pem"))
        .var("PARLEY_APNS_KEY_FILE", &fixture("apns-key.p8"))
        .var("PARLEY_APNS_KEY_ID", KEY_ID)
        .var("PARLEY_APNS_TEAM_ID", TEAM_ID)
        .var("PARLEY_APNS_TOPIC", TOPIC)
        .var("PARLEY_APNS_URL", &peer.base)
        .var("PARLEY_FCM_SERVICE_ACCOUNT_FILE", account)
        .var("PARLEY_FCM_URL", &peer.base)
        // The browsers' push service is this machine's peer.
        .var("PARLEY_WEBHOOK_ALLOW_PRIVATE", "true")
        .var("PARLEY_WEBHOOK_POLL_INTERVAL", "50ms");
    for (k, v) in vars {
        spawn = spawn.var(k, v);
    }
    spawn
}

async fn setup_with(vars: &[(&str, &str)]) -> Setup {
    let peer = Peer::start().await;
    let dir = tempfile::tempdir().expect("dir");
    let account = service_account(dir.path(), &peer);
    let app = with_providers(&peer, &account, vars).start().await;
    peer.follow(app.clock.clone());
    Setup { app, peer, _dir: dir }
}

async fn setup() -> Setup {
    setup_with(&[]).await
}

async fn register(app: &TestApp, token: &str, platform: &str, push_token: Value) -> Value {
    let (status, body) =
        app.authed(Method::POST, "/api/mobile/devices", token, Some(json!({"platform": platform, "push_token": push_token}))).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    body["device"].clone()
}

async fn conversation_id(app: &TestApp, token: &str, public_id: &str) -> i64 {
    let (_, list) = app.authed(Method::GET, "/api/mobile/conversations?per_page=100", token, None).await;
    list["conversations"]
        .as_array()
        .and_then(|l| l.iter().find(|c| c["public_id"] == public_id))
        .and_then(|c| c["id"].as_i64())
        .expect("the conversation")
}

/// How long after its last push the waiting push is due, in ms, once
/// the worker has recorded that push (its lease given back).
async fn held_for(app: &TestApp) -> i64 {
    eventually(|| async {
        let url = app.database_url.clone();
        tokio::task::spawn_blocking(move || {
            let sql = "SELECT CAST(due_at - last_sent_at AS BIGINT) FROM push_outbox
                       WHERE pending = TRUE AND lease_until IS NULL AND last_sent_at IS NOT NULL";
            match url.strip_prefix("sqlite://") {
                Some(path) => rusqlite::Connection::open(path).expect("open").query_row(sql, [], |r| r.get::<_, i64>(0)).ok(),
                None => {
                    postgres::Client::connect(&url, postgres::NoTls).expect("connect").query_opt(sql, &[]).expect("query").map(|r| r.get(0))
                }
            }
        })
        .await
        .expect("blocking")
    })
    .await
}

/// The pushes waiting to be sent, read as an administrator would.
async fn pending_pushes(app: &TestApp) -> i64 {
    count(app, "SELECT COUNT(*) FROM push_outbox WHERE pending = TRUE").await
}

const APPLE: &str = "740f4707bebcf74f9b7c25d48e3358945f6aa01da5ddb387462c7eaf61bb78ad";
const APPLE_2: &str = "9a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f9";

#[tokio::test]
async fn the_peers_accept_what_the_reference_libraries_make_and_refuse_tampering() {
    let vectors: Value =
        serde_json::from_str(&std::fs::read_to_string(fixture("vectors.json")).expect("vectors")).expect("vectors are JSON");
    let apns = vectors["apns_jwt"].as_str().expect("apns");
    let iat = Jws::parse(apns).expect("jws").claims["iat"].as_i64().expect("iat");
    check_apns_token(apns, iat + 10).expect("PyJWT's ES256 token verifies");
    assert!(check_apns_token(apns, iat + 3700).is_err(), "an hour-old provider token is refused");
    let fcm = vectors["fcm_assertion"].as_str().expect("fcm");
    let uri = vectors["fcm_token_uri"].as_str().expect("uri");
    check_assertion(fcm, uri, iat + 10).expect("PyJWT's RS256 assertion verifies");
    assert!(check_assertion(fcm, "https://elsewhere/token", iat + 10).is_err(), "another audience is refused");

    let wp = &vectors["web_push"];
    let private = URL_SAFE_NO_PAD.decode(wp["receiver_private"].as_str().expect("key")).expect("b64");
    let auth: [u8; 16] = URL_SAFE_NO_PAD.decode(wp["auth"].as_str().expect("auth")).expect("b64").try_into().expect("16 bytes");
    let sub = Subscription { private: p256::SecretKey::from_slice(&private).expect("key"), auth };
    assert_eq!(sub.p256dh(), wp["p256dh"].as_str().expect("p256dh"));
    let body = URL_SAFE_NO_PAD.decode(wp["body"].as_str().expect("body")).expect("b64");
    let plain = sub.decrypt(&body).expect("pywebpush's aes128gcm body decrypts");
    assert_eq!(String::from_utf8(plain).expect("utf8"), wp["plaintext"].as_str().expect("plaintext"));
    let mut tampered = body.clone();
    let last = tampered.len() - 1;
    tampered[last] ^= 1;
    assert!(sub.decrypt(&tampered).is_err(), "a changed body fails its tag");

    let vapid = vectors["vapid"]["authorization"].as_str().expect("vapid");
    let audience = vectors["vapid"]["audience"].as_str().expect("aud");
    check_vapid(vapid, audience, iat + 10).expect("py_vapid's header verifies");
    assert!(check_vapid(vapid, "https://other.example", iat + 10).is_err(), "another audience is refused");
    let forged = vapid.replacen("t=eyJ", "t=eyK", 1);
    assert!(check_vapid(&forged, audience, iat + 10).is_err(), "a changed token is refused");

    // And what Parley's sender makes, checked by the same peer code.
    let keys = parley_domain::model::WebPushKeys { p256dh: sub.p256dh(), auth: URL_SAFE_NO_PAD.encode(sub.auth) };
    let ours = parley_worker::push::web_push_encrypt(&keys, b"hello").expect("encrypts");
    assert_eq!(sub.decrypt(&ours).expect("Parley's body decrypts"), b"hello");
}

#[tokio::test]
async fn a_visitor_message_buzzes_the_operators_phone_with_no_visitor_text() {
    let Setup { app, peer, .. } = setup().await;
    let f = app.fixture("acme", &[]).await;
    let admin = app.login("admin@acme.example.com").await;
    register(&app, &admin, "ios", json!(APPLE)).await;
    let started = std::time::Instant::now();
    let public_id = app.open_conversation("/api", &f.token, "v1", "my card number is 4111 1111").await;
    let pushes = peer.wait_for(1).await;
    let elapsed = started.elapsed();
    let id = conversation_id(&app, &admin, &public_id).await;
    let push = &pushes[0];
    assert_eq!((push.provider, push.token.as_str(), push.version.as_str()), ("apns", APPLE, "HTTP/2.0"));
    assert_eq!(push.payload["aps"]["alert"], json!({"title": "New conversation"}), "minimal: a fixed title");
    assert_eq!(push.payload["aps"]["badge"], 1, "the badge is the unread conversations");
    assert_eq!(push.payload["aps"]["thread-id"], id.to_string());
    assert_eq!(push.payload["aps"]["mutable-content"], 1);
    assert_eq!(push.payload["conversation_id"], id);
    assert_eq!(push.header("apns-collapse-id"), id.to_string());
    let sent = serde_json::to_string(&push.payload).expect("json");
    assert!(!sent.contains("4111") && !sent.contains("v1"), "no visitor text leaves by default: {sent}");
    println!("push received {elapsed:?} after the visitor's message was sent");
    // The device's list shows when it was last pushed.
    eventually(|| async {
        let (_, devices) = app.authed(Method::GET, "/api/mobile/devices", &admin, None).await;
        devices["devices"][0]["last_push_at"].is_string().then_some(())
    })
    .await;
    assert!(peer.refused().is_empty(), "{:?}", peer.refused());
}

#[tokio::test]
async fn pushes_go_to_who_can_see_it_then_to_the_assignee_and_never_to_the_actor() {
    let Setup { app, peer, .. } = setup().await;
    let f = app.fixture("acme", &[]).await;
    let other_site = app.site("acme", f.scope.tenant, &[]).await;
    let ann = app.operator(&f, "ann@acme.example.com", Role::Agent, &[f.scope.site]).await;
    app.operator(&f, "bob@acme.example.com", Role::Agent, &[other_site.scope.site]).await;
    app.fixture("globex", &[]).await;
    let admin = app.login("admin@acme.example.com").await;
    let ann_token = app.login("ann@acme.example.com").await;
    let bob = app.login("bob@acme.example.com").await;
    let outsider = app.login("admin@globex.example.com").await;
    register(&app, &admin, "ios", json!(APPLE)).await;
    register(&app, &ann_token, "android", json!("fcm-ann")).await;
    let bob_sub = peer.subscribe("bob");
    register(&app, &bob, "web", bob_sub).await;
    register(&app, &outsider, "ios", json!(APPLE_2)).await;

    let public_id = app.open_conversation("/api", &f.token, "v1", "hello").await;
    let pushes = peer.wait_for(2).await;
    let tokens: std::collections::BTreeSet<&str> = pushes.iter().map(|p| p.token.as_str()).collect();
    assert_eq!(tokens, [APPLE, "fcm-ann"].into_iter().collect(), "an unassigned conversation: everyone who can see it");
    let fcm = pushes.iter().find(|p| p.provider == "fcm").expect("fcm");
    assert_eq!(fcm.payload["notification"]["title"], "New conversation");
    assert_eq!(fcm.payload["data"]["badge"], "1");
    assert_eq!(peer.token_requests(), 1, "one access token");

    // The admin assigns it to Ann: Ann is pushed, the admin (the actor) not.
    let id = conversation_id(&app, &admin, &public_id).await;
    let (status, body) =
        app.authed(Method::POST, &format!("/api/mobile/conversations/{id}/assign"), &admin, Some(json!({"operator_id": ann}))).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    // Ann's earlier push about this conversation was sent less than 10 s
    // ago: the assignment waits out the spacing.
    assert_eq!(held_for(&app).await, 10_000);
    assert_eq!(peer.delivered().len(), 2);
    app.clock.advance(Duration::from_secs(11));
    let pushes = peer.wait_for(3).await;
    assert_eq!(pushes[2].token, "fcm-ann");
    assert_eq!(pushes[2].payload["notification"]["title"], "Conversation assigned to you");

    // The visitor writes: the assignee alone.
    app.clock.advance(Duration::from_secs(11));
    app.post_message("/api", &f.token, &public_id, "still there?").await;
    let pushes = peer.wait_for(4).await;
    assert_eq!(pushes[3].token, "fcm-ann");
    assert_eq!(pushes[3].payload["notification"]["title"], "New message");

    // Ann hands it to the admin: the admin is pushed, Ann not.
    app.clock.advance(Duration::from_secs(11));
    app.transfer_with_note(&ann_token, id, json!(admin_id(&app, &admin).await), "over to you").await;
    let pushes = peer.wait_for(5).await;
    assert_eq!(pushes[4].token, APPLE);
    assert_eq!(pushes[4].payload["aps"]["alert"]["title"], "Conversation assigned to you");
    settled(&app).await;
    let to: Vec<&str> = peer.delivered().iter().map(|p| p.provider).collect();
    assert!(!to.contains(&"web"), "an agent without the site is never pushed: {to:?}");
    assert!(peer.delivered_to(APPLE_2).is_empty(), "another tenant is never pushed");
    assert!(peer.refused().is_empty(), "{:?}", peer.refused());
}

async fn admin_id(app: &TestApp, token: &str) -> i64 {
    let (_, me) = app.authed(Method::GET, "/api/mobile/me", token, None).await;
    me["user"]["id"].as_i64().expect("the operator's id")
}

#[tokio::test]
async fn full_content_carries_the_name_and_the_start_of_the_message_encrypted_for_the_browser() {
    let Setup { app, peer, .. } = setup_with(&[("PARLEY_PUSH_CONTENT", "full")]).await;
    let f = app.fixture("acme", &[]).await;
    let admin = app.login("admin@acme.example.com").await;
    let sub = peer.subscribe("laptop");
    register(&app, &admin, "web", sub).await;
    let long = format!("Hello, {}", "x".repeat(200));
    app.open_conversation("/api", &f.token, "v1", &long).await;
    let pushes = peer.wait_for(1).await;
    let push = &pushes[0];
    assert_eq!(push.provider, "web");
    assert_eq!(push.header("urgency"), "high");
    let body = push.payload["body"].as_str().expect("a body");
    assert_eq!(body.chars().count(), 121, "120 characters and an ellipsis: {body}");
    assert!(body.starts_with("Hello, xxx"));
    // The installation's key is the one browsers subscribe with.
    let (_, key) = app.get("/app/push/key").await;
    let key = URL_SAFE_NO_PAD.decode(key["public_key"].as_str().expect("key")).expect("b64");
    assert_eq!(peer.vapid_keys(), vec![key]);
    assert!(peer.refused().is_empty(), "{:?}", peer.refused());
}

#[tokio::test]
async fn a_burst_collapses_and_a_failed_push_is_retried_once() {
    let Setup { app, peer, .. } = setup_with(&[("PARLEY_METRICS_TOKEN", METRICS_TOKEN)]).await;
    let f = app.fixture("acme", &[]).await;
    let admin = app.login("admin@acme.example.com").await;
    register(&app, &admin, "ios", json!(APPLE)).await;
    peer.script(APPLE, &[(500, json!({"reason": "InternalServerError"}))]);
    let public_id = app.open_conversation("/api", &f.token, "v1", "hello").await;
    // The first attempt fails; nothing is delivered until the retry.
    eventually(|| async { (peer.refused().is_empty() && peer.delivered().is_empty() && attempts(&app).await == 1).then_some(()) }).await;
    for n in 0..5 {
        app.post_message("/api", &f.token, &public_id, &format!("message {n}")).await;
    }
    app.clock.advance(Duration::from_secs(6));
    let pushes = peer.wait_for(1).await;
    assert_eq!(pushes[0].payload["aps"]["alert"]["title"], "New message", "the burst collapsed into the retried push");
    // One more push at most every 10 s: the spacing holds the next.
    settled(&app).await;
    app.post_message("/api", &f.token, &public_id, "and another").await;
    assert_eq!(held_for(&app).await, 10_000, "due 10 s after the last push");
    app.clock.advance(Duration::from_secs(5));
    // Another conversation's push, due at once, goes through the worker
    // meanwhile; the held one does not go with it.
    let other = app.open_conversation("/api", &f.token, "v2", "another visitor").await;
    let pushes = peer.wait_for(2).await;
    assert_eq!(pushes[1].payload["aps"]["alert"]["title"], "New conversation");
    eventually(|| async { (pending_pushes(&app).await == 1).then_some(()) }).await;
    assert_eq!(peer.delivered().len(), 2, "not within 10 s of the last push");
    app.clock.advance(Duration::from_secs(6));
    let pushes = peer.wait_for(3).await;
    assert_eq!(pushes.len(), 3);
    assert_eq!(pushes[2].payload["aps"]["alert"]["title"], "New message");
    // Every attempt is counted, by platform and outcome.
    let metrics = scrape_metrics(&app).await;
    let count = |outcome: &str| {
        let labels = format!("platform=\"ios\",outcome=\"{outcome}\"}}");
        metrics
            .lines()
            .find(|l| l.starts_with("parley_push_attempts_total{") && l.contains(&labels))
            .and_then(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    assert_eq!((count("retry"), count("delivered")), (1.0, 3.0), "{metrics}");
    assert_ne!(pushes[2].payload["conversation_id"], pushes[1].payload["conversation_id"], "{other}");
    settled(&app).await;
}

/// Failed attempts of the pushes waiting, as the outbox counts them.
async fn attempts(app: &TestApp) -> i64 {
    count(app, "SELECT CAST(COALESCE(SUM(attempts), 0) AS BIGINT) FROM push_outbox WHERE pending = TRUE").await
}

async fn count(app: &TestApp, sql: &'static str) -> i64 {
    let url = app.database_url.clone();
    tokio::task::spawn_blocking(move || match url.strip_prefix("sqlite://") {
        Some(path) => rusqlite::Connection::open(path).expect("open").query_row(sql, [], |r| r.get(0)).expect("count"),
        None => postgres::Client::connect(&url, postgres::NoTls).expect("connect").query_one(sql, &[]).expect("count").get(0),
    })
    .await
    .expect("blocking")
}

/// Waits until no push is pending (the worker records a send just after
/// the provider answers).
async fn settled(app: &TestApp) {
    eventually(|| async { (pending_pushes(app).await == 0).then_some(()) }).await;
}

#[tokio::test]
async fn dead_tokens_remove_their_devices() {
    let Setup { app, peer, .. } = setup().await;
    let f = app.fixture("acme", &[]).await;
    let admin = app.login("admin@acme.example.com").await;
    register(&app, &admin, "ios", json!(APPLE)).await;
    register(&app, &admin, "android", json!("fcm-gone")).await;
    let sub = peer.subscribe("gone");
    register(&app, &admin, "web", sub).await;
    register(&app, &admin, "ios", json!(APPLE_2)).await;
    register(&app, &admin, "ios", json!(APPLE_BAD)).await;
    // What a wrong setting answers for every device removes none.
    register(&app, &admin, "ios", json!(APPLE_TOPIC)).await;
    register(&app, &admin, "android", json!("fcm-project")).await;
    // Refused as a bad token before any push went through: the other
    // environment's host, most likely; after one did: gone bad.
    register(&app, &admin, "ios", json!(APPLE_NEW)).await;
    peer.script(APPLE, &[(410, json!({"reason": "Unregistered"}))]);
    peer.script(APPLE_BAD, &[(200, json!({})), (400, json!({"reason": "BadDeviceToken"}))]);
    peer.script(APPLE_NEW, &[(400, json!({"reason": "BadDeviceToken"}))]);
    peer.script("fcm-gone", &[(404, json!({"error": {"code": 404, "status": "NOT_FOUND", "details": [{"errorCode": "UNREGISTERED"}]}}))]);
    peer.script("gone", &[(410, json!({}))]);
    peer.script(APPLE_TOPIC, &[(400, json!({"reason": "DeviceTokenNotForTopic"}))]);
    peer.script(
        "fcm-project",
        &[(404, json!({"error": {"code": 404, "status": "NOT_FOUND", "message": "Requested entity was not found."}}))],
    );
    app.open_conversation("/api", &f.token, "v1", "hello").await;
    peer.wait_for(2).await;
    settled(&app).await;
    app.open_conversation("/api", &f.token, "v2", "hello again").await;
    peer.wait_for(3).await;
    settled(&app).await;
    let (_, list) = app.authed(Method::GET, "/api/mobile/devices", &admin, None).await;
    let left: Vec<&str> = list["devices"].as_array().expect("devices").iter().filter_map(|d| d["platform"].as_str()).collect();
    assert_eq!(left, ["ios", "ios", "android", "ios"], "the live device and the three refused by a setting stay: {list}");
    assert_eq!(peer.refusals_to(APPLE_BAD), vec![400], "the token that went bad was refused, then removed");
    assert_eq!((peer.refusals_to(APPLE_TOPIC), peer.refusals_to("fcm-project")), (vec![400], vec![404]), "both were refused");
    assert_eq!(peer.delivered_to(APPLE_2).len(), 2, "the live device hears of both");
}

const APPLE_BAD: &str = "0bad0bad0bad0bad0bad0bad0bad0bad0bad0bad0bad0bad0bad0bad0bad0bad";
const APPLE_NEW: &str = "5e55e55e55e55e55e55e55e55e55e55e55e55e55e55e55e55e55e55e55e55e55e";
const APPLE_TOPIC: &str = "70b1c70b1c70b1c70b1c70b1c70b1c70b1c70b1c70b1c70b1c70b1c70b1c70b1";

#[tokio::test]
async fn a_token_registered_again_by_someone_else_drops_what_was_queued_for_the_previous_account() {
    let Setup { app, peer, .. } = setup_with(&[("PARLEY_PUSH_CONTENT", "full")]).await;
    let f = app.fixture("acme", &[]).await;
    let other_site = app.site("acme", f.scope.tenant, &[]).await;
    app.operator(&f, "bob@acme.example.com", Role::Agent, &[other_site.scope.site]).await;
    app.fixture("globex", &[]).await;
    let admin = app.login("admin@acme.example.com").await;
    let bob = app.login("bob@acme.example.com").await;
    let outsider = app.login("admin@globex.example.com").await;
    register(&app, &admin, "ios", json!(APPLE)).await;
    register(&app, &admin, "ios", json!(APPLE_2)).await;
    // Both fail once: their pushes wait for a retry.
    peer.script(APPLE, &[(500, json!({}))]);
    peer.script(APPLE_2, &[(500, json!({}))]);
    app.open_conversation("/api", &f.token, "v1", "my card is 4111").await;
    eventually(|| async { (attempts(&app).await == 2).then_some(()) }).await;
    // The phones are signed in again: one by an agent who cannot see the
    // conversation, one by another tenant's admin.
    register(&app, &bob, "ios", json!(APPLE)).await;
    register(&app, &outsider, "ios", json!(APPLE_2)).await;
    assert_eq!(pending_pushes(&app).await, 0, "what was queued for the previous account is gone");
    app.clock.advance(Duration::from_secs(6));
    // A new conversation of the site: neither new owner is to hear of it.
    app.open_conversation("/api", &f.token, "v2", "a later conversation").await;
    settled(&app).await;
    assert!(peer.delivered().is_empty(), "neither phone hears of the previous account's conversations: {:?}", peer.delivered());
}

#[tokio::test]
async fn a_push_is_dropped_when_it_no_longer_stands_at_send_time() {
    let Setup { app, peer, .. } = setup().await;
    let f = app.fixture("acme", &[]).await;
    let ann_id = app.operator(&f, "ann@acme.example.com", Role::Agent, &[f.scope.site]).await;
    let admin = app.login("admin@acme.example.com").await;
    let ann = app.login("ann@acme.example.com").await;
    register(&app, &admin, "ios", json!(APPLE)).await;
    register(&app, &ann, "android", json!("fcm-ann")).await;
    // Both pushes fail once and wait for their retry.
    peer.script(APPLE, &[(500, json!({}))]);
    peer.script("fcm-ann", &[(500, json!({}))]);
    let public_id = app.open_conversation("/api", &f.token, "v1", "hello").await;
    eventually(|| async { (attempts(&app).await == 2).then_some(()) }).await;
    let id = conversation_id(&app, &admin, &public_id).await;
    // Meanwhile the admin reads it on another device: its push is dropped.
    let (_, messages) = app.authed(Method::GET, &format!("/api/mobile/conversations/{id}/messages"), &admin, None).await;
    let last = messages["messages"].as_array().and_then(|m| m.last()).map(|m| m["id"].clone()).expect("a message");
    let path = format!("/api/mobile/conversations/{id}/read");
    let (status, _) = app.authed(Method::POST, &path, &admin, Some(json!({"message_id": last}))).await;
    assert_eq!(status, StatusCode::OK);
    app.clock.advance(Duration::from_secs(6));
    let pushes = peer.wait_for(1).await;
    assert_eq!(pushes[0].token, "fcm-ann");
    settled(&app).await;
    assert!(peer.delivered_to(APPLE).is_empty(), "read on another device: not pushed");

    // The visitor writes; the admin's push fails once, and Ann takes the
    // conversation before its retry: the admin is no longer to hear of
    // it, and Ann's own action pushes nobody.
    app.clock.advance(Duration::from_secs(11));
    peer.script(APPLE, &[(500, json!({}))]);
    app.post_message("/api", &f.token, &public_id, "anyone?").await;
    let pushes = peer.wait_for(2).await;
    assert_eq!(pushes[1].token, "fcm-ann");
    eventually(|| async { (attempts(&app).await == 1).then_some(()) }).await;
    let path = format!("/api/mobile/conversations/{id}/assign");
    let (status, body) = app.authed(Method::POST, &path, &ann, Some(json!({"operator_id": ann_id}))).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    app.clock.advance(Duration::from_secs(11));
    settled(&app).await;
    assert!(peer.delivered_to(APPLE).is_empty(), "taken by Ann before the retry: the admin is not pushed");
    assert_eq!(peer.delivered_to("fcm-ann").len(), 2, "taking it herself pushed Ann nothing");
}

#[tokio::test]
async fn logging_out_removes_the_device_and_its_pushes() {
    let Setup { app, peer, .. } = setup().await;
    let f = app.fixture("acme", &[]).await;
    app.operator(&f, "ann@acme.example.com", Role::Agent, &[f.scope.site]).await;
    let admin = app.login("admin@acme.example.com").await;
    let ann = app.login("ann@acme.example.com").await;
    register(&app, &admin, "ios", json!(APPLE)).await;
    register(&app, &ann, "ios", json!(APPLE_2)).await;
    let (status, _) = app.authed(Method::POST, "/api/mobile/logout", &ann, None).await;
    assert!(status.is_success(), "{status}");
    app.open_conversation("/api", &f.token, "v1", "hello").await;
    let pushes = peer.wait_for(1).await;
    assert_eq!(pushes[0].token, APPLE);
    settled(&app).await;
    assert!(peer.delivered_to(APPLE_2).is_empty(), "a signed-out phone is not pushed");
}

#[tokio::test]
async fn a_relay_gets_the_minimal_payload_and_the_token_signed_like_a_webhook() {
    let peer = Peer::start().await;
    let relay = format!("{}/relay", peer.base);
    let app = TestApp::with()
        .var("PARLEY_EXTRA_CA_FILE", &fixture("ca.pem"))
        .var("PARLEY_PUSH_RELAY_URL", &relay)
        .var("PARLEY_PUSH_RELAY_SECRET", RELAY_SECRET)
        .var("PARLEY_PUSH_CONTENT", "full")
        .start()
        .await;
    peer.follow(app.clock.clone());
    let f = app.fixture("acme", &[]).await;
    let admin = app.login("admin@acme.example.com").await;
    register(&app, &admin, "android", json!("relay-token")).await;
    app.open_conversation("/api", &f.token, "v1", "secret text").await;
    let pushes = peer.wait_for(1).await;
    let p = &pushes[0];
    assert_eq!((p.provider, p.token.as_str()), ("relay", "relay-token"));
    assert_eq!(p.payload["platform"], "android");
    assert_eq!(p.payload["notification"]["title"], "New conversation");
    assert!(!p.payload.to_string().contains("secret text"), "the relay never gets visitor text");
    assert!(peer.refused().is_empty(), "{:?}", peer.refused());
}

#[tokio::test]
async fn two_instances_send_each_push_once() {
    if backend() != "postgres" {
        return;
    }
    let Setup { app: a, peer, _dir } = setup().await;
    let account = service_account(_dir.path(), &peer);
    let b = with_providers(&peer, &account, &[("PARLEY_DATABASE_URL", &a.database_url)]).start().await;
    let f = a.fixture("acme", &[]).await;
    let admin = a.login("admin@acme.example.com").await;
    register(&a, &admin, "ios", json!(APPLE)).await;
    let conversations = 12;
    for n in 0..conversations {
        let through = if n % 2 == 0 { &a } else { &b };
        through.open_conversation("/api", &f.token, &format!("visitor-{n}"), "hello").await;
    }
    let pushes = peer.wait_for(conversations).await;
    let threads: std::collections::BTreeSet<String> =
        pushes.iter().map(|p| p.payload["aps"]["thread-id"].as_str().unwrap_or_default().to_owned()).collect();
    assert_eq!(threads.len(), conversations, "one push per conversation");
    settled(&a).await;
    assert_eq!(peer.delivered().len(), conversations, "none twice");
}

#[tokio::test]
async fn the_web_app_subscribes_a_browser_through_its_session() {
    let Setup { app, peer, .. } = setup().await;
    let f = app.fixture("acme", &[]).await;
    let (status, sw) = raw(&app, "/app/sw.js").await;
    assert_eq!(status, StatusCode::OK);
    assert!(sw.contains("notificationclick") && sw.contains("/app/conversations/"), "the worker opens the conversation");
    let (status, key) = app.get("/app/push/key").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(URL_SAFE_NO_PAD.decode(key["public_key"].as_str().expect("key")).expect("b64").len(), 65);

    let mut browser = Browser::signed_in(&app, "admin@acme.example.com").await;
    let inbox = browser.inbox("").await;
    assert!(inbox.html.contains("id=\"enable-push\""), "the control is on the page");
    let csrf = inbox.attr("data-csrf");
    let sub = peer.subscribe("browser").to_string();
    let page = browser.post("/app/push/subscribe", &[("platform", "web"), ("push_token", &sub)]).await;
    assert_eq!(page.status, StatusCode::FORBIDDEN, "no anti-forgery token, no device");
    let bad =
        browser.post("/app/push/subscribe", &[("csrf", &csrf), ("platform", "web"), ("push_token", "{\"endpoint\":\"http://x\"}")]).await;
    let body: Value = serde_json::from_str(&bad.html).expect("a JSON error");
    assert_error(bad.status, &body, StatusCode::UNPROCESSABLE_ENTITY, "validation_failed");
    let page = browser.post("/app/push/subscribe", &[("csrf", &csrf), ("platform", "web"), ("push_token", &sub)]).await;
    assert_eq!(page.status, StatusCode::CREATED, "{}", page.html);
    let body: Value = serde_json::from_str(&page.html).expect("JSON");
    assert_eq!(body["device"]["platform"], "web");
    // The session's device is pushed like a phone's.
    app.open_conversation("/api", &f.token, "v1", "hello").await;
    let pushes = peer.wait_for(1).await;
    assert_eq!((pushes[0].provider, pushes[0].token.as_str()), ("web", "browser"));
}

async fn raw(app: &TestApp, path: &str) -> (StatusCode, String) {
    let res = app.client.get(app.url(path)).send().await.expect("request");
    (res.status(), res.text().await.expect("text"))
}

#[tokio::test]
async fn operators_are_pushed_only_about_what_they_chose() {
    let Setup { app, peer, .. } = setup().await;
    let f = app.fixture("acme", &[]).await;
    let ann = app.operator(&f, "ann@acme.example.com", Role::Agent, &[f.scope.site]).await;
    let admin = app.login("admin@acme.example.com").await;
    let ann_token = app.login("ann@acme.example.com").await;
    register(&app, &admin, "ios", json!(APPLE)).await;
    register(&app, &ann_token, "android", json!("fcm-ann")).await;
    let (status, body) = app.authed(Method::PATCH, "/api/v1/mobile/me", &ann_token, Some(json!({"notify_unassigned": false}))).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["user"]["notifications"], json!({"unassigned": false, "mine": true}));

    let public_id = app.open_conversation("/api", &f.token, "v1", "hello").await;
    peer.wait_for(1).await;
    settled(&app).await;
    let to: Vec<String> = peer.delivered().iter().map(|p| p.token.clone()).collect();
    assert_eq!(to, [APPLE], "Ann chose not to hear of conversations nobody has taken");

    // Ann turns off her own conversations too: an assignment to her is silent.
    app.authed(Method::PATCH, "/api/v1/mobile/me", &ann_token, Some(json!({"notify_mine": false}))).await;
    let id = conversation_id(&app, &admin, &public_id).await;
    let (status, _) =
        app.authed(Method::POST, &format!("/api/mobile/conversations/{id}/assign"), &admin, Some(json!({"operator_id": ann}))).await;
    assert_eq!(status, StatusCode::OK);
    app.clock.advance(Duration::from_secs(11));
    app.post_message("/api", &f.token, &public_id, "anyone?").await;
    settled(&app).await;
    assert_eq!(pending_pushes(&app).await, 0);
    assert_eq!(peer.delivered().len(), 1, "nothing more: Ann chose neither");
}
