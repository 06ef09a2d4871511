//! The audit log: every admin change is recorded with who made it, from
//! which address and when, in the change's own transaction; a refused
//! change records nothing; secrets never reach it; each tenant reads its
//! own, admins only, through the API and the web app.

use parley_domain::model::Role;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::helpers::*;

async fn log(app: &TestApp, admin: &str) -> Vec<Value> {
    let (status, body) = app.authed(Method::GET, "/api/v1/admin/audit?per_page=100", admin, None).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body["entries"].as_array().unwrap().clone()
}

fn actions(entries: &[Value]) -> Vec<(String, Option<i64>)> {
    entries.iter().rev().map(|e| (e["action"].as_str().unwrap().to_owned(), e["target_id"].as_i64())).collect()
}

async fn ok(app: &TestApp, method: Method, path: &str, admin: &str, body: Option<Value>) -> Value {
    let (status, answer) = app.authed(method, path, admin, body).await;
    assert!(status.is_success(), "{path}: {status} {answer}");
    answer
}

#[tokio::test]
async fn every_admin_change_is_recorded_with_who_what_and_where() {
    let app = TestApp::with().var("PARLEY_WEBHOOK_ALLOW_PRIVATE", "true").start().await;
    let f = app.fixture("acme", &[]).await;
    let admin = app.login("admin@acme.example.com").await;
    assert_eq!(log(&app, &admin).await, Vec::<Value>::new(), "the fixture's own setup is not an admin's change");

    let site = ok(&app, Method::POST, "/api/v1/admin/sites", &admin, Some(json!({"name": "Docs", "domains": ["docs.example.com"]}))).await;
    let site = site["site"]["id"].as_i64().unwrap();
    ok(&app, Method::PATCH, &format!("/api/v1/admin/sites/{site}"), &admin, Some(json!({"locale": "fr"}))).await;
    let inst = ok(&app, Method::POST, &format!("/api/v1/admin/sites/{site}/installations"), &admin, Some(json!({"name": "Help"}))).await;
    let inst = inst["installation"]["id"].as_i64().unwrap();
    let secret = ok(&app, Method::POST, &format!("/api/v1/admin/installations/{inst}/identity-secret"), &admin, None).await;
    let identity_secret = secret["identity_secret"].as_str().unwrap().to_owned();
    ok(&app, Method::PATCH, &format!("/api/v1/admin/installations/{inst}"), &admin, Some(json!({"enabled": false}))).await;
    let bea = ok(
        &app,
        Method::POST,
        "/api/v1/admin/operators",
        &admin,
        Some(json!({"email": "bea@acme.example.com", "name": "Bea", "password": "a long secret phrase", "role": "agent", "site_ids": [site]})),
    )
    .await;
    let bea = bea["operator"]["id"].as_i64().unwrap();
    ok(
        &app,
        Method::PATCH,
        &format!("/api/v1/admin/operators/{bea}"),
        &admin,
        Some(json!({"password": "another long phrase", "role": "admin"})),
    )
    .await;
    let hook =
        ok(&app, Method::POST, "/api/v1/admin/webhooks", &admin, Some(json!({"url": "http://partner:pw@127.0.0.1:9/hook?key=s3cr3t"})))
            .await;
    let (hook, hook_secret) = (hook["webhook"]["id"].as_i64().unwrap(), hook["webhook"]["secret"].as_str().unwrap().to_owned());
    ok(&app, Method::POST, &format!("/api/v1/admin/webhooks/{hook}/rotate-secret"), &admin, None).await;
    ok(&app, Method::DELETE, &format!("/api/v1/admin/webhooks/{hook}"), &admin, None).await;
    let token = ok(&app, Method::POST, "/api/v1/admin/tokens", &admin, Some(json!({"name": "CI", "expires_in_days": 7}))).await;
    let (token_id, token_value) = (token["token"]["id"].as_i64().unwrap(), token["token"]["access_token"].as_str().unwrap().to_owned());
    ok(&app, Method::DELETE, &format!("/api/v1/admin/tokens/{token_id}"), &admin, None).await;
    let canned = ok(&app, Method::POST, "/api/v1/admin/canned-responses", &admin, Some(json!({"shortcut": "hi", "body": "Hello"}))).await;
    let canned = canned["canned_response"]["id"].as_i64().unwrap();
    ok(&app, Method::PATCH, &format!("/api/v1/admin/canned-responses/{canned}"), &admin, Some(json!({"body": "Hello!"}))).await;
    ok(&app, Method::DELETE, &format!("/api/v1/admin/canned-responses/{canned}"), &admin, None).await;
    let public_id = app.open_conversation("/api", &f.token, "v1", "please forget me").await;
    let (_, list) = app.authed(Method::GET, "/api/v1/mobile/conversations", &admin, None).await;
    let conversation = list["conversations"][0]["id"].as_i64().unwrap();
    ok(&app, Method::DELETE, &format!("/api/v1/admin/conversations/{conversation}"), &admin, None).await;

    let entries = log(&app, &admin).await;
    let expected: Vec<(String, Option<i64>)> = [
        ("site.created", site),
        ("site.updated", site),
        ("installation.created", inst),
        ("installation.identity_secret_rotated", inst),
        ("installation.updated", inst),
        ("operator.created", bea),
        ("operator.updated", bea),
        ("webhook.created", hook),
        ("webhook.secret_rotated", hook),
        ("webhook.deleted", hook),
        ("token.created", token_id),
        ("token.revoked", token_id),
        ("canned_response.created", canned),
        ("canned_response.updated", canned),
        ("canned_response.deleted", canned),
        ("conversation.erased", conversation),
    ]
    .into_iter()
    .map(|(a, id)| (a.to_owned(), Some(id)))
    .collect();
    assert_eq!(actions(&entries), expected, "newest first, each with its target");
    for e in &entries {
        assert_eq!(e["actor"]["name"], "admin@acme.example.com");
        assert_eq!(e["actor"]["client_address"], "127.0.0.1");
        assert!(e["actor"]["operator_id"].as_i64().is_some());
        assert!(e["created_at"].as_str().is_some());
    }
    let by_action = |a: &str| entries.iter().find(|e| e["action"] == a).unwrap().clone();
    assert_eq!(by_action("site.created")["target_type"], "site");
    assert_eq!(by_action("site.created")["details"], json!({"name": "Docs", "domains": ["docs.example.com"]}));
    assert_eq!(by_action("site.updated")["details"], json!({"locale": "fr"}));
    assert_eq!(by_action("installation.updated")["details"], json!({"enabled": false}));
    assert_eq!(by_action("operator.updated")["details"], json!({"role": "admin", "password": "changed"}));
    assert_eq!(by_action("canned_response.updated")["details"], json!({"shortcut": "hi", "body_changed": true}));
    assert_eq!(by_action("conversation.erased")["details"], json!({"public_id": public_id}));
    assert_eq!(by_action("webhook.created")["details"]["url"], "http://127.0.0.1:9/hook", "no credentials, no query");
    let text = serde_json::to_string(&entries).unwrap();
    for secret in [
        identity_secret.as_str(),
        hook_secret.as_str(),
        token_value.as_str(),
        "a long secret phrase",
        "another long phrase",
        "please forget me",
    ] {
        assert!(!text.contains(secret), "the log never holds a secret or a message");
    }
    app.stop().await;
}

#[tokio::test]
async fn a_refused_change_records_nothing() {
    let app = TestApp::spawn().await;
    let f = app.fixture("acme", &[]).await;
    let admin = app.login("admin@acme.example.com").await;
    ok(&app, Method::POST, "/api/v1/admin/canned-responses", &admin, Some(json!({"shortcut": "hi", "body": "Hello"}))).await;
    let (status, _) =
        app.authed(Method::POST, "/api/v1/admin/canned-responses", &admin, Some(json!({"shortcut": "hi", "body": "Again"}))).await;
    assert_eq!(status, StatusCode::CONFLICT);
    let (status, _) =
        app.authed(Method::PATCH, &format!("/api/v1/admin/sites/{}", f.scope.site.0), &admin, Some(json!({"locale": "xx"}))).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    let (status, _) = app.authed(Method::PATCH, "/api/v1/admin/operators/1", &admin, Some(json!({"active": false}))).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "an admin cannot disable itself");
    let (status, _) = app.authed(Method::DELETE, "/api/v1/admin/webhooks/999", &admin, None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(actions(&log(&app, &admin).await).len(), 1, "only the change that was made");
    app.stop().await;
}

#[tokio::test]
async fn each_tenant_reads_its_own_log_and_only_admins_do() {
    let app = TestApp::spawn().await;
    let acme = app.fixture("acme", &[]).await;
    app.fixture("globex", &[]).await;
    app.operator(&acme, "agent@acme.example.com", Role::Agent, &[acme.scope.site]).await;
    let admin = app.login("admin@acme.example.com").await;
    let agent = app.login("agent@acme.example.com").await;
    let globex = app.login("admin@globex.example.com").await;
    ok(&app, Method::POST, "/api/v1/admin/canned-responses", &admin, Some(json!({"shortcut": "hi", "body": "Hello"}))).await;
    assert_eq!(log(&app, &admin).await.len(), 1);
    assert_eq!(log(&app, &globex).await.len(), 0, "another tenant's changes are not in its log");

    for prefix in ["/api", "/api/v1"] {
        let (status, body) = app.authed(Method::GET, &format!("{prefix}/admin/audit"), &agent, None).await;
        assert_error(status, &body, StatusCode::FORBIDDEN, "forbidden");
        let (status, body) = app.get(&format!("{prefix}/admin/audit")).await;
        assert_error(status, &body, StatusCode::UNAUTHORIZED, "unauthenticated");
    }
    let token = ok(&app, Method::POST, "/api/v1/admin/tokens", &admin, Some(json!({"name": "CI", "expires_in_days": 7}))).await;
    let personal = token["token"]["access_token"].as_str().unwrap();
    let (status, body) = app.authed(Method::GET, "/api/v1/admin/audit", personal, None).await;
    assert_error(status, &body, StatusCode::FORBIDDEN, "forbidden");
    for (query, field) in [("page=0", "page"), ("page=x", "page"), ("per_page=0", "per_page"), ("per_page=101", "per_page")] {
        let (status, body) = app.authed(Method::GET, &format!("/api/v1/admin/audit?{query}"), &admin, None).await;
        assert_fields(status, &body, &[field]);
    }
    let (status, body) = app.authed(Method::GET, "/api/v1/admin/audit?per_page=1&page=2", &admin, None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["entries"].as_array().unwrap().len(), 1, "the token made is the second entry");
    assert_eq!(body["meta"], json!({"current_page": 2, "per_page": 1, "total": 2, "last_page": 2}));

    // The web app's page: admins read it, agents are refused.
    let mut browser = crate::web_browser::Browser::signed_in(&app, "admin@acme.example.com").await;
    let page = browser.get("/app/settings/audit").await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(page.html.contains("canned_response.created") && page.html.contains("token.created"), "{}", page.html);
    assert!(page.html.contains("admin@acme.example.com") && page.html.contains("127.0.0.1"));
    let past = browser.get("/app/settings/audit?page=99999").await;
    assert_eq!(past.status, StatusCode::OK);
    assert!(past.html.contains("No changes on this page.") && past.html.contains("See the latest changes"), "{}", past.html);
    let mut agent_browser = crate::web_browser::Browser::signed_in(&app, "agent@acme.example.com").await;
    assert_eq!(agent_browser.get("/app/settings/audit").await.status, StatusCode::FORBIDDEN);
    app.stop().await;
}

/// The actions are declared once (`audit::Action`); the API's document
/// names each of them.
#[test]
fn the_api_document_names_every_action() {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/api.md")).unwrap();
    for action in parley_domain::audit::Action::ALL {
        assert!(doc.contains(&format!("`{}`", action.as_str())), "docs/api.md names {}", action.as_str());
    }
}

#[tokio::test]
async fn the_audit_page_pages_through_the_log_newest_first() {
    let app = TestApp::spawn().await;
    app.fixture("acme", &[]).await;
    app.fixture("globex", &[]).await;
    let admin = app.login("admin@acme.example.com").await;
    for n in 1..=52 {
        ok(&app, Method::POST, "/api/v1/admin/canned-responses", &admin, Some(json!({"shortcut": format!("r{n}"), "body": "Hi"}))).await;
    }
    let mut browser = crate::web_browser::Browser::signed_in(&app, "admin@acme.example.com").await;
    let first = browser.get("/app/settings/audit").await;
    assert_eq!(first.html.matches("canned_response.created").count(), 50, "fifty a page");
    assert!(first.html.contains("<dd>r52</dd>") && !first.html.contains("<dd>r2</dd>"), "the newest first: {}", first.html);
    assert!(first.html.contains("Page 1 of 2"), "{}", first.html);
    assert!(first.html.contains("href=\"/app/settings/audit?page=2\" rel=\"next\"") && !first.html.contains("rel=\"prev\""));
    let second = browser.get("/app/settings/audit?page=2").await;
    assert_eq!(second.html.matches("canned_response.created").count(), 2, "{}", second.html);
    assert!(second.html.contains("<dd>r1</dd>") && second.html.contains("<dd>r2</dd>"), "the oldest last");
    assert!(second.html.contains("Page 2 of 2") && second.html.contains("href=\"/app/settings/audit?page=1\" rel=\"prev\""));
    assert!(!second.html.contains("rel=\"next\""));
    for odd in ["page=0", "page=x", "page=-1", "page=99999999999"] {
        let page = browser.get(&format!("/app/settings/audit?{odd}")).await;
        assert_eq!(page.status, StatusCode::OK, "{odd}");
        assert!(page.html.contains("Page 1 of 2"), "an odd page is the first: {odd}");
    }
    let mut other = crate::web_browser::Browser::signed_in(&app, "admin@globex.example.com").await;
    let theirs = other.get("/app/settings/audit").await;
    assert!(theirs.html.contains("Nothing changed yet.") && !theirs.html.contains("canned_response"), "{}", theirs.html);
    app.stop().await;
}
