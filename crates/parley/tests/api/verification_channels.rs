//! The verification channels as admins see them (`GET admin/verification`)
//! and their test messages (`POST admin/verification/test`), through a
//! real SMTP server and a real HTTP SMS gateway on loopback.

use parley_domain::model::Role;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::helpers::*;
use crate::receiver::{Receiver, Reply};
use crate::smtp_sink::SmtpSink;

async fn with_channels(vars: &[(&str, &str)]) -> (TestApp, SmtpSink, Receiver) {
    let (smtp, sms) = (SmtpSink::start().await, Receiver::start().await);
    let mut spawn = TestApp::with()
        .var("PARLEY_SMTP_URL", &smtp.url())
        .var("PARLEY_MAIL_FROM", "Parley <noreply@parley.test>")
        .var("PARLEY_SMS_GATEWAY_URL", &sms.url);
    for (k, v) in vars {
        spawn = spawn.var(k, v);
    }
    (spawn.start().await, smtp, sms)
}

async fn test_send(app: &TestApp, token: &str, prefix: &str, body: Value) -> (StatusCode, Value) {
    app.authed(Method::POST, &format!("{prefix}/admin/verification/test"), token, Some(body)).await
}

#[tokio::test]
async fn admins_see_the_configured_channels_and_what_the_widget_offers() {
    let (app, _smtp, _sms) = with_channels(&[]).await;
    app.fixture("acme", &[]).await;
    let admin = app.login("admin@acme.example.com").await;
    for prefix in PREFIXES {
        let (status, body) = app.authed(Method::GET, &format!("{prefix}/admin/verification"), &admin, None).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(
            body["verification"],
            json!({
                "methods": ["email_otp", "sms_otp", "magic_link"],
                "channels": [
                    {"channel": "email", "configured": true, "provider": "smtp", "methods": ["email_otp", "magic_link"]},
                    {"channel": "sms", "configured": true, "provider": "sms_gateway", "methods": ["sms_otp"]},
                ],
            })
        );
    }

    // `parley serve` without channels offers nothing.
    let bare = TestApp::spawn().await;
    bare.fixture("acme", &[]).await;
    let admin = bare.login("admin@acme.example.com").await;
    let (_, body) = bare.authed(Method::GET, "/api/admin/verification", &admin, None).await;
    assert_eq!(body["verification"]["methods"], json!([]));
    assert_eq!(
        body["verification"]["channels"][0],
        json!({"channel": "email", "configured": false, "provider": null, "methods": ["email_otp", "magic_link"]})
    );
    let (status, body) = test_send(&bare, &admin, "/api", json!({"channel": "email", "to": "me@example.com"})).await;
    assert_error(status, &body, StatusCode::CONFLICT, "conflict");
    let (status, body) = test_send(&bare, &admin, "/api", json!({"channel": "sms", "to": "+14155550123"})).await;
    assert_error(status, &body, StatusCode::CONFLICT, "conflict");
}

#[tokio::test]
async fn a_test_email_and_a_test_sms_really_go_out() {
    let (app, smtp, sms) = with_channels(&[]).await;
    app.fixture("acme", &[]).await;
    let admin = app.login("admin@acme.example.com").await;

    let (status, body) = test_send(&app, &admin, "/api/v1", json!({"channel": "email", "to": "ops@example.com"})).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["test"]["channel"], "email");
    assert_eq!(body["test"]["provider"], "smtp");
    assert_eq!(body["test"]["to"], "ops@example.com");
    assert_eq!(body["test"]["sent_at"], "2026-01-01T00:00:00.000Z");
    let mail = smtp.next().await;
    assert_eq!(mail.to, vec!["ops@example.com".to_owned()]);
    assert!(mail.data.contains("Parley test email for acme Inc."), "{}", mail.data);

    let (status, body) = test_send(&app, &admin, "/api", json!({"channel": "sms", "to": "+14155550123"})).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["test"]["provider"], "sms_gateway");
    let text = sms.next().await.json();
    assert_eq!(text["to"], "+14155550123");
    assert!(text["body"].as_str().unwrap().contains("Parley test message for acme Inc."), "{text}");
}

#[tokio::test]
async fn a_refused_send_is_reported_without_the_providers_details() {
    let (app, smtp, sms) = with_channels(&[]).await;
    app.fixture("acme", &[]).await;
    let admin = app.login("admin@acme.example.com").await;
    smtp.unavailable();
    let (status, body) = test_send(&app, &admin, "/api", json!({"channel": "email", "to": "ops@example.com"})).await;
    assert_error(status, &body, StatusCode::SERVICE_UNAVAILABLE, "unavailable");
    assert_eq!(body["error"]["message"], "The test message could not be sent; the service's logs say why.");
    sms.reply(&[Reply::Status(500)]);
    let (status, body) = test_send(&app, &admin, "/api", json!({"channel": "sms", "to": "+14155550123"})).await;
    assert_error(status, &body, StatusCode::SERVICE_UNAVAILABLE, "unavailable");
    assert!(!body.to_string().contains("127.0.0.1"), "{body}");
}

/// A test to an address the provider refuses for good is refused on
/// `to`: the admin typed it and can fix it.
#[tokio::test]
async fn a_refused_test_recipient_is_422_on_to() {
    let (app, smtp, sms) = with_channels(&[]).await;
    app.fixture("acme", &[]).await;
    let admin = app.login("admin@acme.example.com").await;
    smtp.refuse_recipients();
    let (status, body) = test_send(&app, &admin, "/api", json!({"channel": "email", "to": "nobody@example.com"})).await;
    assert_fields(status, &body, &["to"]);
    sms.reply(&[Reply::Status(400)]);
    let (status, body) = test_send(&app, &admin, "/api/v1", json!({"channel": "sms", "to": "+14155550123"})).await;
    assert_fields(status, &body, &["to"]);
    let long = format!("{}@example.com", "a".repeat(65));
    let (status, body) = test_send(&app, &admin, "/api", json!({"channel": "email", "to": long})).await;
    assert_fields(status, &body, &["to"]);
}

#[tokio::test]
async fn test_sends_are_limited_per_tenant() {
    let (app, smtp, _sms) = with_channels(&[("PARLEY_RATE_LIMITS", "on"), ("PARLEY_VERIFY_TEST_LIMIT_PER_TENANT", "2/1h")]).await;
    let acme = app.fixture("acme", &[]).await;
    app.fixture("globex", &[]).await;
    app.operator(&acme, "second@acme.example", Role::Admin, &[]).await;
    let admin = app.login("admin@acme.example.com").await;
    let second = app.login("second@acme.example").await;
    let other = app.login("admin@globex.example.com").await;
    for token in [&admin, &second] {
        let (status, body) = test_send(&app, token, "/api", json!({"channel": "email", "to": "ops@example.com"})).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        smtp.next().await;
    }
    let (status, body) = test_send(&app, &admin, "/api", json!({"channel": "email", "to": "ops@example.com"})).await;
    assert_error(status, &body, StatusCode::TOO_MANY_REQUESTS, "rate_limited");
    let (status, body) = test_send(&app, &other, "/api", json!({"channel": "email", "to": "ops@example.com"})).await;
    assert_eq!(status, StatusCode::OK, "another tenant has its own allowance: {body}");
}

#[tokio::test]
async fn test_send_inputs_are_validated_and_admins_only() {
    let (app, smtp, _sms) = with_channels(&[]).await;
    let f = app.fixture("acme", &[]).await;
    app.operator(&f, "agent@acme.example", Role::Agent, &[]).await;
    let admin = app.login("admin@acme.example.com").await;
    let agent = app.login("agent@acme.example").await;
    for prefix in PREFIXES {
        for (bad, fields) in [
            (json!({}), &["channel", "to"][..]),
            (json!({"channel": "pigeon", "to": "me@example.com"}), &["channel"][..]),
            (json!({"channel": "email"}), &["to"][..]),
            (json!({"channel": "email", "to": "not an address"}), &["to"][..]),
            (json!({"channel": "email", "to": "+14155550123"}), &["to"][..]),
            (json!({"channel": "sms", "to": "me@example.com"}), &["to"][..]),
            (json!({"channel": "sms", "to": "4155550123"}), &["to"][..]),
            (json!({"channel": 1, "to": ["x"]}), &["channel", "to"][..]),
        ] {
            let (status, body) = test_send(&app, &admin, prefix, bad).await;
            assert_fields(status, &body, fields);
        }
        let (status, body) = test_send(&app, &agent, prefix, json!({"channel": "email", "to": "me@example.com"})).await;
        assert_error(status, &body, StatusCode::FORBIDDEN, "forbidden");
        let (status, body) = app.authed(Method::GET, &format!("{prefix}/admin/verification"), &agent, None).await;
        assert_error(status, &body, StatusCode::FORBIDDEN, "forbidden");
        let (status, _) = app.send(Method::POST, &format!("{prefix}/admin/verification/test"), None, &[]).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
    }
    assert!(smtp.drain().await.is_empty(), "nothing refused was sent");
}

#[tokio::test]
async fn the_demo_keeps_test_messages_in_the_sandbox_outbox() {
    let app = TestApp::with().demo().start().await;
    let (_, creds) = app.get("/sandbox/credentials").await;
    let admin = creds["mobile_token"].as_str().unwrap().to_owned();
    let (_, body) = app.authed(Method::GET, "/api/admin/verification", &admin, None).await;
    assert_eq!(body["verification"]["channels"][0]["provider"], "sandbox_outbox");
    let (status, body) = test_send(&app, &admin, "/api", json!({"channel": "sms", "to": "+14155550123"})).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["test"]["provider"], "sandbox_outbox");
    let (_, outbox) = app.get("/sandbox/outbox").await;
    assert_eq!(outbox["messages"][0]["to"], "+14155550123");
    assert!(outbox["messages"][0]["body"].as_str().unwrap().contains("Parley test message"));
}

#[tokio::test]
async fn test_sends_are_limited_per_recipient_across_tenants() {
    let (app, _smtp, sms) = with_channels(&[("PARLEY_RATE_LIMITS", "on"), ("PARLEY_SMS_LIMIT_PER_NUMBER", "1/1h")]).await;
    app.fixture("acme", &[]).await;
    app.fixture("globex", &[]).await;
    let acme = app.login("admin@acme.example.com").await;
    let globex = app.login("admin@globex.example.com").await;
    let (status, body) = test_send(&app, &acme, "/api", json!({"channel": "sms", "to": "+14155550123"})).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    sms.next().await;
    let (status, body) = test_send(&app, &globex, "/api", json!({"channel": "sms", "to": "+14155550123"})).await;
    assert_error(status, &body, StatusCode::TOO_MANY_REQUESTS, "rate_limited");
    let (status, body) = test_send(&app, &acme, "/api", json!({"channel": "sms", "to": "+14155550124"})).await;
    assert_eq!(status, StatusCode::OK, "another number has its own allowance: {body}");
}

/// `PARLEY_EXTRA_CA_FILE` is trusted for SMTP too: an SMTP server behind
/// TLS with a certificate of the test CA takes the mail with it, and
/// nothing reaches it without.
#[tokio::test]
async fn smtp_over_tls_trusts_the_extra_certificates() {
    let smtp = crate::smtp_sink::SmtpSink::start_tls().await;
    let start = |ca: bool| {
        let mut spawn = TestApp::with().var("PARLEY_SMTP_URL", &smtp.url()).var("PARLEY_MAIL_FROM", "Parley <noreply@parley.test>");
        if ca {
            spawn = spawn.var("PARLEY_EXTRA_CA_FILE", &crate::push_peers::fixture("ca.pem"));
        }
        spawn.start()
    };
    let test = json!({"channel": "email", "to": "me@example.com"});
    let untrusting = start(false).await;
    untrusting.fixture("acme", &[]).await;
    let admin = untrusting.login("admin@acme.example.com").await;
    let (status, _) = untrusting.authed(Method::POST, "/api/admin/verification/test", &admin, Some(test.clone())).await;
    assert!(!status.is_success(), "an unknown CA is refused: {status}");
    assert!(smtp.drain().await.is_empty());

    let app = start(true).await;
    app.fixture("acme", &[]).await;
    let admin = app.login("admin@acme.example.com").await;
    let (status, body) = app.authed(Method::POST, "/api/admin/verification/test", &admin, Some(test)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(smtp.next().await.to, ["me@example.com"]);
}
