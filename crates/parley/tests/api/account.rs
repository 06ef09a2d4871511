//! The operator's own account: name and notification choices, password
//! (given the current one; every other sign-in ends), and the sign-ins
//! it can end; through the mobile API and `/app/account`. Another
//! operator's sign-ins are out of reach, and a personal token can neither
//! change the password nor end sign-ins.

use parley_domain::model::Role;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::helpers::*;
use crate::web_browser::Browser;

async fn sign_ins(app: &TestApp, token: &str) -> Vec<Value> {
    let (status, body) = app.authed(Method::GET, "/api/v1/mobile/me/sign-ins", token, None).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body["sign_ins"].as_array().unwrap().clone()
}

#[tokio::test]
async fn an_operator_changes_its_name_and_choices_and_bad_input_changes_nothing() {
    let app = TestApp::spawn().await;
    let f = app.fixture("acme", &[]).await;
    app.operator(&f, "ann@acme.example.com", Role::Agent, &[f.scope.site]).await;
    let ann = app.login("ann@acme.example.com").await;
    for prefix in ["/api", "/api/v1"] {
        let (status, body) =
            app.authed(Method::PATCH, &format!("{prefix}/mobile/me"), &ann, Some(json!({"name": "Ann Smith", "notify_mine": false}))).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(body["user"]["name"], "Ann Smith");
        assert_eq!(body["user"]["notifications"], json!({"unassigned": true, "mine": false}));
    }
    for (bad, field) in
        [(json!({"name": ""}), "name"), (json!({"name": "x".repeat(300)}), "name"), (json!({"notify_mine": "no"}), "notify_mine")]
    {
        let (status, body) = app.authed(Method::PATCH, "/api/v1/mobile/me", &ann, Some(bad)).await;
        assert_fields(status, &body, &[field]);
    }
    let (status, body) = app.send(Method::PATCH, "/api/v1/mobile/me", Some(json!({"name": "X"})), &[]).await;
    assert_error(status, &body, StatusCode::UNAUTHORIZED, "unauthenticated");
    let (_, me) = app.authed(Method::GET, "/api/v1/mobile/me", &ann, None).await;
    assert_eq!((me["user"]["name"].as_str(), &me["user"]["notifications"]["mine"]), (Some("Ann Smith"), &json!(false)));
    app.stop().await;
}

#[tokio::test]
async fn a_new_password_needs_the_current_one_and_ends_every_other_sign_in() {
    let app = TestApp::spawn().await;
    let f = app.fixture("acme", &[]).await;
    app.operator(&f, "ann@acme.example.com", Role::Admin, &[]).await;
    let here = app.login("ann@acme.example.com").await;
    let elsewhere = app.login("ann@acme.example.com").await;
    let (_, token) = app.authed(Method::POST, "/api/v1/admin/tokens", &here, Some(json!({"name": "CI", "expires_in_days": 7}))).await;
    let personal = token["token"]["access_token"].as_str().unwrap().to_owned();
    let path = "/api/v1/mobile/me/password";
    for (bad, field) in [
        (json!({"current_password": "wrong password", "new_password": "a long enough phrase"}), "current_password"),
        (json!({"current_password": PASSWORD, "new_password": "short"}), "new_password"),
        (json!({"new_password": "a long enough phrase"}), "current_password"),
    ] {
        let (status, body) = app.authed(Method::POST, path, &here, Some(bad)).await;
        assert_fields(status, &body, &[field]);
    }
    let good = json!({"current_password": PASSWORD, "new_password": "a long enough phrase"});
    let (status, body) = app.authed(Method::POST, path, &personal, Some(good.clone())).await;
    assert_error(status, &body, StatusCode::FORBIDDEN, "forbidden");
    let (status, _) = app.authed(Method::POST, path, &here, Some(good)).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, _) = app.authed(Method::GET, "/api/v1/mobile/me", &here, None).await;
    assert_eq!(status, StatusCode::OK, "this sign-in stays");
    for ended in [&elsewhere, &personal] {
        let (status, body) = app.authed(Method::GET, "/api/v1/mobile/me", ended, None).await;
        assert_error(status, &body, StatusCode::UNAUTHORIZED, "unauthenticated");
    }
    let (status, _) = app.post("/api/v1/mobile/login", json!({"email": "ann@acme.example.com", "password": PASSWORD})).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let (status, _) = app.post("/api/v1/mobile/login", json!({"email": "ann@acme.example.com", "password": "a long enough phrase"})).await;
    assert_eq!(status, StatusCode::OK);
    app.stop().await;
}

#[tokio::test]
async fn an_operator_sees_and_ends_its_own_sign_ins_only() {
    let app = TestApp::spawn().await;
    let f = app.fixture("acme", &[]).await;
    app.fixture("globex", &[]).await;
    app.operator(&f, "ann@acme.example.com", Role::Agent, &[f.scope.site]).await;
    let ann = app.login("ann@acme.example.com").await;
    let phone = app.login("ann@acme.example.com").await;
    let admin = app.login("admin@acme.example.com").await;
    let outsider = app.login("admin@globex.example.com").await;
    let list = sign_ins(&app, &ann).await;
    assert_eq!(list.len(), 2);
    assert_eq!(list.iter().filter(|s| s["current"] == true).count(), 1);
    assert!(list.iter().all(|s| s["kind"] == "login"));
    let current = list.iter().find(|s| s["current"] == true).unwrap()["id"].as_i64().unwrap();
    let other = list.iter().find(|s| s["current"] == false).unwrap()["id"].as_i64().unwrap();

    for who in [&admin, &outsider] {
        let (status, body) = app.authed(Method::DELETE, &format!("/api/v1/mobile/me/sign-ins/{other}"), who, None).await;
        assert_error(status, &body, StatusCode::NOT_FOUND, "not_found");
    }
    for bad in ["0", "x", "99999"] {
        let (status, body) = app.authed(Method::DELETE, &format!("/api/v1/mobile/me/sign-ins/{bad}"), &ann, None).await;
        assert_error(status, &body, StatusCode::NOT_FOUND, "not_found");
    }
    let (status, _) = app.authed(Method::GET, "/api/v1/mobile/me", &phone, None).await;
    assert_eq!(status, StatusCode::OK, "nobody else ended it");
    let (status, _) = app.authed(Method::DELETE, &format!("/api/v1/mobile/me/sign-ins/{other}"), &ann, None).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, body) = app.authed(Method::GET, "/api/v1/mobile/me", &phone, None).await;
    assert_error(status, &body, StatusCode::UNAUTHORIZED, "unauthenticated");
    assert_eq!(sign_ins(&app, &ann).await.len(), 1);
    let (status, _) = app.authed(Method::DELETE, &format!("/api/v1/mobile/me/sign-ins/{current}"), &ann, None).await;
    assert_eq!(status, StatusCode::NO_CONTENT, "ending this one signs out");
    let (status, _) = app.authed(Method::GET, "/api/v1/mobile/me", &ann, None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    app.stop().await;
}

#[tokio::test]
async fn the_account_page_changes_the_name_the_password_and_ends_another_session() {
    let app = TestApp::spawn().await;
    let f = app.fixture("acme", &[]).await;
    app.operator(&f, "ann@acme.example.com", Role::Agent, &[f.scope.site]).await;
    let mut other = Browser::signed_in(&app, "ann@acme.example.com").await;
    let mut browser = Browser::signed_in(&app, "ann@acme.example.com").await;
    let page = browser.get("/app/account").await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(page.html.contains("Where you are signed in") && page.html.contains("this browser"), "{}", page.html);
    let csrf = page.field("csrf");

    let saved = browser
        .post(
            "/app/account",
            &[("csrf", &csrf), ("name", "Ann Smith"), ("notify_unassigned", "false"), ("notify_mine", "true"), ("notify_mine", "false")],
        )
        .await;
    assert_eq!(saved.location.as_deref(), Some("/app/account?done=saved"));
    let page = browser.get("/app/account?done=saved").await;
    assert!(page.html.contains("Your account is saved.") && page.html.contains("value=\"Ann Smith\""));
    let refused = browser.post("/app/account", &[("csrf", &csrf), ("name", "")]).await;
    assert_eq!(refused.status, StatusCode::UNPROCESSABLE_ENTITY);

    let mismatch = browser
        .post(
            "/app/account/password",
            &[("csrf", &csrf), ("current_password", PASSWORD), ("new_password", "a long enough phrase"), ("confirm", "another phrase!")],
        )
        .await;
    assert_eq!(mismatch.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(!mismatch.html.contains("a long enough phrase"), "what was typed is not sent back");
    let wrong = browser
        .post(
            "/app/account/password",
            &[
                ("csrf", &csrf),
                ("current_password", "not it at all"),
                ("new_password", "a long enough phrase"),
                ("confirm", "a long enough phrase"),
            ],
        )
        .await;
    assert!(wrong.html.contains("Current password is not your password."), "{}", wrong.html);

    // End the other browser's session from this one: each session the
    // page lists has its form; ending this one signs out.
    let page = browser.get("/app/account").await;
    assert_eq!(page.html.matches("/app/account/sign-ins/").count(), 2);
    let (_, me) = app.authed(Method::GET, "/api/v1/mobile/me/sign-ins", &app.login("ann@acme.example.com").await, None).await;
    let mut sessions: Vec<i64> =
        me["sign_ins"].as_array().unwrap().iter().filter(|s| s["kind"] == "session").map(|s| s["id"].as_i64().unwrap()).collect();
    sessions.sort_unstable();
    // The other browser signed in first: its session is the older.
    let ended = browser.post(&format!("/app/account/sign-ins/{}/end", sessions[0]), &[("csrf", &csrf)]).await;
    assert_eq!(ended.location.as_deref(), Some("/app/account?done=ended"));
    assert_eq!(other.get("/app").await.status, StatusCode::SEE_OTHER, "the other browser is signed out");
    assert_eq!(browser.get("/app/account").await.status, StatusCode::OK, "this one is not");
    let forged = browser.post("/app/account", &[("name", "X")]).await;
    assert_eq!(forged.status, StatusCode::FORBIDDEN);
    let ended = browser.post(&format!("/app/account/sign-ins/{}/end", sessions[1]), &[("csrf", &csrf)]).await;
    assert_eq!(ended.location.as_deref(), Some("/app/login"), "ending this one signs out");
    assert!(
        ended.set_cookies.iter().any(|c| c.starts_with("parley_session=") && c.contains("Max-Age=0")),
        "and forgets its cookie, as signing out does: {:?}",
        ended.set_cookies
    );
    assert_eq!(browser.get("/app/account").await.status, StatusCode::SEE_OTHER);
    app.stop().await;
}

#[tokio::test]
async fn wrong_current_passwords_are_limited_and_ending_a_personal_token_is_audited() {
    let app = TestApp::with().var("PARLEY_RATE_LIMITS", "on").start().await;
    app.fixture("acme", &[]).await;
    let admin = app.login("admin@acme.example.com").await;
    let wrong = json!({"current_password": "not my password", "new_password": "a long enough phrase"});
    for _ in 0..5 {
        let (status, body) = app.authed(Method::POST, "/api/v1/mobile/me/password", &admin, Some(wrong.clone())).await;
        assert_fields(status, &body, &["current_password"]);
    }
    let right = json!({"current_password": PASSWORD, "new_password": "a long enough phrase"});
    let (status, body) = app.authed(Method::POST, "/api/v1/mobile/me/password", &admin, Some(right)).await;
    assert_error(status, &body, StatusCode::TOO_MANY_REQUESTS, "rate_limited");

    let (_, made) = app.authed(Method::POST, "/api/v1/admin/tokens", &admin, Some(json!({"name": "CI", "expires_in_days": 7}))).await;
    let id = made["token"]["id"].as_i64().unwrap();
    let (status, _) = app.authed(Method::DELETE, &format!("/api/v1/mobile/me/sign-ins/{id}"), &admin, None).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (_, log) = app.authed(Method::GET, "/api/v1/admin/audit", &admin, None).await;
    assert_eq!((log["entries"][0]["action"].as_str(), log["entries"][0]["target_id"].as_i64()), (Some("token.revoked"), Some(id)));
    app.stop().await;
}

#[tokio::test]
async fn the_account_page_removes_only_its_own_devices_and_shows_every_name_as_text() {
    let app = TestApp::spawn().await;
    let f = app.fixture("acme", &[]).await;
    app.operator(&f, "ann@acme.example.com", Role::Agent, &[f.scope.site]).await;
    app.fixture("globex", &[]).await;
    let hostile = "<script>alert(1)</script>\"><img src=x onerror=alert(2)>";
    let ann = app.login("ann@acme.example.com").await;
    let admin = app.login("admin@acme.example.com").await;
    let outsider = app.login("admin@globex.example.com").await;
    let token = "740f4707bebcf74f9b7c25d48e3358945f6aa01da5ddb387462c7eaf61bb78ad";
    let (status, made) = app
        .authed(Method::POST, "/api/v1/mobile/devices", &ann, Some(json!({"platform": "ios", "push_token": token, "name": hostile})))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{made}");
    let device = made["device"]["id"].as_i64().unwrap();
    let (status, _) = app.authed(Method::PATCH, "/api/v1/mobile/me", &ann, Some(json!({"name": hostile}))).await;
    assert_eq!(status, StatusCode::OK);

    // Ann's page shows her name and her device's as text.
    let mut browser = Browser::signed_in(&app, "ann@acme.example.com").await;
    let page = browser.get("/app/account").await;
    assert!(!page.html.contains("<script>alert") && !page.html.contains("<img src=x"), "{}", page.html);
    assert!(page.html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"), "the name is shown, escaped: {}", page.html);

    // Another operator of the tenant and another tenant's admin reach
    // nothing through their own pages.
    for (email, token) in [("admin@acme.example.com", &admin), ("admin@globex.example.com", &outsider)] {
        let mut other = Browser::signed_in(&app, email).await;
        let csrf = other.get("/app/account").await.field("csrf");
        let refused = other.post(&format!("/app/account/devices/{device}/remove"), &[("csrf", &csrf)]).await;
        assert_eq!(refused.status, StatusCode::NOT_FOUND, "{email}: {}", refused.html);
        let (_, theirs) = app.authed(Method::GET, "/api/v1/mobile/devices", token, None).await;
        assert_eq!(theirs["devices"], json!([]), "{email}");
    }
    let (_, list) = app.authed(Method::GET, "/api/v1/mobile/devices", &ann, None).await;
    assert_eq!(list["devices"].as_array().unwrap().len(), 1, "still Ann's");
    for bad in ["x", "0", "-1", "99999999999999999999"] {
        let csrf = browser.get("/app/account").await.field("csrf");
        let refused = browser.post(&format!("/app/account/devices/{bad}/remove"), &[("csrf", &csrf)]).await;
        assert_eq!(refused.status, StatusCode::NOT_FOUND, "{bad}");
    }

    let csrf = page.field("csrf");
    let removed = browser.post(&format!("/app/account/devices/{device}/remove"), &[("csrf", &csrf)]).await;
    assert_eq!(removed.location.as_deref(), Some("/app/account?done=removed"), "{}", removed.html);
    let (_, list) = app.authed(Method::GET, "/api/v1/mobile/devices", &ann, None).await;
    assert_eq!(list["devices"], json!([]));
    app.stop().await;
}
