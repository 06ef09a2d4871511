//! `/app/integrations` through the real HTTP stack, as a browser without
//! JavaScript uses it: who may open it, the credentials it hands out
//! (shown once), and the tests it runs against the admin's own tenant.

use parley_domain::model::Role;
use reqwest::{Method, StatusCode};
use serde_json::json;

use crate::helpers::*;
use crate::receiver::Receiver;
use crate::smtp_sink::SmtpSink;
use crate::web_browser::{Browser, Page};
use crate::webhooks::{deliveries, delivery_log_when, verify, webhook_app};

const PAGES: [&str; 4] = ["/app/integrations", "/app/integrations/tokens", "/app/integrations/webhooks", "/app/integrations/verification"];

impl Browser {
    /// An integrations page, which must answer 200.
    async fn open(&mut self, path: &str) -> Page {
        let page = self.get(path).await;
        assert_eq!(page.status, StatusCode::OK, "{path}: {:?} {}", page.location, page.html);
        page
    }

    /// Submits a form from `from` (for its anti-forgery token) to `to`.
    async fn submit(&mut self, from: &str, to: &str, fields: &[(&str, &str)]) -> Page {
        let csrf = self.open(from).await.field("csrf");
        let mut form = vec![("csrf", csrf.as_str())];
        form.extend_from_slice(fields);
        self.post(to, &form).await
    }
}

/// The text of the element with `id` (a `code` or `pre` of the page).
fn text_of(page: &Page, id: &str) -> String {
    let marker = format!("id=\"{id}\">");
    let start = page.html.find(&marker).unwrap_or_else(|| panic!("no #{id} in {}", page.html)) + marker.len();
    let raw = page.html[start..].split('<').next().unwrap_or_default();
    raw.replace("&quot;", "\"").replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
}

#[tokio::test]
async fn agents_get_403_and_no_link_admins_get_every_page() {
    let app = TestApp::spawn().await;
    let f = app.fixture("acme", &[]).await;
    app.operator(&f, "agent@acme.example", Role::Agent, &[]).await;
    let mut admin = Browser::signed_in(&app, "admin@acme.example.com").await;
    let mut agent = Browser::signed_in(&app, "agent@acme.example").await;

    assert!(admin.inbox("").await.html.contains("href=\"/app/integrations\""), "admins see the link");
    assert!(!agent.inbox("").await.html.contains("/app/integrations"), "agents do not");
    for path in PAGES {
        let page = admin.open(path).await;
        assert!(page.html.contains("aria-current=\"page\""), "{path}: its section is marked");
        assert_eq!(page.headers["cache-control"], "no-store");
        let refused = agent.get(path).await;
        assert_eq!(refused.status, StatusCode::FORBIDDEN, "{path}");
        assert!(refused.html.contains("Only a tenant admin can open this page."), "{}", refused.html);
    }
    // An agent's form with a valid token is refused as well, and changes nothing.
    let csrf = agent.inbox("").await.field("csrf");
    let page = agent.post("/app/integrations/sites", &[("csrf", &csrf), ("name", "Agent site")]).await;
    assert_eq!(page.status, StatusCode::FORBIDDEN);
    let page = agent.post("/app/integrations/tokens", &[("csrf", &csrf), ("name", "mine")]).await;
    assert_eq!(page.status, StatusCode::FORBIDDEN);
    assert!(!admin.open("/app/integrations").await.html.contains("Agent site"));

    let anonymous = Browser::new(&app).get("/app/integrations/webhooks").await;
    assert_eq!(anonymous.location.as_deref(), Some("/app/login?next=%2Fapp%2Fintegrations%2Fwebhooks"));
}

#[tokio::test]
async fn sites_and_installations_are_made_and_show_token_snippet_and_health() {
    let app = TestApp::spawn().await;
    app.fixture("acme", &["www.acme.example"]).await;
    let admin_token = app.login("admin@acme.example.com").await;
    let mut browser = Browser::signed_in(&app, "admin@acme.example.com").await;

    let page = browser.open("/app/integrations").await;
    assert!(page.html.contains("Domains: www.acme.example"));
    let token = text_of(&page, "token-1");
    assert_eq!(
        text_of(&page, "snippet-1"),
        format!(r#"<script async src="{0}/widget.js" data-api-base="{0}" data-installation-token="{token}"></script>"#, app.base)
    );
    assert!(
        page.html.contains("Waiting for a first heartbeat") && page.html.contains("No heartbeat received yet"),
        "health and its warning"
    );
    assert!(page.html.contains("data-copy=\"token-1\"") && page.html.contains("data-copy=\"snippet-1\""), "copy buttons");

    // A heartbeat from the partner's page shows.
    app.post("/api/widget/ping", json!({"token": token, "version": "1.0.0", "current_url": "https://www.acme.example/pricing"})).await;
    let page = browser.open("/app/integrations").await;
    assert!(page.html.contains(">Healthy<") && page.html.contains("www.acme.example</dd>") && page.html.contains("1.0.0"), "{}", page.html);

    // A bad site is refused beside its form, and nothing is made.
    let refused = browser.submit("/app/integrations", "/app/integrations/sites", &[("name", ""), ("domains", "not a domain!")]).await;
    assert_eq!(refused.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(refused.html.contains("role=\"alert\">Domains item 2: must be a host name"), "{}", refused.html);
    assert!(refused.html.contains("value=\"not a domain!\"") && refused.html.contains("aria-invalid=\"true\""), "kept and marked");
    let answer = browser
        .submit("/app/integrations", "/app/integrations/sites", &[("name", "Docs"), ("domains", "docs.acme.example, help.acme.example")])
        .await;
    assert_eq!((answer.status, answer.location.as_deref()), (StatusCode::SEE_OTHER, Some("/app/integrations?done=site")));
    let (_, sites) = app.authed(Method::GET, "/api/admin/sites", &admin_token, None).await;
    let docs = &sites["sites"][1];
    assert_eq!((docs["name"].as_str(), &docs["domains"]), (Some("Docs"), &json!(["docs.acme.example", "help.acme.example"])));
    assert_eq!(sites["sites"].as_array().unwrap().len(), 2, "the refused one was not made");

    let site = docs["id"].as_i64().unwrap();
    let answer =
        browser.submit("/app/integrations", &format!("/app/integrations/sites/{site}/installations"), &[("name", "Help center")]).await;
    assert_eq!(answer.status, StatusCode::SEE_OTHER);
    let page = browser.open(answer.location.as_deref().unwrap()).await;
    assert!(page.html.contains("The installation is added") && page.html.contains("Help center"));

    // Disable and enable, as the admin API sees it.
    let answer = browser.submit("/app/integrations", "/app/integrations/installations/1/disable", &[]).await;
    assert_eq!(answer.location.as_deref(), Some("/app/integrations?done=disabled#installation-1"));
    let (_, list) = app.authed(Method::GET, "/api/admin/sites/1/installations", &admin_token, None).await;
    assert_eq!(list["installations"][0]["status"], "disabled");
    assert!(browser.open("/app/integrations").await.html.contains("This installation is disabled"));
    browser.submit("/app/integrations", "/app/integrations/installations/1/enable", &[]).await;
    let (_, list) = app.authed(Method::GET, "/api/admin/sites/1/installations", &admin_token, None).await;
    assert_eq!(list["installations"][0]["status"], "healthy");
}

#[tokio::test]
async fn an_identity_secret_is_made_shown_once_and_visitors_can_be_required_to_be_identified() {
    let app = TestApp::spawn().await;
    let f = app.fixture("acme", &[]).await;
    let admin = app.login("admin@acme.example.com").await;
    let mut browser = Browser::signed_in(&app, "admin@acme.example.com").await;
    let page = browser.open("/app/integrations").await;
    assert!(page.html.contains("No identity secret"), "{}", page.html);
    assert!(!page.html.contains("Require identified visitors"), "nothing to require with yet");

    let form = [("csrf", page.field("csrf")), ("shown", page.field("shown"))];
    let form: Vec<(&str, &str)> = form.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let made = browser.post("/app/integrations/installations/1/identity-secret", &form).await;
    assert_eq!(made.status, StatusCode::OK, "{}", made.html);
    let secret = text_of(&made, "identity-secret-1");
    assert!(secret.starts_with("idsec_"), "{secret}");
    let hash = crate::widget_identity::user_hash(&secret, "user-1");
    let (status, body) =
        app.post("/api/widget/visitors", json!({"token": f.token, "uuid": "b", "user_id": "user-1", "user_hash": hash})).await;
    assert_eq!(status, StatusCode::CREATED, "the secret shown signs users: {body}");

    // The same form again (a reload of the answer) replaces nothing.
    let reload = browser.post("/app/integrations/installations/1/identity-secret", &form).await;
    assert_eq!(reload.status, StatusCode::CONFLICT, "{}", reload.html);
    let (status, _) =
        app.post("/api/widget/visitors", json!({"token": f.token, "uuid": "b", "user_id": "user-1", "user_hash": hash})).await;
    assert_eq!(status, StatusCode::OK, "the secret still signs");
    let page = browser.open("/app/integrations").await;
    assert!(!page.html.contains(&secret), "shown once");
    assert!(page.html.contains("An identity secret is set"));

    let answer =
        browser.submit("/app/integrations", "/app/integrations/installations/1/identity-required", &[("identity_required", "true")]).await;
    assert_eq!(answer.location.as_deref(), Some("/app/integrations?done=required#installation-1"));
    let (_, list) = app.authed(Method::GET, "/api/admin/sites/1/installations", &admin, None).await;
    assert_eq!(list["installations"][0]["identity_required"], true);
    let (status, body) = app.post("/api/widget/visitors", json!({"token": f.token, "uuid": "anonymous"})).await;
    assert_error(status, &body, StatusCode::UNAUTHORIZED, "identity_required");
    let page = browser.open("/app/integrations?done=required").await;
    assert!(page.html.contains("Only identified visitors may chat") && page.html.contains("Allow anonymous visitors"));
    let bad =
        browser.submit("/app/integrations", "/app/integrations/installations/1/identity-required", &[("identity_required", "maybe")]).await;
    assert_eq!(bad.status, StatusCode::UNPROCESSABLE_ENTITY);
}

/// Acme's records the forms below act on: an endpoint with a delivery,
/// a personal token, site 1 and installation 1.
struct Acme {
    endpoint: i64,
    delivery: i64,
    token: i64,
}

async fn acme_with_records(app: &TestApp) -> Acme {
    let f = app.fixture("acme", &[]).await;
    app.operator(&f, "agent@acme.example", Role::Agent, &[]).await;
    let admin = app.login("admin@acme.example.com").await;
    let receiver = Receiver::start().await;
    let (endpoint, _) = crate::webhooks::register(app, &admin, &receiver.url, None).await;
    let (status, body) =
        app.authed(Method::POST, &format!("/api/admin/webhooks/{endpoint}/test"), &admin, Some(json!({"event": "message.created"}))).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    let delivery = body["delivery"]["id"].as_i64().unwrap();
    let (status, body) = app.authed(Method::POST, "/api/admin/tokens", &admin, Some(json!({"name": "acme's"}))).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    Acme { endpoint, delivery, token: body["token"]["id"].as_i64().unwrap() }
}

/// Every form of the integrations, aimed at acme's records.
fn every_form(a: &Acme) -> Vec<(String, Vec<(&'static str, &'static str)>)> {
    let w = a.endpoint;
    vec![
        ("/app/integrations/sites".into(), vec![("name", "Intruder")]),
        ("/app/integrations/sites/1/installations".into(), vec![("name", "Intruder")]),
        ("/app/integrations/installations/1/disable".into(), vec![]),
        ("/app/integrations/installations/1/enable".into(), vec![]),
        ("/app/integrations/installations/1/identity-secret".into(), vec![]),
        ("/app/integrations/installations/1/identity-required".into(), vec![("identity_required", "false")]),
        ("/app/integrations/tokens".into(), vec![("name", "Intruder")]),
        (format!("/app/integrations/tokens/{}/revoke", a.token), vec![]),
        ("/app/integrations/webhooks".into(), vec![("url", "https://intruder.example/hook")]),
        (format!("/app/integrations/webhooks/{w}/test"), vec![("event", "message.created")]),
        (format!("/app/integrations/webhooks/{w}/rotate"), vec![]),
        (format!("/app/integrations/webhooks/{w}/deliveries/{}/redeliver", a.delivery), vec![]),
        (format!("/app/integrations/webhooks/{w}/delete"), vec![]),
        ("/app/integrations/verification/test".into(), vec![("channel", "email"), ("to", "someone@example.com")]),
    ]
}

/// Acme's records are as `acme_with_records` left them.
async fn acme_unchanged(app: &TestApp, a: &Acme) {
    let admin = app.login("admin@acme.example.com").await;
    let (_, sites) = app.authed(Method::GET, "/api/admin/sites", &admin, None).await;
    assert_eq!(sites["sites"].as_array().unwrap().len(), 1, "{sites}");
    let (_, list) = app.authed(Method::GET, "/api/admin/sites/1/installations", &admin, None).await;
    assert_eq!((list["installations"].as_array().unwrap().len(), list["installations"][0]["enabled"].as_bool()), (1, Some(true)));
    assert_eq!(list["installations"][0]["identity_secret_set"], false, "no identity secret was made: {list}");
    let (_, hooks) = app.authed(Method::GET, "/api/admin/webhooks", &admin, None).await;
    assert_eq!(hooks["webhooks"].as_array().unwrap().len(), 1);
    assert_eq!(hooks["webhooks"][0]["id"], a.endpoint);
    assert!(hooks["webhooks"][0]["previous_secret_expires_at"].is_null(), "not rotated: {hooks}");
    assert_eq!(deliveries(app, &admin, a.endpoint).await["meta"]["total"], 1, "no test, no redelivery");
    let (_, tokens) = app.authed(Method::GET, "/api/admin/tokens", &admin, None).await;
    assert_eq!(tokens["tokens"].as_array().unwrap().len(), 1, "{tokens}");
}

#[tokio::test]
async fn another_tenant_an_agent_and_a_forged_form_reach_nothing() {
    let app = webhook_app().await;
    let acme = acme_with_records(&app).await;
    app.fixture("globex", &[]).await;
    let mut globex = Browser::signed_in(&app, "admin@globex.example.com").await;
    let mut agent = Browser::signed_in(&app, "agent@acme.example").await;
    let mut admin = Browser::signed_in(&app, "admin@acme.example.com").await;

    for path in ["/app/integrations/installations/1/try".to_owned(), format!("/app/integrations/webhooks/{}", acme.endpoint)] {
        assert_eq!(globex.get(&path).await.status, StatusCode::NOT_FOUND, "{path}");
        assert_eq!(agent.get(&path).await.status, StatusCode::FORBIDDEN, "{path}");
    }
    for bad in ["x", "0", "-1", "99999999999999999999"] {
        assert_eq!(admin.get(&format!("/app/integrations/installations/{bad}/try")).await.status, StatusCode::NOT_FOUND, "{bad}");
        assert_eq!(admin.get(&format!("/app/integrations/webhooks/{bad}")).await.status, StatusCode::NOT_FOUND, "{bad}");
    }
    for (to, fields) in every_form(&acme) {
        // Globex's own forms make records of globex's: only those naming
        // acme's records matter here.
        if !to.ends_with("/sites") && !to.ends_with("/tokens") && !to.ends_with("/webhooks") && !to.ends_with("/verification/test") {
            let page = globex.submit("/app/integrations", &to, &fields).await;
            assert_eq!(page.status, StatusCode::NOT_FOUND, "globex: {to}");
        }
        let page = agent.submit("/app", &to, &fields).await;
        assert_eq!(page.status, StatusCode::FORBIDDEN, "agent: {to}");
        let page = admin.post(&to, &fields).await;
        assert_eq!(page.status, StatusCode::FORBIDDEN, "no token: {to}");
        let mut forged = vec![("csrf", "forged")];
        forged.extend_from_slice(&fields);
        let page = admin.send(Method::POST, &to, Some(&forged), &[("sec-fetch-site", "cross-site")]).await;
        assert_eq!(page.status, StatusCode::FORBIDDEN, "cross-site: {to}");
        // A form's address opened as a page is a page, or leads to one.
        let opened = admin.get(&to).await;
        assert!(matches!(opened.status, StatusCode::OK | StatusCode::SEE_OTHER), "GET {to}: {}", opened.status);
    }
    acme_unchanged(&app, &acme).await;
}

/// Opens a conversation as a browser would from a page at `referer`.
async fn open(app: &TestApp, token: &str, origin: &str, referer: &str) -> (StatusCode, serde_json::Value) {
    let body = json!({"token": token, "visitor_uuid": "tester", "message": "Hello from the try page", "privacy_accepted": true});
    app.send(Method::POST, "/api/widget/conversations", Some(body), &[("origin", origin), ("referer", referer)]).await
}

#[tokio::test]
async fn the_try_page_embeds_the_widget_and_passes_only_its_own_domain_lock() {
    let app = TestApp::spawn().await;
    let f = app.fixture("acme", &["www.acme.example"]).await;
    let other = app.site("acme-two", f.scope.tenant, &["shop.acme.example"]).await;
    let mut browser = Browser::signed_in(&app, "admin@acme.example.com").await;

    let page = browser.open("/app/integrations/installations/1/try").await;
    assert!(page.html.contains(&format!("data-installation-token=\"{}\"", f.token)), "the widget is embedded: {}", page.html);
    assert_eq!(page.headers["referrer-policy"], "same-origin", "the widget's requests name this page");

    let try_page = app.url("/app/integrations/installations/1/try");
    let (status, body) = open(&app, &f.token, &app.base, &try_page).await;
    assert_eq!(status, StatusCode::CREATED, "the try page passes: {body}");
    // Any other page, origin or installation does not.
    for (token, origin, referer) in [
        (f.token.as_str(), app.base.as_str(), app.url("/app/integrations").as_str().to_owned()),
        (f.token.as_str(), "https://evil.example", try_page.clone()),
        (other.token.as_str(), app.base.as_str(), try_page.clone()),
        (f.token.as_str(), app.base.as_str(), app.url("/app/integrations/installations/2/try")),
    ] {
        let (status, body) = open(&app, token, origin, &referer).await;
        assert_error(status, &body, StatusCode::FORBIDDEN, "origin_not_allowed");
    }

    // A heartbeat from the try page is not the installation's health.
    let headers = [("origin", app.base.as_str()), ("referer", try_page.as_str())];
    let (status, _) = app.send(Method::POST, "/api/widget/ping", Some(json!({"token": f.token, "version": "1.0.0"})), &headers).await;
    assert!(status.is_success());
    let page = browser.open("/app/integrations").await;
    assert!(page.html.contains("Waiting for a first heartbeat"), "still no heartbeat recorded");
}

#[tokio::test]
async fn a_personal_token_is_shown_once_works_and_is_revoked() {
    let app = TestApp::spawn().await;
    let f = app.fixture("acme", &[]).await;
    app.operator(&f, "second@acme.example", Role::Admin, &[]).await;
    let mut browser = Browser::signed_in(&app, "admin@acme.example.com").await;

    let refused =
        browser.submit("/app/integrations/tokens", "/app/integrations/tokens", &[("name", " "), ("expires_in_days", "999")]).await;
    assert_eq!(refused.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(refused.html.contains("Expires after (days) must be an integer from 1 to 365"), "{}", refused.html);

    let made =
        browser.submit("/app/integrations/tokens", "/app/integrations/tokens", &[("name", "iOS test"), ("expires_in_days", "7")]).await;
    assert_eq!(made.status, StatusCode::CREATED, "{}", made.html);
    let token = text_of(&made, "new-token");
    assert!(token.starts_with("pat_"), "{token}");
    assert!(made.html.contains("shown this once") && made.html.contains("2026-01-08 00:00 UTC"), "expiry in 7 days");
    let (status, _) = app.authed(Method::GET, "/api/v1/mobile/conversations", &token, None).await;
    assert_eq!(status, StatusCode::OK, "the mobile API takes it");

    let list = browser.open("/app/integrations/tokens").await;
    assert!(list.html.contains("iOS test") && !list.html.contains(&token), "listed, never shown again");
    let mut second = Browser::signed_in(&app, "second@acme.example").await;
    assert!(!second.open("/app/integrations/tokens").await.html.contains("iOS test"), "another admin does not see it");
    let id = list.attr("data-token");
    let theirs = second.submit("/app/integrations/tokens", &format!("/app/integrations/tokens/{id}/revoke"), &[]).await;
    assert_eq!(theirs.status, StatusCode::NOT_FOUND, "nor revokes it");

    let revoked = browser.submit("/app/integrations/tokens", &format!("/app/integrations/tokens/{id}/revoke"), &[]).await;
    assert_eq!(revoked.location.as_deref(), Some("/app/integrations/tokens?done=revoked"));
    let (status, body) = app.authed(Method::GET, "/api/v1/mobile/conversations", &token, None).await;
    assert_error(status, &body, StatusCode::UNAUTHORIZED, "unauthenticated");
    assert!(browser.open("/app/integrations/tokens?done=revoked").await.html.contains("The token is revoked"));
}

#[tokio::test]
async fn a_webhook_endpoint_is_made_tested_logged_rotated_and_deleted() {
    let app = webhook_app().await;
    app.fixture("acme", &[]).await;
    let admin = app.login("admin@acme.example.com").await;
    let receiver = Receiver::start().await;
    let mut browser = Browser::signed_in(&app, "admin@acme.example.com").await;

    let refused = browser.submit("/app/integrations/webhooks", "/app/integrations/webhooks", &[("url", "ftp://example.com/")]).await;
    assert_eq!(refused.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(refused.html.contains("role=\"alert\">URL must be"), "{}", refused.html);
    assert!(refused.html.contains("value=\"ftp://example.com/\""), "what was typed is kept");

    let made = browser
        .submit(
            "/app/integrations/webhooks",
            "/app/integrations/webhooks",
            &[("url", &receiver.url), ("events", "message.created"), ("events", "conversation.closed")],
        )
        .await;
    assert_eq!(made.status, StatusCode::CREATED, "{}", made.html);
    let secret = text_of(&made, "webhook-secret");
    assert!(secret.starts_with("whsec_"));
    assert!(
        made.html.contains("webhook-signature") && made.html.contains("webhook-timestamp") && made.html.contains("webhook-id"),
        "the guide names the headers"
    );
    let (_, list) = app.authed(Method::GET, "/api/admin/webhooks", &admin, None).await;
    let id = list["webhooks"][0]["id"].as_i64().unwrap();
    assert_eq!(list["webhooks"][0]["events"], json!(["message.created", "conversation.closed"]));
    let detail = format!("/app/integrations/webhooks/{id}");
    assert!(!browser.open(&detail).await.html.contains(&secret), "never shown again");

    let sent = browser.submit(&detail, &format!("{detail}/test"), &[("event", "conversation.created")]).await;
    assert_eq!(sent.location.as_deref(), Some(format!("{detail}?done=test#log").as_str()));
    let envelope = verify(&receiver.next().await, &[&secret]);
    assert_eq!((envelope["test"].as_bool(), envelope["event"].as_str()), (Some(true), Some("conversation.created")));
    let cookies = browser.cookies.clone();
    let logged = eventually(|| {
        let mut reader = Browser::new(&app);
        reader.cookies = cookies.clone();
        let detail = detail.clone();
        async move {
            let page = reader.get(&detail).await;
            page.html.contains(">Delivered<").then_some(page)
        }
    })
    .await;
    assert!(logged.html.contains("HTTP 200") && logged.html.contains(" ms<"), "the attempt: {}", logged.html);

    let delivery = logged.attr("data-delivery");
    let again = browser.submit(&detail, &format!("{detail}/deliveries/{delivery}/redeliver"), &[]).await;
    assert_eq!(again.location.as_deref(), Some(format!("{detail}?done=redelivered#log").as_str()));
    assert_eq!(receiver.next().await.json()["event_id"], envelope["event_id"]);
    assert_eq!(deliveries(&app, &admin, id).await["meta"]["total"], 2);
    delivery_log_when(&app, &admin, id, |d| d["status"] == "delivered").await;

    let rotated = browser.submit(&detail, &format!("{detail}/rotate"), &[]).await;
    assert_eq!(rotated.status, StatusCode::OK);
    let new_secret = text_of(&rotated, "webhook-secret");
    assert_ne!(new_secret, secret);
    assert!(rotated.html.contains("signed with both the new secret and the old one"), "the overlap is explained");
    browser.submit(&detail, &format!("{detail}/test"), &[("event", "message.created")]).await;
    verify(&receiver.next().await, &[&new_secret, &secret]);
    delivery_log_when(&app, &admin, id, |d| d["status"] == "delivered").await;
    // The answer's form sent again (a reload) replaces nothing: the old
    // secret keeps its day of overlap.
    let reload = browser.post(&format!("{detail}/rotate"), &[("csrf", &made.field("csrf")), ("shown", &made.field("shown"))]).await;
    assert_eq!(reload.status, StatusCode::CONFLICT, "{}", reload.html);
    assert!(reload.html.contains("The secret was already replaced since this page was shown."), "{}", reload.html);
    // The page as it is now names the secret it shows: its form works
    // once, and the same form again is refused.
    let page = browser.open(&detail).await;
    let form = [("csrf", page.field("csrf")), ("shown", page.field("shown"))];
    assert_ne!(form[1].1, made.field("shown"), "the page names the secret it shows");
    let form: Vec<(&str, &str)> = form.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let third = browser.post(&format!("{detail}/rotate"), &form).await;
    assert_eq!(third.status, StatusCode::OK, "{}", third.html);
    let third_secret = text_of(&third, "webhook-secret");
    let again = browser.post(&format!("{detail}/rotate"), &form).await;
    assert_eq!(again.status, StatusCode::CONFLICT);
    browser.submit(&detail, &format!("{detail}/test"), &[("event", "message.created")]).await;
    verify(&receiver.next().await, &[&third_secret, &new_secret]);
    delivery_log_when(&app, &admin, id, |d| d["status"] == "delivered").await;

    let bad = browser.submit(&detail, &format!("{detail}/test"), &[("event", "conversation.updated")]).await;
    assert_eq!(bad.status, StatusCode::UNPROCESSABLE_ENTITY);
    let gone = browser.submit(&detail, &format!("{detail}/delete"), &[]).await;
    assert_eq!(gone.location.as_deref(), Some("/app/integrations/webhooks?done=deleted"));
    assert_eq!(browser.get(&detail).await.status, StatusCode::NOT_FOUND);
    let (_, list) = app.authed(Method::GET, "/api/admin/webhooks", &admin, None).await;
    assert_eq!(list["webhooks"], json!([]));
}

#[tokio::test]
async fn the_verification_page_shows_the_channels_and_sends_a_test() {
    let smtp = SmtpSink::start().await;
    let app = TestApp::with()
        .var("PARLEY_SMTP_URL", &smtp.url())
        .var("PARLEY_MAIL_FROM", "noreply@parley.test")
        .var("PARLEY_RATE_LIMITS", "on")
        .var("PARLEY_VERIFY_TEST_LIMIT_PER_TENANT", "2/1h")
        .start()
        .await;
    app.fixture("acme", &[]).await;
    let mut browser = Browser::signed_in(&app, "admin@acme.example.com").await;
    let page = browser.open("/app/integrations/verification").await;
    assert!(page.html.contains("SMTP server") && page.html.contains("Not configured"), "{}", page.html);
    assert!(page.html.contains("The widget offers: <code>email_otp, magic_link</code>"), "{}", page.html);
    let send = |channel: &'static str, to: &'static str| [("channel", channel), ("to", to)];
    const FROM: &str = "/app/integrations/verification";
    const TO: &str = "/app/integrations/verification/test";

    let refused = browser.submit(FROM, TO, &send("sms", "+14155550123")).await;
    assert_eq!(refused.status, StatusCode::CONFLICT);
    assert!(refused.html.contains("No SMS channel is configured on this service."));
    for (channel, to) in [("email", "not an address"), ("sms", "ops@example.com"), ("pigeon", "ops@example.com")] {
        let refused = browser.submit(FROM, TO, &send(channel, to)).await;
        assert_eq!(refused.status, StatusCode::UNPROCESSABLE_ENTITY, "{channel} {to}");
        assert!(refused.html.contains(&format!("value=\"{to}\"")), "what was typed is kept: {}", refused.html);
    }
    let sent = browser.submit(FROM, TO, &send("email", "ops@example.com")).await;
    assert_eq!(sent.location.as_deref(), Some("/app/integrations/verification?done=sent"), "a reload sends nothing more");
    assert!(browser.open("/app/integrations/verification?done=sent").await.html.contains("The test message is sent"));
    assert_eq!(smtp.next().await.to, vec!["ops@example.com".to_owned()]);

    smtp.unavailable();
    let failed = browser.submit(FROM, TO, &send("email", "ops@example.com")).await;
    assert_eq!(failed.status, StatusCode::SERVICE_UNAVAILABLE);
    assert!(failed.html.contains("The test message could not be sent; the service"), "{}", failed.html);
    // That was the second of the hour, failed or not: the next is refused beside the form.
    let limited = browser.submit(FROM, TO, &send("email", "ops@example.com")).await;
    assert_eq!(limited.status, StatusCode::TOO_MANY_REQUESTS);
    assert!(limited.html.contains("That was one too many for now. Try again in 60 minutes."), "{}", limited.html);
}
