//! Inviting operators and sending them password links: the email really
//! leaves through SMTP, its link works once and for 72 hours, choosing
//! the password signs the operator out everywhere; another tenant, an
//! agent and a forged or stale link reach nothing.

use std::time::Duration;

use parley_domain::model::Role;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::helpers::*;
use crate::smtp_sink::SmtpSink;
use crate::web_browser::Browser;

async fn with_mail() -> (SmtpSink, TestApp) {
    let smtp = SmtpSink::start().await;
    let app = TestApp::with().var("PARLEY_SMTP_URL", &smtp.url()).var("PARLEY_MAIL_FROM", "noreply@parley.test").start().await;
    (smtp, app)
}

/// The link an email carries, as a path of the app.
fn link_in(mail: &crate::smtp_sink::Mail) -> String {
    let start = mail.data.find("/app/password?token=").expect("a link");
    let end = mail.data[start..].find(|c: char| c.is_whitespace() || c == '"' || c == '<').map_or(mail.data.len(), |e| start + e);
    mail.data[start..end].to_owned()
}

fn token_of(link: &str) -> &str {
    link.split("token=").nth(1).unwrap()
}

async fn invite(app: &TestApp, admin: &str, body: Value) -> (StatusCode, Value) {
    app.authed(Method::POST, "/api/v1/admin/operators/invite", admin, Some(body)).await
}

/// Chooses a password through the link's page, as a browser does.
async fn choose(app: &TestApp, link: &str, password: &str, confirm: &str) -> crate::web_browser::Page {
    let mut browser = Browser::new(app);
    let page = browser.get(link).await;
    if page.status != StatusCode::OK {
        return page;
    }
    let form_token = page.field("csrf");
    browser
        .send(
            Method::POST,
            "/app/password",
            Some(&[("csrf", &form_token), ("token", token_of(link)), ("password", password), ("confirm", confirm)]),
            &[("origin", &app.url(""))],
        )
        .await
}

#[tokio::test]
async fn an_invited_operator_chooses_its_password_through_the_emailed_link_once() {
    let (smtp, app) = with_mail().await;
    let f = app.fixture("acme", &[]).await;
    let admin = app.login("admin@acme.example.com").await;
    let (status, made) =
        invite(&app, &admin, json!({"email": "Bea@Acme.example.com", "name": "Bea", "role": "agent", "site_ids": [f.scope.site.0]})).await;
    assert_eq!(status, StatusCode::CREATED, "{made}");
    assert_eq!(made["operator"]["password_set"], false);
    assert_eq!(made["password_link"]["sent"], true);
    assert_eq!(made["password_link"]["expires_at"], "2026-01-04T00:00:00.000Z", "72 hours");
    let mail = smtp.next().await;
    assert_eq!(mail.to.iter().map(|t| t.to_lowercase()).collect::<Vec<_>>(), ["bea@acme.example.com"]);
    assert!(mail.data.contains("invited you"), "{}", mail.data);
    let link = link_in(&mail);

    // Before choosing, nobody signs in as Bea, whatever the password.
    let (status, _) = app.post("/api/v1/mobile/login", json!({"email": "bea@acme.example.com", "password": ""})).await;
    assert_ne!(status, StatusCode::OK);
    let mismatch = choose(&app, &link, "a long enough phrase", "another phrase").await;
    assert_eq!(mismatch.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(mismatch.html.contains("The two passwords differ."));
    let short = choose(&app, &link, "short", "short").await;
    assert_eq!(short.status, StatusCode::UNPROCESSABLE_ENTITY);
    let set = choose(&app, &link, "a long enough phrase", "a long enough phrase").await;
    assert_eq!(set.status, StatusCode::OK, "{}", set.html);
    assert!(set.html.contains("Your password is set"));
    let (status, body) =
        app.post("/api/v1/mobile/login", json!({"email": "bea@acme.example.com", "password": "a long enough phrase"})).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["user"]["password_set"], true);
    let again = choose(&app, &link, "a third long phrase", "a third long phrase").await;
    assert_eq!(again.status, StatusCode::NOT_FOUND, "a link works once");
    assert!(again.html.contains("This link no longer works"));

    let (_, log) = app.authed(Method::GET, "/api/v1/admin/audit", &admin, None).await;
    assert_eq!(log["entries"][0]["action"], "operator.invited");
    assert!(!log.to_string().contains(token_of(&link)), "the link is in no log");
    app.stop().await;
}

/// The API does what the page does (`POST mobile/password`), under both
/// prefixes: the link's token and a new password, once; a bad body, a weak
/// password and a stale link are refused and change nothing.
#[tokio::test]
async fn the_api_sets_a_password_through_the_link_as_the_page_does() {
    let (smtp, app) = with_mail().await;
    let f = app.fixture("acme", &[]).await;
    let admin = app.login("admin@acme.example.com").await;
    let (status, made) =
        invite(&app, &admin, json!({"email": "bea@acme.example.com", "name": "Bea", "role": "agent", "site_ids": [f.scope.site.0]})).await;
    assert_eq!(status, StatusCode::CREATED, "{made}");
    let link = link_in(&smtp.next().await);
    let token = token_of(&link).to_owned();

    for (body, fields) in [
        (json!({"token": token, "password": "short"}), vec!["password"]),
        (json!({"token": token}), vec!["password"]),
        (json!({"password": "a long enough phrase"}), vec!["token"]),
        (json!({"token": 5, "password": ["x"]}), vec!["password", "token"]),
        (json!({"token": "x".repeat(129), "password": "a long enough phrase"}), vec!["token"]),
    ] {
        let (status, answer) = app.post("/api/v1/mobile/password", body).await;
        assert_fields(status, &answer, &fields);
    }
    for stale in ["pwl_madeup", "x", ""] {
        let (status, answer) = app.post("/api/v1/mobile/password", json!({"token": stale, "password": "a long enough phrase"})).await;
        assert!(status == StatusCode::NOT_FOUND || status == StatusCode::UNPROCESSABLE_ENTITY, "{stale}: {status} {answer}");
    }

    let (status, answer) = app.post("/api/mobile/password", json!({"token": token, "password": "a long enough phrase"})).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(answer, json!({"email": "bea@acme.example.com", "name": "Bea"}));
    let (status, _) = app.post("/api/v1/mobile/login", json!({"email": "bea@acme.example.com", "password": "a long enough phrase"})).await;
    assert_eq!(status, StatusCode::OK);
    let (status, answer) = app.post("/api/v1/mobile/password", json!({"token": token, "password": "another long phrase"})).await;
    assert_error(status, &answer, StatusCode::NOT_FOUND, "not_found");
    let (status, _) = app.post("/api/v1/mobile/login", json!({"email": "bea@acme.example.com", "password": "another long phrase"})).await;
    assert_ne!(status, StatusCode::OK, "a spent link changed nothing");
    app.stop().await;
}

#[tokio::test]
async fn a_new_link_replaces_the_old_expires_after_72_hours_and_signs_out_everywhere() {
    let (smtp, app) = with_mail().await;
    let f = app.fixture("acme", &[]).await;
    let bea = app.operator(&f, "bea@acme.example.com", Role::Agent, &[f.scope.site]).await;
    let admin = app.login("admin@acme.example.com").await;
    let bea_token = app.login("bea@acme.example.com").await;
    let path = format!("/api/v1/admin/operators/{bea}/password-link");

    let (status, body) = app.authed(Method::POST, &path, &admin, None).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    let first = link_in(&smtp.next().await);
    let (status, _) = app.authed(Method::POST, &path, &admin, None).await;
    assert_eq!(status, StatusCode::ACCEPTED);
    let mail = smtp.next().await;
    assert!(mail.data.contains("choose a new password"), "{}", mail.data);
    let second = link_in(&mail);
    assert_eq!(choose(&app, &first, "a long enough phrase", "a long enough phrase").await.status, StatusCode::NOT_FOUND, "replaced");
    let (status, _) = app.authed(Method::GET, "/api/v1/mobile/conversations", &bea_token, None).await;
    assert_eq!(status, StatusCode::OK, "a link alone changes nothing: the password still works");

    app.clock.advance(Duration::from_secs(72 * 3600 + 1));
    assert_eq!(choose(&app, &second, "a long enough phrase", "a long enough phrase").await.status, StatusCode::NOT_FOUND, "expired");
    let admin = app.login("admin@acme.example.com").await;
    let bea_token = app.login("bea@acme.example.com").await;
    app.authed(Method::POST, &path, &admin, None).await;
    let third = link_in(&smtp.next().await);
    assert_eq!(choose(&app, &third, "a long enough phrase", "a long enough phrase").await.status, StatusCode::OK);
    let (status, body) = app.authed(Method::GET, "/api/v1/mobile/conversations", &bea_token, None).await;
    assert_error(status, &body, StatusCode::UNAUTHORIZED, "unauthenticated");
    let (status, _) = app.post("/api/v1/mobile/login", json!({"email": "bea@acme.example.com", "password": PASSWORD})).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "the old password is gone");

    // A disabled operator gets no link, and its live link stops working.
    app.authed(Method::POST, &path, &admin, None).await;
    let fourth = link_in(&smtp.next().await);
    let (status, _) = app.authed(Method::PATCH, &format!("/api/v1/admin/operators/{bea}"), &admin, Some(json!({"active": false}))).await;
    assert_eq!(status, StatusCode::OK);
    let (status, body) = app.authed(Method::POST, &path, &admin, None).await;
    assert_error(status, &body, StatusCode::CONFLICT, "conflict");
    assert_eq!(choose(&app, &fourth, "a long enough phrase", "a long enough phrase").await.status, StatusCode::NOT_FOUND);
    app.stop().await;
}

#[tokio::test]
async fn invitations_are_checked_and_kept_to_their_tenant() {
    let (smtp, app) = with_mail().await;
    let acme = app.fixture("acme", &[]).await;
    let globex = app.fixture("globex", &[]).await;
    app.operator(&acme, "agent@acme.example.com", Role::Agent, &[acme.scope.site]).await;
    let admin = app.login("admin@acme.example.com").await;
    let agent = app.login("agent@acme.example.com").await;
    let globex_admin = app.login("admin@globex.example.com").await;
    let good = json!({"email": "new@acme.example.com", "name": "New", "role": "agent"});

    let (status, body) = invite(&app, &agent, good.clone()).await;
    assert_error(status, &body, StatusCode::FORBIDDEN, "forbidden");
    let (status, body) = app.post("/api/v1/admin/operators/invite", good.clone()).await;
    assert_error(status, &body, StatusCode::UNAUTHORIZED, "unauthenticated");
    for (bad, field) in [
        (json!({"name": "New", "role": "agent"}), "email"),
        (json!({"email": "not an address", "name": "New", "role": "agent"}), "email"),
        (json!({"email": "admin@acme.example.com", "name": "Dup", "role": "agent"}), "email"),
        (json!({"email": "new@acme.example.com", "role": "agent"}), "name"),
        (json!({"email": "new@acme.example.com", "name": "New", "role": "owner"}), "role"),
        (json!({"email": "new@acme.example.com", "name": "New", "role": "agent", "site_ids": [globex.scope.site.0]}), "site_ids"),
    ] {
        let (status, body) = invite(&app, &admin, bad).await;
        assert_fields(status, &body, &[field]);
    }
    assert!(smtp.drain().await.is_empty(), "a refused invitation sends nothing");

    // Another tenant's operator, or no operator, gets no link.
    let (_, list) = app.authed(Method::GET, "/api/v1/admin/operators", &admin, None).await;
    let acme_agent = list["operators"].as_array().unwrap().iter().find(|o| o["role"] == "agent").unwrap()["id"].as_i64().unwrap();
    for (who, id) in [(&globex_admin, acme_agent.to_string()), (&admin, "999".into()), (&admin, "x".into())] {
        let (status, body) = app.authed(Method::POST, &format!("/api/v1/admin/operators/{id}/password-link"), who, None).await;
        assert_error(status, &body, StatusCode::NOT_FOUND, "not_found");
    }
    let (status, body) = app.authed(Method::POST, &format!("/api/v1/admin/operators/{acme_agent}/password-link"), &agent, None).await;
    assert_error(status, &body, StatusCode::FORBIDDEN, "forbidden");

    // A link page for what is no link, and a forged form.
    for link in
        ["/app/password", "/app/password?token=pwl_madeup", "/app/password?token=x", &format!("/app/password?token={}", "pwl_".repeat(100))]
    {
        let page = Browser::new(&app).get(link).await;
        assert_eq!(page.status, StatusCode::NOT_FOUND, "{link}");
    }
    let (status, _) = invite(&app, &admin, good).await;
    assert_eq!(status, StatusCode::CREATED);
    let link = link_in(&smtp.next().await);
    let mut browser = Browser::new(&app);
    browser.get(&link).await;
    let forged = browser
        .send(
            Method::POST,
            "/app/password",
            Some(&[("token", token_of(&link)), ("password", "a long enough phrase"), ("confirm", "a long enough phrase")]),
            &[("origin", &app.url(""))],
        )
        .await;
    assert_eq!(forged.status, StatusCode::FORBIDDEN, "no form token");
    assert_eq!(choose(&app, &link, "a long enough phrase", "a long enough phrase").await.status, StatusCode::OK, "the link still works");
    app.stop().await;
}

#[tokio::test]
async fn without_a_mail_channel_the_invitation_says_it_was_not_sent() {
    let smtp = SmtpSink::start().await;
    smtp.unavailable();
    let app = TestApp::with().var("PARLEY_SMTP_URL", &smtp.url()).var("PARLEY_MAIL_FROM", "noreply@parley.test").start().await;
    app.fixture("acme", &[]).await;
    let admin = app.login("admin@acme.example.com").await;
    let (status, made) = invite(&app, &admin, json!({"email": "new@acme.example.com", "name": "New", "role": "admin"})).await;
    assert_eq!(status, StatusCode::CREATED, "{made}");
    assert_eq!(made["password_link"]["sent"], false);
    smtp.accept();
    let id = made["operator"]["id"].as_i64().unwrap();
    let (status, body) = app.authed(Method::POST, &format!("/api/v1/admin/operators/{id}/password-link"), &admin, None).await;
    assert_eq!((status, body["password_link"]["sent"].as_bool()), (StatusCode::ACCEPTED, Some(true)));
    assert!(smtp.next().await.data.contains("invited you"), "not taken up yet: the invitation again");
    app.stop().await;
}

#[tokio::test]
async fn admins_invite_and_manage_the_team_in_the_web_app() {
    let (smtp, app) = with_mail().await;
    let f = app.fixture("acme", &[]).await;
    app.operator(&f, "agent@acme.example.com", Role::Agent, &[f.scope.site]).await;
    let mut admin = Browser::signed_in(&app, "admin@acme.example.com").await;
    let page = admin.get("/app/settings/operators").await;
    assert_eq!(page.status, StatusCode::OK);
    let csrf = page.field("csrf");
    let site = f.scope.site.0.to_string();
    let invited = admin
        .post(
            "/app/settings/operators",
            &[("csrf", &csrf), ("email", "cy@acme.example.com"), ("name", "Cy"), ("role", "agent"), ("site_ids", ""), ("site_ids", &site)],
        )
        .await;
    assert_eq!(invited.location.as_deref(), Some("/app/settings/operators?done=invited"), "{} {}", invited.status, invited.html);
    let link = link_in(&smtp.next().await);
    let page = admin.get("/app/settings/operators?done=invited").await;
    assert!(page.html.contains("The invitation is sent") && page.html.contains("has not chosen a password yet"), "{}", page.html);
    let refused = admin
        .post("/app/settings/operators", &[("csrf", &csrf), ("email", "cy@acme.example.com"), ("name", "Cy"), ("role", "agent")])
        .await;
    assert_eq!(refused.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(refused.html.contains("Email is already in use."), "{}", refused.html);
    assert_eq!(choose(&app, &link, "a long enough phrase", "a long enough phrase").await.status, StatusCode::OK);

    // Disable the agent: its sessions end.
    let (_, list) = app.authed(Method::GET, "/api/v1/admin/operators", &app.login("admin@acme.example.com").await, None).await;
    let agent =
        list["operators"].as_array().unwrap().iter().find(|o| o["email"] == "agent@acme.example.com").unwrap()["id"].as_i64().unwrap();
    let mut agent_browser = Browser::signed_in(&app, "agent@acme.example.com").await;
    assert_eq!(agent_browser.get("/app/settings/operators").await.status, StatusCode::FORBIDDEN, "agents are refused");
    let saved = admin
        .post(
            &format!("/app/settings/operators/{agent}"),
            &[("csrf", &csrf), ("name", "Agent Smith"), ("role", "agent"), ("active", "false"), ("site_ids", "")],
        )
        .await;
    assert_eq!(saved.location.as_deref(), Some("/app/settings/operators?done=saved"));
    assert_eq!(agent_browser.get("/app").await.status, StatusCode::SEE_OTHER, "signed out");
    let page = admin.get("/app/settings/operators").await;
    assert!(page.html.contains("Agent Smith") && page.html.contains("Disabled"));
    let forged = admin.post(&format!("/app/settings/operators/{agent}"), &[("name", "X")]).await;
    assert_eq!(forged.status, StatusCode::FORBIDDEN);

    // An admin's form offers the sites too, so one save makes it an
    // agent of a site; an agent may not post the form at all.
    let boss = app.operator(&f, "boss@acme.example.com", Role::Admin, &[]).await;
    let page = admin.get("/app/settings/operators").await;
    assert!(page.html.contains(&format!("id=\"operator-{boss}-site-{site}\"")), "{}", page.html);
    app.operator(&f, "second@acme.example.com", Role::Agent, &[f.scope.site]).await;
    let mut second = Browser::signed_in(&app, "second@acme.example.com").await;
    let its_csrf = second.get("/app/account").await.field("csrf");
    let refused =
        second.post(&format!("/app/settings/operators/{boss}"), &[("csrf", &its_csrf), ("name", "Boss"), ("role", "agent")]).await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN, "an agent changes nobody");
    let saved = admin
        .post(
            &format!("/app/settings/operators/{boss}"),
            &[("csrf", &csrf), ("name", "Boss"), ("role", "agent"), ("active", "true"), ("site_ids", ""), ("site_ids", &site)],
        )
        .await;
    assert_eq!(saved.location.as_deref(), Some("/app/settings/operators?done=saved"), "{}", saved.html);
    let (_, list) = app.authed(Method::GET, "/api/v1/admin/operators", &app.login("admin@acme.example.com").await, None).await;
    let now = list["operators"].as_array().unwrap().iter().find(|o| o["id"] == boss).unwrap().clone();
    assert_eq!((&now["role"], &now["site_ids"]), (&json!("agent"), &json!([f.scope.site.0])), "{now}");
    // A refusal addressed to the admin reads as a sentence, not after a label.
    let me = list["operators"].as_array().unwrap().iter().find(|o| o["email"] == "admin@acme.example.com").unwrap()["id"].clone();
    let refused = admin
        .post(&format!("/app/settings/operators/{me}"), &[("csrf", &csrf), ("name", "Admin"), ("role", "admin"), ("active", "false")])
        .await;
    assert_eq!(refused.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(refused.html.contains("You cannot disable your own account."), "{}", refused.html);
    app.stop().await;
}

#[tokio::test]
async fn a_password_an_admin_sets_or_a_disable_ends_the_links_sent_before() {
    let (smtp, app) = with_mail().await;
    let f = app.fixture("acme", &[]).await;
    let bea = app.operator(&f, "bea@acme.example.com", Role::Agent, &[f.scope.site]).await;
    let admin = app.login("admin@acme.example.com").await;
    let link_path = format!("/api/v1/admin/operators/{bea}/password-link");
    let operator = format!("/api/v1/admin/operators/{bea}");

    app.authed(Method::POST, &link_path, &admin, None).await;
    let link = link_in(&smtp.next().await);
    let (status, _) = app.authed(Method::PATCH, &operator, &admin, Some(json!({"password": "set by the admin now"}))).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(choose(&app, &link, "a long enough phrase", "a long enough phrase").await.status, StatusCode::NOT_FOUND);

    app.authed(Method::POST, &link_path, &admin, None).await;
    let link = link_in(&smtp.next().await);
    app.authed(Method::PATCH, &operator, &admin, Some(json!({"active": false}))).await;
    app.authed(Method::PATCH, &operator, &admin, Some(json!({"active": true}))).await;
    assert_eq!(
        choose(&app, &link, "a long enough phrase", "a long enough phrase").await.status,
        StatusCode::NOT_FOUND,
        "disabling ended it"
    );
    let (status, _) = app.post("/api/v1/mobile/login", json!({"email": "bea@acme.example.com", "password": "set by the admin now"})).await;
    assert_eq!(status, StatusCode::OK, "the admin's password stands");

    // A made-up or missing link on the form is the same page as a used one.
    let mut browser = Browser::new(&app);
    let page = browser.get(&link).await;
    assert_eq!(page.status, StatusCode::NOT_FOUND);
    app.authed(Method::POST, &link_path, &admin, None).await;
    let live = link_in(&smtp.next().await);
    let form = browser.get(&live).await;
    let csrf = form.field("csrf");
    for token in ["pwl_madeup", "", "x"] {
        let answer = browser
            .send(
                Method::POST,
                "/app/password",
                Some(&[("csrf", &csrf), ("token", token), ("password", "a long enough phrase"), ("confirm", "a long enough phrase")]),
                &[("origin", &app.url(""))],
            )
            .await;
        assert_eq!(answer.status, StatusCode::NOT_FOUND, "{token:?}");
    }
    let missing = browser
        .send(Method::POST, "/app/password", Some(&[("csrf", &csrf), ("token", token_of(&live))]), &[("origin", &app.url(""))])
        .await;
    assert_eq!(missing.status, StatusCode::UNPROCESSABLE_ENTITY);
    app.stop().await;
}

#[tokio::test]
async fn password_emails_are_limited_per_tenant() {
    let app = TestApp::with().var("PARLEY_RATE_LIMITS", "on").start().await;
    let f = app.fixture("acme", &[]).await;
    let bea = app.operator(&f, "bea@acme.example.com", Role::Agent, &[f.scope.site]).await;
    let admin = app.login("admin@acme.example.com").await;
    let path = format!("/api/v1/admin/operators/{bea}/password-link");
    for _ in 0..50 {
        let (status, _) = app.authed(Method::POST, &path, &admin, None).await;
        assert_eq!(status, StatusCode::ACCEPTED);
    }
    let (status, body) = app.authed(Method::POST, &path, &admin, None).await;
    assert_error(status, &body, StatusCode::TOO_MANY_REQUESTS, "rate_limited");
    let (status, body) = invite(&app, &admin, json!({"email": "new@acme.example.com", "name": "New", "role": "agent"})).await;
    assert_error(status, &body, StatusCode::TOO_MANY_REQUESTS, "rate_limited");
    app.stop().await;
}

#[tokio::test]
async fn the_pages_send_link_form_mails_a_link_that_works_and_says_how_long() {
    let (smtp, app) = with_mail().await;
    let f = app.fixture("acme", &[]).await;
    let bea = app.operator(&f, "bea@acme.example.com", Role::Agent, &[f.scope.site]).await;
    let mut admin = Browser::signed_in(&app, "admin@acme.example.com").await;
    let page = admin.get("/app/settings/operators").await;
    let form = format!("action=\"/app/settings/operators/{bea}/password-link\"");
    assert!(page.html.contains(&form), "each operator has the form: {}", page.html);
    let csrf = page.field("csrf");

    let path = format!("/app/settings/operators/{bea}/password-link");
    assert_eq!(admin.post(&path, &[]).await.status, StatusCode::FORBIDDEN, "no token, no mail");
    let sent = admin.post(&path, &[("csrf", &csrf)]).await;
    assert_eq!(sent.location.as_deref(), Some("/app/settings/operators?done=link"), "{}", sent.html);
    let mail = smtp.next().await;
    assert!(mail.data.contains("bea@acme.example.com") && mail.data.contains("expires in 72 hours"), "{}", mail.data);
    let page = admin.get("/app/settings/operators?done=link").await;
    assert!(page.html.contains("The link is sent: it works for 72 hours."), "{}", page.html);
    assert!(page.html.contains("it works once, for 72 hours."), "the invitation form says so too");
    let link = link_in(&mail);
    assert_eq!(choose(&app, &link, "a long enough phrase", "a long enough phrase").await.status, StatusCode::OK);
    let (status, _) = app.post("/api/v1/mobile/login", json!({"email": "bea@acme.example.com", "password": "a long enough phrase"})).await;
    assert_eq!(status, StatusCode::OK, "the new password signs in");

    for bad in ["x", "0", "99999999999999999999"] {
        let refused = admin.post(&format!("/app/settings/operators/{bad}/password-link"), &[("csrf", &csrf)]).await;
        assert_eq!(refused.status, StatusCode::NOT_FOUND, "{bad}");
    }
    app.stop().await;
}
