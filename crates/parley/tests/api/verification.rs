//! Visitor verification through a real SMTP server and a real HTTP SMS
//! gateway on loopback.

use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::helpers::*;
use crate::receiver::{Receiver, Reply};
use crate::smtp_sink::SmtpSink;

const PUBLIC_URL: &str = "http://chat.parley.test";

struct Setup {
    app: TestApp,
    smtp: SmtpSink,
    sms: Receiver,
    f: Fixture,
    public_id: String,
}

async fn setup_with(vars: &[(&str, &str)]) -> Setup {
    let smtp = SmtpSink::start().await;
    let sms = Receiver::start().await;
    let mut spawn = TestApp::with()
        .var("PARLEY_SMTP_URL", &smtp.url())
        .var("PARLEY_MAIL_FROM", "Parley <noreply@parley.test>")
        .var("PARLEY_SMS_GATEWAY_URL", &sms.url)
        .var("PARLEY_SMS_GATEWAY_TOKEN", "sms-secret")
        .var("PARLEY_PUBLIC_URL", PUBLIC_URL);
    for (k, v) in vars {
        spawn = spawn.var(k, v);
    }
    let app = spawn.start().await;
    let f = app.fixture("acme", &[]).await;
    app.post(
        "/api/widget/visitors",
        json!({"token": f.token, "uuid": "ann", "name": "Ann", "email": "ann@example.com", "phone": "+14155550123"}),
    )
    .await;
    let public_id = app.open_conversation("/api", &f.token, "ann", "Is my order shipped?").await;
    Setup { app, smtp, sms, f, public_id }
}

async fn setup() -> Setup {
    setup_with(&[]).await
}

impl Setup {
    async fn start(&self, prefix: &str, body: Value) -> (StatusCode, Value) {
        let mut body = body;
        body["token"] = json!(self.f.token);
        self.app.post(&format!("{prefix}/widget/conversations/{}/verification/start", self.public_id), body).await
    }

    async fn confirm(&self, prefix: &str, id: i64, code: &str) -> (StatusCode, Value) {
        let body = json!({"token": self.f.token, "challenge_id": id, "code": code});
        self.app.post(&format!("{prefix}/widget/conversations/{}/verification/confirm", self.public_id), body).await
    }

    /// Starts and returns the challenge id.
    async fn started(&self, prefix: &str, body: Value) -> i64 {
        let (status, res) = self.start(prefix, body).await;
        assert_eq!(status, StatusCode::ACCEPTED, "{res}");
        res["challenge"]["id"].as_i64().unwrap()
    }

    async fn email_code(&self) -> String {
        code_after(&self.smtp.next().await.data, "code is ")
    }
}

fn code_after(text: &str, marker: &str) -> String {
    let at = text.find(marker).unwrap_or_else(|| panic!("no {marker:?} in {text}")) + marker.len();
    let code: String = text[at..].chars().take(6).collect();
    assert!(code.chars().all(|c| c.is_ascii_digit()), "{code}");
    code
}

fn link_in(text: &str) -> String {
    let at = text.find(&format!("{PUBLIC_URL}/verify/")).unwrap_or_else(|| panic!("no link in {text}"));
    text[at..].split(|c: char| c.is_whitespace() || c == '"' || c == '<').next().unwrap().to_owned()
}

#[tokio::test]
async fn email_code_verifies_the_visitor_and_the_conversation() {
    let s = setup().await;
    for (n, prefix) in PREFIXES.into_iter().enumerate() {
        if n > 0 {
            s.app.clock.advance(Duration::from_secs(31));
        }
        let (status, body) = s.start(prefix, json!({"method": "email_otp"})).await;
        assert_eq!(status, StatusCode::ACCEPTED, "{body}");
        let challenge = &body["challenge"];
        assert_eq!(challenge["method"], "email_otp");
        assert_eq!(challenge["target_hint"], "a***@example.com", "the visitor's email by default, masked");
        assert!(challenge["expires_at"].as_str().unwrap().ends_with(":10:00.000Z") || n > 0, "ten minutes: {challenge}");
        let id = challenge["id"].as_i64().unwrap();

        let mail = s.smtp.next().await;
        assert_eq!(mail.to, ["ann@example.com"]);
        assert_eq!(mail.from, "noreply@parley.test");
        assert!(mail.data.contains("Subject: Your acme Inc. verification code"), "{}", mail.data);
        assert!(mail.data.contains("multipart/alternative") && mail.data.contains("text/plain") && mail.data.contains("text/html"));
        let code = code_after(&mail.data, "code is ");

        let wrong = if code == "000000" { "111111" } else { "000000" };
        let (status, body) = s.confirm(prefix, id, wrong).await;
        assert_error(status, &body, StatusCode::UNPROCESSABLE_ENTITY, "invalid_code");
        let (status, body) = s.confirm(prefix, id, &code).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(body["verification"]["status"], "verified");
        assert_eq!(body["verification"]["method"], "email_otp");
        assert!(body["verification"]["verified_at"].is_string());
        assert_eq!(body["conversation"]["verified"], true);
        assert_eq!(body["conversation"]["public_id"], s.public_id.as_str());
    }
    let admin = s.app.login("admin@acme.example.com").await;
    let (_, list) = s.app.authed(Method::GET, "/api/mobile/conversations", &admin, None).await;
    assert_eq!(list["conversations"][0]["verified"], true, "operators see it");
    assert_eq!(list["conversations"][0]["visitor"]["verified"], true);
    let (_, visitor) = s.app.post("/api/widget/visitors", json!({"token": s.f.token, "uuid": "ann"})).await;
    assert_eq!(visitor["visitor"]["verified"], true);
    let (_, messages) = s.app.get(&format!("/api/widget/conversations/{}/messages?token={}", s.public_id, s.f.token)).await;
    assert_eq!(messages["messages"].as_array().unwrap().last().unwrap()["body"], "The visitor verified their email address");
    let events = s.app.events("acme").await;
    assert_eq!(events.iter().filter(|e| *e == "verification.completed").count(), 2);
}

#[tokio::test]
async fn sms_code_goes_through_the_gateway() {
    let s = setup().await;
    let id = s.started("/api/v1", json!({"method": "sms_otp"})).await;
    let sent = s.sms.next().await;
    assert_eq!(sent.header("authorization"), "Bearer sms-secret");
    assert_eq!(sent.header("content-type"), "application/json");
    let body = sent.json();
    assert_eq!(body["to"], "+14155550123");
    let code: String = body["body"].as_str().unwrap().chars().take(6).collect();
    let (status, res) = s.confirm("/api/v1", id, &code).await;
    assert_eq!(status, StatusCode::OK, "{res}");
    assert_eq!(res["verification"]["method"], "sms_otp");
    let (_, messages) = s.app.get(&format!("/api/widget/conversations/{}/messages?token={}", s.public_id, s.f.token)).await;
    assert_eq!(messages["messages"].as_array().unwrap().last().unwrap()["body"], "The visitor verified their phone number");
}

#[tokio::test]
async fn a_magic_link_confirms_once_and_is_built_from_the_public_url() {
    let s = setup().await;
    let id = s.started("/api", json!({"method": "magic_link", "target": "other@example.com"})).await;
    let mail = s.smtp.next().await;
    assert_eq!(mail.to, ["other@example.com"]);
    let link = link_in(&mail.data);
    assert!(link.starts_with(&format!("{PUBLIC_URL}/verify/{id}?code=")), "never from the request's Host: {link}");
    assert!(link.len() > PUBLIC_URL.len() + 50, "a long random code");
    let local = link.replace(PUBLIC_URL, &s.app.base);
    let code = link.split("code=").nth(1).unwrap().to_owned();

    // Opening the link (as a mail scanner would) changes nothing.
    let res = s.app.client.get(&local).send().await.unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    assert!(res.headers()["content-type"].to_str().unwrap().starts_with("text/html"));
    let page = res.text().await.unwrap();
    assert!(page.contains(&format!(r#"<form method="post" action="/verify/{id}">"#)) && page.contains(&code), "{page}");
    let (_, visitor) = s.app.post("/api/widget/visitors", json!({"token": s.f.token, "uuid": "ann"})).await;
    assert_eq!(visitor["visitor"]["verified"], false, "a GET does not verify");

    // The page's button does.
    let confirm = || s.app.client.post(s.app.url(&format!("/verify/{id}"))).form(&[("code", code.as_str())]).send();
    let res = confirm().await.unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    let page = res.text().await.unwrap();
    assert!(page.contains("You are verified") && page.contains("return to the chat"), "{page}");
    assert_eq!(confirm().await.unwrap().status(), StatusCode::GONE, "single use");
    let (_, visitor) = s.app.post("/api/widget/visitors", json!({"token": s.f.token, "uuid": "ann"})).await;
    assert_eq!(visitor["visitor"]["verified"], true);
    assert_eq!(visitor["visitor"]["email_hint"], "o***@example.com", "the verified address is the visitor's email now");

    for bad in ["/verify/999999", "/verify/abc"] {
        let res = s.app.client.post(s.app.url(bad)).form(&[("code", "x")]).send().await.unwrap();
        assert_eq!(res.status(), StatusCode::NOT_FOUND, "{bad}");
    }
    assert_eq!(s.app.client.get(s.app.url(&format!("/verify/{id}"))).send().await.unwrap().status(), StatusCode::NOT_FOUND, "no code")
}

#[tokio::test]
async fn a_magic_link_code_also_works_through_confirm() {
    let s = setup().await;
    let id = s.started("/api", json!({"method": "magic_link"})).await;
    let link = link_in(&s.smtp.next().await.data);
    let code = link.split("code=").nth(1).unwrap().to_owned();
    let (status, body) = s.confirm("/api/v1", id, &code).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["verification"]["method"], "magic_link");
}

#[tokio::test]
async fn inputs_are_validated() {
    let s = setup().await;
    for prefix in PREFIXES {
        let path = format!("{prefix}/widget/conversations/{}/verification/start", s.public_id);
        let (status, body) = s.app.post(&path, json!({})).await;
        assert_fields(status, &body, &["method", "token"]);
        let (status, body) = s.start(prefix, json!({"method": "carrier_pigeon", "target": 5})).await;
        assert_fields(status, &body, &["method", "target"]);
        let (status, body) = s.start(prefix, json!({"method": "email_otp", "target": "not-an-email"})).await;
        assert_fields(status, &body, &["target"]);
        let (status, body) = s.start(prefix, json!({"method": "sms_otp", "target": "0044 20 7946 0000"})).await;
        assert_fields(status, &body, &["target"]);
        let path = format!("{prefix}/widget/conversations/{}/verification/confirm", s.public_id);
        let (status, body) = s.app.post(&path, json!({})).await;
        assert_fields(status, &body, &["challenge_id", "code", "token"]);
        let (status, body) = s.app.post(&path, json!({"token": s.f.token, "challenge_id": "one", "code": ""})).await;
        assert_fields(status, &body, &["challenge_id", "code"]);
    }
    assert!(s.smtp.drain().await.is_empty(), "nothing was sent");
}

#[tokio::test]
async fn without_a_known_target_the_start_is_422() {
    let s = setup().await;
    let other = s.app.open_conversation("/api", &s.f.token, "anonymous", "hi").await;
    let path = format!("/api/widget/conversations/{other}/verification/start");
    for method in ["email_otp", "sms_otp", "magic_link"] {
        let (status, body) = s.app.post(&path, json!({"token": s.f.token, "method": method})).await;
        assert_fields(status, &body, &["target"]);
    }
}

#[tokio::test]
async fn codes_expire_after_ten_minutes() {
    let s = setup().await;
    let id = s.started("/api", json!({"method": "email_otp"})).await;
    let code = s.email_code().await;
    s.app.clock.advance(Duration::from_secs(600));
    let (status, body) = s.confirm("/api", id, &code).await;
    assert_error(status, &body, StatusCode::GONE, "challenge_expired");
}

#[tokio::test]
async fn five_wrong_codes_spend_the_challenge() {
    let s = setup().await;
    let id = s.started("/api", json!({"method": "email_otp"})).await;
    let code = s.email_code().await;
    let wrong = if code == "999999" { "999998" } else { "999999" };
    for _ in 0..5 {
        let (status, body) = s.confirm("/api", id, wrong).await;
        assert_error(status, &body, StatusCode::UNPROCESSABLE_ENTITY, "invalid_code");
    }
    let (status, body) = s.confirm("/api", id, &code).await;
    assert_error(status, &body, StatusCode::GONE, "challenge_expired");
}

#[tokio::test]
async fn a_code_works_once() {
    let s = setup().await;
    let id = s.started("/api", json!({"method": "email_otp"})).await;
    let code = s.email_code().await;
    assert_eq!(s.confirm("/api", id, &code).await.0, StatusCode::OK);
    let (status, body) = s.confirm("/api", id, &code).await;
    assert_error(status, &body, StatusCode::GONE, "challenge_expired");
}

#[tokio::test]
async fn a_new_start_supersedes_the_previous_challenge() {
    let s = setup().await;
    let first = s.started("/api", json!({"method": "email_otp"})).await;
    let first_code = s.email_code().await;
    s.app.clock.advance(Duration::from_secs(31));
    let second = s.started("/api", json!({"method": "email_otp"})).await;
    let second_code = s.email_code().await;
    let (status, body) = s.confirm("/api", first, &first_code).await;
    assert_error(status, &body, StatusCode::GONE, "challenge_expired");
    assert_eq!(s.confirm("/api", second, &second_code).await.0, StatusCode::OK);
}

#[tokio::test]
async fn another_sites_token_or_conversation_is_404() {
    let s = setup().await;
    let id = s.started("/api", json!({"method": "email_otp"})).await;
    let code = s.email_code().await;
    let globex = s.app.fixture("globex", &[]).await;
    let sibling = s.app.site("acme", s.f.scope.tenant, &[]).await;
    for other in [&globex.token, &sibling.token] {
        let path = format!("/api/widget/conversations/{}/verification/start", s.public_id);
        let (status, body) = s.app.post(&path, json!({"token": other, "method": "email_otp"})).await;
        assert_error(status, &body, StatusCode::NOT_FOUND, "not_found");
        let path = format!("/api/widget/conversations/{}/verification/confirm", s.public_id);
        let (status, body) = s.app.post(&path, json!({"token": other, "challenge_id": id, "code": code})).await;
        assert_error(status, &body, StatusCode::NOT_FOUND, "not_found");
    }
    // A challenge of one conversation cannot be confirmed through another.
    let other_conversation = s.app.open_conversation("/api", &s.f.token, "bob", "hi").await;
    let path = format!("/api/widget/conversations/{other_conversation}/verification/confirm");
    let (status, body) = s.app.post(&path, json!({"token": s.f.token, "challenge_id": id, "code": code})).await;
    assert_error(status, &body, StatusCode::NOT_FOUND, "not_found");
    assert_eq!(s.confirm("/api", id, &code).await.0, StatusCode::OK, "and the challenge was not touched");
}

#[tokio::test]
async fn a_failed_send_is_503_and_leaves_no_usable_challenge() {
    let s = setup().await;
    s.smtp.unavailable();
    let (status, body) = s.start("/api", json!({"method": "email_otp"})).await;
    assert_error(status, &body, StatusCode::SERVICE_UNAVAILABLE, "unavailable");
    assert_eq!(body["error"]["message"], "The verification message could not be sent; try again later.");
    s.sms.reply(&[Reply::Status(500)]);
    let (status, body) = s.start("/api", json!({"method": "sms_otp"})).await;
    assert_error(status, &body, StatusCode::SERVICE_UNAVAILABLE, "unavailable");
    s.sms.next().await;
    // Challenges 1 and 2 were created and failed: no code can confirm them.
    for id in [1, 2] {
        let (status, body) = s.confirm("/api", id, "123456").await;
        assert_error(status, &body, StatusCode::GONE, "challenge_expired");
    }
}

/// A recipient the provider refuses for good is the visitor's to fix: 422
/// on the target, not "try again later". Only an outage is 503.
#[tokio::test]
async fn a_refused_recipient_is_422_on_the_target_and_only_an_outage_is_503() {
    let s = setup().await;
    s.smtp.refuse_recipients();
    for method in ["email_otp", "magic_link"] {
        let (status, body) = s.start("/api", json!({"method": method, "target": "nobody@example.com"})).await;
        assert_fields(status, &body, &["target"]);
        assert!(body["error"]["fields"]["target"][0].as_str().unwrap().contains("refused"), "{body}");
    }
    let (status, body) = s.start("/api", json!({"method": "email_otp"})).await;
    assert_fields(status, &body, &["target"]);
    for refused in [400, 422] {
        s.sms.reply(&[Reply::Status(refused)]);
        let (status, body) = s.start("/api", json!({"method": "sms_otp"})).await;
        assert_fields(status, &body, &["target"]);
        s.sms.next().await;
    }
    // The gateway's own access, credit and limits, and its outages, are
    // the service's problem: the visitor is told to try again later.
    for outage in [401, 402, 403, 404, 405, 413, 429, 500, 502, 503] {
        s.sms.reply(&[Reply::Status(outage)]);
        let (status, body) = s.start("/api", json!({"method": "sms_otp"})).await;
        assert_error(status, &body, StatusCode::SERVICE_UNAVAILABLE, "unavailable");
        s.sms.next().await;
    }
    // So is a mail server that refuses Parley as a sender.
    s.smtp.deny_relay();
    let (status, body) = s.start("/api", json!({"method": "email_otp", "target": "ann@example.com"})).await;
    assert_error(status, &body, StatusCode::SERVICE_UNAVAILABLE, "unavailable");
}

/// A local part with dots next to each other (which browsers' email
/// fields accept) is sent quoted, as SMTP allows.
#[tokio::test]
async fn an_address_that_needs_quoting_is_sent_quoted() {
    let s = setup().await;
    let (status, body) = s.start("/api", json!({"method": "email_otp", "target": "ann..lee@example.com"})).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    assert_eq!(s.smtp.next().await.to, vec!["\"ann..lee\"@example.com".to_owned()]);
}

/// Addresses longer than RFC 5321 allows are refused before any provider
/// sees them: a local part over 64 characters, a whole over 254.
#[tokio::test]
async fn addresses_longer_than_smtp_allows_are_refused_on_their_field() {
    let s = setup().await;
    let long_local = format!("{}@example.com", "a".repeat(140));
    let long_whole = format!("ann@{}.com", vec!["d".repeat(63); 4].join("."));
    for email in [&long_local, &long_whole] {
        let (status, body) = s.start("/api", json!({"method": "email_otp", "target": email})).await;
        assert_fields(status, &body, &["target"]);
        let (status, body) = s.app.post("/api/widget/visitors", json!({"token": s.f.token, "uuid": "bea", "email": email})).await;
        assert_fields(status, &body, &["email"]);
    }
    assert!(s.smtp.drain().await.is_empty(), "nothing reached the mail server");
    let (status, body) = s.start("/api", json!({"method": "email_otp", "target": format!("{}@example.com", "a".repeat(64))})).await;
    assert_eq!(status, StatusCode::ACCEPTED, "64 is allowed: {body}");
}

#[tokio::test]
async fn unconfigured_methods_are_refused_and_not_offered() {
    let app = TestApp::spawn().await;
    let f = app.fixture("acme", &[]).await;
    let (_, config) = app.get(&format!("/api/widget/config/{}", f.token)).await;
    assert_eq!(config["installation"]["verification_methods"], json!([]));
    app.post("/api/widget/visitors", json!({"token": f.token, "uuid": "ann", "email": "ann@example.com"})).await;
    let public_id = app.open_conversation("/api", &f.token, "ann", "hi").await;
    let (status, body) = app
        .post(&format!("/api/widget/conversations/{public_id}/verification/start"), json!({"token": f.token, "method": "email_otp"}))
        .await;
    assert_fields(status, &body, &["method"]);

    let s = setup().await;
    let (_, config) = s.app.get(&format!("/api/widget/config/{}", s.f.token)).await;
    assert_eq!(config["installation"]["verification_methods"], json!(["email_otp", "sms_otp", "magic_link"]));
}

#[tokio::test]
async fn starts_are_limited_per_conversation() {
    let s = setup_with(&[("PARLEY_RATE_LIMITS", "on")]).await;
    s.started("/api", json!({"method": "email_otp"})).await;
    let res = s
        .app
        .client
        .post(s.app.url(&format!("/api/widget/conversations/{}/verification/start", s.public_id)))
        .json(&json!({"token": s.f.token, "method": "email_otp"}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::TOO_MANY_REQUESTS, "one per 30 seconds");
    assert_eq!(res.headers()["retry-after"], "30");
    for _ in 0..4 {
        s.app.clock.advance(Duration::from_secs(31));
        s.started("/api", json!({"method": "email_otp"})).await;
    }
    s.app.clock.advance(Duration::from_secs(31));
    let (status, body) = s.start("/api", json!({"method": "email_otp"})).await;
    assert_error(status, &body, StatusCode::TOO_MANY_REQUESTS, "rate_limited");
    assert_eq!(s.smtp.drain().await.len(), 5, "refused starts never reach the provider");
}

async fn sms_start(s: &Setup, public_id: &str, target: &str) -> (StatusCode, Value) {
    let path = format!("/api/widget/conversations/{public_id}/verification/start");
    s.app.post(&path, json!({"token": s.f.token, "method": "sms_otp", "target": target})).await
}

#[tokio::test]
async fn sms_is_limited_per_number_and_by_a_daily_budget() {
    let s = setup_with(&[("PARLEY_RATE_LIMITS", "on"), ("PARLEY_SMS_DAILY_BUDGET", "4")]).await;
    let mut conversations = Vec::new();
    for n in 0..5 {
        conversations.push(s.app.open_conversation("/api", &s.f.token, &format!("v{n}"), "hi").await);
    }
    for c in &conversations[..3] {
        assert_eq!(sms_start(&s, c, "+14155550100").await.0, StatusCode::ACCEPTED);
    }
    let (status, body) = sms_start(&s, &conversations[3], "+14155550100").await;
    assert_error(status, &body, StatusCode::TOO_MANY_REQUESTS, "rate_limited");
    assert_eq!(sms_start(&s, &conversations[3], "+14155550101").await.0, StatusCode::ACCEPTED, "another number is fine");
    let (status, body) = sms_start(&s, &conversations[4], "+14155550102").await;
    assert_error(status, &body, StatusCode::TOO_MANY_REQUESTS, "rate_limited");
    for _ in 0..4 {
        s.sms.next().await;
    }
}

#[tokio::test]
async fn starts_are_limited_per_client_address_and_tenant() {
    let s = setup_with(&[("PARLEY_RATE_LIMITS", "on"), ("PARLEY_VERIFY_LIMIT_PER_ADDRESS", "2/1h")]).await;
    let other = s.app.open_conversation("/api", &s.f.token, "bob", "hi").await;
    let third = s.app.open_conversation("/api", &s.f.token, "carl", "hi").await;
    s.started("/api", json!({"method": "email_otp"})).await;
    let path = |c: &str| format!("/api/widget/conversations/{c}/verification/start");
    let body = json!({"token": s.f.token, "method": "email_otp", "target": "bob@example.com"});
    assert_eq!(s.app.post(&path(&other), body.clone()).await.0, StatusCode::ACCEPTED);
    let (status, res) = s.app.post(&path(&third), body).await;
    assert_error(status, &res, StatusCode::TOO_MANY_REQUESTS, "rate_limited");

    let s = setup_with(&[("PARLEY_RATE_LIMITS", "on"), ("PARLEY_VERIFY_LIMIT_PER_TENANT", "1/1h")]).await;
    let other = s.app.open_conversation("/api", &s.f.token, "bob", "hi").await;
    s.started("/api", json!({"method": "email_otp"})).await;
    let (status, res) = s.app.post(&path(&other), json!({"token": s.f.token, "method": "email_otp", "target": "bob@example.com"})).await;
    assert_error(status, &res, StatusCode::TOO_MANY_REQUESTS, "rate_limited");
}

#[tokio::test]
async fn verification_completed_reaches_webhooks_signed() {
    let s = setup_with(&[("PARLEY_WEBHOOK_ALLOW_PRIVATE", "true"), ("PARLEY_WEBHOOK_POLL_INTERVAL", "20ms")]).await;
    let admin = s.app.login("admin@acme.example.com").await;
    let receiver = Receiver::start().await;
    let (_, secret) = crate::webhooks::register(&s.app, &admin, &receiver.url, Some(json!(["verification.completed"]))).await;
    let id = s.started("/api", json!({"method": "email_otp"})).await;
    let code = s.email_code().await;
    assert_eq!(s.confirm("/api", id, &code).await.0, StatusCode::OK);
    let envelope = crate::webhooks::verify(&receiver.next().await, &[&secret]);
    assert_eq!(envelope["event"], "verification.completed");
    assert_eq!(envelope["data"]["method"], "email_otp");
    assert_eq!(envelope["data"]["conversation"]["public_id"], s.public_id.as_str());
    assert_eq!(envelope["data"]["conversation"]["verified"], true);
    assert_eq!(envelope["data"]["visitor"]["uuid"], "ann");
}

/// Challenge ids are sequential and the link needs no token: wrong codes
/// through the link must not let anyone spend a visitor's link.
#[tokio::test]
async fn wrong_link_codes_do_not_spend_the_link() {
    let s = setup().await;
    let id = s.started("/api", json!({"method": "magic_link"})).await;
    let link = link_in(&s.smtp.next().await.data).replace(PUBLIC_URL, &s.app.base);
    let code = link.split("code=").nth(1).unwrap().to_owned();
    for _ in 0..10 {
        let res = s.app.client.post(s.app.url(&format!("/verify/{id}"))).form(&[("code", "guess")]).send().await.unwrap();
        assert_eq!(res.status(), StatusCode::NOT_FOUND);
    }
    let res = s.app.client.post(s.app.url(&format!("/verify/{id}"))).form(&[("code", code.as_str())]).send().await.unwrap();
    assert_eq!(res.status(), StatusCode::OK, "the real link still works");
}

#[tokio::test]
async fn changing_the_verified_email_clears_the_verification() {
    let s = setup().await;
    let id = s.started("/api", json!({"method": "email_otp", "target": "real@example.com"})).await;
    let code = s.email_code().await;
    assert_eq!(s.confirm("/api", id, &code).await.0, StatusCode::OK);
    let admin = s.app.login("admin@acme.example.com").await;
    let (_, list) = s.app.authed(Method::GET, "/api/mobile/conversations", &admin, None).await;
    let c = &list["conversations"][0];
    assert_eq!(
        (c["visitor"]["email"].as_str(), c["verified"].as_bool()),
        (Some("real@example.com"), Some(true)),
        "operators see what was verified"
    );

    s.app.post("/api/widget/visitors", json!({"token": s.f.token, "uuid": "ann", "name": "Still Ann"})).await;
    let (_, list) = s.app.authed(Method::GET, "/api/mobile/conversations", &admin, None).await;
    assert_eq!(list["conversations"][0]["verified"], true, "other changes keep it");

    let (_, visitor) = s.app.post("/api/widget/visitors", json!({"token": s.f.token, "uuid": "ann", "email": "ceo@victim.example"})).await;
    assert_eq!(visitor["visitor"]["verified"], false);
    let (_, list) = s.app.authed(Method::GET, "/api/mobile/conversations", &admin, None).await;
    let c = &list["conversations"][0];
    assert_eq!(
        (c["visitor"]["email"].as_str(), c["verified"].as_bool()),
        (Some("ceo@victim.example"), Some(false)),
        "a new address is unverified"
    );
}

#[tokio::test]
async fn email_codes_are_limited_per_recipient() {
    let s = setup_with(&[("PARLEY_RATE_LIMITS", "on"), ("PARLEY_VERIFY_EMAIL_LIMIT_PER_RECIPIENT", "2/1h")]).await;
    let mut conversations = Vec::new();
    for n in 0..3 {
        conversations.push(s.app.open_conversation("/api", &s.f.token, &format!("v{n}"), "hi").await);
    }
    let start = |c: &str| {
        let path = format!("/api/widget/conversations/{c}/verification/start");
        let body = json!({"token": s.f.token, "method": "magic_link", "target": "victim@example.com"});
        (path, body)
    };
    for c in &conversations[..2] {
        let (path, body) = start(c);
        assert_eq!(s.app.post(&path, body).await.0, StatusCode::ACCEPTED);
    }
    let (path, body) = start(&conversations[2]);
    let (status, res) = s.app.post(&path, body).await;
    assert_error(status, &res, StatusCode::TOO_MANY_REQUESTS, "rate_limited");
    assert_eq!(s.smtp.drain().await.len(), 2, "the third never reached the mail server");
}

/// `Victim@mail.test` and `victim@mail.test` are one mailbox: they share
/// the per-recipient limit.
#[tokio::test]
async fn the_recipient_limit_ignores_the_case_of_the_address() {
    let s = setup_with(&[("PARLEY_RATE_LIMITS", "on"), ("PARLEY_VERIFY_EMAIL_LIMIT_PER_RECIPIENT", "2/1h")]).await;
    let mut conversations = Vec::new();
    for n in 0..3 {
        conversations.push(s.app.open_conversation("/api", &s.f.token, &format!("v{n}"), "hi").await);
    }
    let targets = ["Victim@mail.test", "victim@MAIL.test", "VICTIM@mail.test"];
    for (c, target) in conversations.iter().zip(targets).take(2) {
        let path = format!("/api/widget/conversations/{c}/verification/start");
        let (status, body) = s.app.post(&path, json!({"token": s.f.token, "method": "email_otp", "target": target})).await;
        assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    }
    let path = format!("/api/widget/conversations/{}/verification/start", conversations[2]);
    let (status, res) = s.app.post(&path, json!({"token": s.f.token, "method": "email_otp", "target": targets[2]})).await;
    assert_error(status, &res, StatusCode::TOO_MANY_REQUESTS, "rate_limited");
    assert_eq!(s.smtp.drain().await.len(), 2);
}

/// After an SMS verification the visitor may type any email and name:
/// operators see which contact detail was proven and which was not.
#[tokio::test]
async fn operators_see_what_a_verification_proved() {
    let s = setup().await;
    let id = s.started("/api", json!({"method": "sms_otp"})).await;
    let sms = s.sms.next().await;
    let code: String = sms.json()["body"].as_str().unwrap().chars().take(6).collect();
    assert_eq!(s.confirm("/api", id, &code).await.0, StatusCode::OK);
    let (status, _) = s
        .app
        .post("/api/widget/visitors", json!({"token": s.f.token, "uuid": "ann", "name": "The CEO", "email": "ceo@bank.example"}))
        .await;
    assert_eq!(status, StatusCode::OK);

    let admin = s.app.login("admin@acme.example.com").await;
    for prefix in PREFIXES {
        let (_, list) = s.app.authed(Method::GET, &format!("{prefix}/mobile/conversations"), &admin, None).await;
        let v = &list["conversations"][0]["visitor"];
        assert_eq!(v["verified"], true, "{v}");
        assert_eq!(v["verified_method"], "sms_otp");
        assert_eq!(v["verified_target"], "+14155550123");
        assert_eq!(v["phone"], "+14155550123");
        assert_eq!(v["phone_verified"], true, "the phone was proven");
        assert_eq!(v["email"], "ceo@bank.example");
        assert_eq!(v["email_verified"], false, "the email was not");
    }

    // An email verification proves the address, whatever its case later.
    let id = s.started("/api", json!({"method": "email_otp", "target": "ann@example.com"})).await;
    let code = s.email_code().await;
    s.app.clock.advance(Duration::from_secs(31));
    assert_eq!(s.confirm("/api", id, &code).await.0, StatusCode::OK);
    s.app.post("/api/widget/visitors", json!({"token": s.f.token, "uuid": "ann", "email": "Ann@Example.com"})).await;
    let (_, list) = s.app.authed(Method::GET, "/api/mobile/conversations", &admin, None).await;
    let v = &list["conversations"][0]["visitor"];
    assert_eq!(
        (v["verified_method"].as_str(), v["email_verified"].as_bool(), v["phone_verified"].as_bool()),
        (Some("email_otp"), Some(true), Some(false)),
        "{v}"
    );
}

/// The web app's conversation page says how the visitor verified and
/// which address it proved.
#[tokio::test]
async fn the_conversation_page_shows_what_was_verified() {
    let s = setup().await;
    let mut admin = crate::web_browser::Browser::signed_in(&s.app, "admin@acme.example.com").await;
    let id = admin.inbox("").await.first_conversation();
    let before = admin.conversation(id).await;
    assert!(before.html.contains("<dd class=\"verified\">No</dd>"), "{}", before.html);
    assert!(before.html.contains("ann@example.com") && before.html.contains("+14155550123"), "the visitor's details");

    let id = s.started("/api", json!({"method": "email_otp"})).await;
    let code = s.email_code().await;
    assert_eq!(s.confirm("/api", id, &code).await.0, StatusCode::OK);
    let after = admin.conversation(id).await;
    assert!(after.html.contains("Email code: <strong>ann@example.com</strong>"), "{}", after.html);
}
