//! Personal access tokens (`admin/tokens`): an admin makes one by name to
//! try the mobile API, sees it listed with its last use, and revokes it.

use std::time::Duration;

use parley_domain::model::Role;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::helpers::*;

/// Whether the mobile API takes `token`.
async fn accepted(app: &TestApp, token: &str) -> bool {
    let (status, body) = app.authed(Method::GET, "/api/v1/mobile/conversations", token, None).await;
    assert!(matches!(status, StatusCode::OK | StatusCode::UNAUTHORIZED), "{status} {body}");
    status == StatusCode::OK
}

async fn listed(app: &TestApp, admin: &str) -> Vec<Value> {
    let (status, body) = app.authed(Method::GET, "/api/v1/admin/tokens", admin, None).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body["tokens"].as_array().expect("tokens").clone()
}

#[tokio::test]
async fn a_token_is_shown_once_works_for_the_mobile_api_and_revoked_stops_at_once() {
    let app = TestApp::spawn().await;
    app.fixture("acme", &[]).await;
    let admin = app.login("admin@acme.example.com").await;
    for prefix in PREFIXES {
        let (status, body) = app
            .authed(Method::POST, &format!("{prefix}/admin/tokens"), &admin, Some(json!({"name": "CI smoke test", "expires_in_days": 7})))
            .await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        let token = &body["token"];
        let secret = token["access_token"].as_str().expect("shown at creation").to_owned();
        assert!(secret.starts_with("pat_"), "{secret}");
        assert_eq!(token["name"], "CI smoke test");
        assert_eq!(token["created_at"], "2026-01-01T00:00:00.000Z");
        assert_eq!(token["expires_at"], "2026-01-08T00:00:00.000Z");
        assert_eq!(token["last_used_at"], Value::Null);
        let id = token["id"].as_i64().unwrap();

        let list = listed(&app, &admin).await;
        let shown = list.iter().find(|t| t["id"] == id).expect("listed");
        assert!(shown.get("access_token").is_none(), "never shown again: {shown}");
        assert!(!serde_json::to_string(&list).unwrap().contains(&secret));

        assert!(accepted(&app, &secret).await, "the mobile API takes it");
        let (status, _) = app.authed(Method::DELETE, &format!("{prefix}/admin/tokens/{id}"), &admin, None).await;
        assert_eq!(status, StatusCode::NO_CONTENT);
        assert!(!accepted(&app, &secret).await, "revoked: refused at once");
        assert!(!listed(&app, &admin).await.iter().any(|t| t["id"] == id), "and no longer listed");
        let (status, body) = app.authed(Method::DELETE, &format!("{prefix}/admin/tokens/{id}"), &admin, None).await;
        assert_eq!((status, body["error"]["code"].as_str()), (StatusCode::NOT_FOUND, Some("not_found")));
    }
    assert!(accepted(&app, &admin).await, "the admin's own login is untouched");
}

#[tokio::test]
async fn the_last_use_is_recorded_to_the_minute_and_an_expired_token_is_refused_but_listed() {
    let app = TestApp::spawn().await;
    app.fixture("acme", &[]).await;
    let admin = app.login("admin@acme.example.com").await;
    let (_, body) = app.authed(Method::POST, "/api/v1/admin/tokens", &admin, Some(json!({"name": "phone"}))).await;
    let secret = body["token"]["access_token"].as_str().unwrap().to_owned();
    assert_eq!(body["token"]["expires_at"], "2026-01-31T00:00:00.000Z", "30 days when not said");
    let last_use = |list: Vec<Value>| list[0]["last_used_at"].clone();

    assert!(accepted(&app, &secret).await);
    assert_eq!(last_use(listed(&app, &admin).await), "2026-01-01T00:00:00.000Z");
    app.clock.advance(Duration::from_secs(30));
    assert!(accepted(&app, &secret).await);
    assert_eq!(last_use(listed(&app, &admin).await), "2026-01-01T00:00:00.000Z", "not written again within the minute");
    app.clock.advance(Duration::from_secs(31));
    assert!(accepted(&app, &secret).await);
    assert_eq!(last_use(listed(&app, &admin).await), "2026-01-01T00:01:01.000Z");

    app.clock.advance(Duration::from_secs(30 * 86_400));
    assert!(!accepted(&app, &secret).await, "expired");
    let admin = app.login("admin@acme.example.com").await;
    assert_eq!(listed(&app, &admin).await.len(), 1, "an expired token stays listed until revoked");
}

#[tokio::test]
async fn bad_requests_are_refused_and_make_nothing() {
    let app = TestApp::spawn().await;
    app.fixture("acme", &[]).await;
    let admin = app.login("admin@acme.example.com").await;
    let long = "n".repeat(256);
    for (body, field) in [
        (json!({}), "name"),
        (json!({"name": "  "}), "name"),
        (json!({"name": long}), "name"),
        (json!({"name": 5}), "name"),
        (json!({"name": "x", "expires_in_days": 0}), "expires_in_days"),
        (json!({"name": "x", "expires_in_days": 366}), "expires_in_days"),
        (json!({"name": "x", "expires_in_days": 1.5}), "expires_in_days"),
        (json!({"name": "x", "expires_in_days": "7"}), "expires_in_days"),
        (json!({"name": "x", "expires_in_days": -1}), "expires_in_days"),
    ] {
        let (status, answer) = app.authed(Method::POST, "/api/v1/admin/tokens", &admin, Some(body.clone())).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}: {answer}");
        assert!(answer["error"]["fields"][field].is_array(), "{body}: {answer}");
    }
    let (status, _) = app.send(Method::POST, "/api/v1/admin/tokens", None, &[("authorization", &format!("Bearer {admin}"))]).await;
    assert!(status.is_client_error());
    for id in ["abc", "0", "-1", "99999999999999999999"] {
        let (status, _) = app.authed(Method::DELETE, &format!("/api/v1/admin/tokens/{id}"), &admin, None).await;
        assert!(matches!(status, StatusCode::NOT_FOUND | StatusCode::UNPROCESSABLE_ENTITY), "{id}: {status}");
    }
    assert!(listed(&app, &admin).await.is_empty(), "nothing was made");
}

/// Tokens are the admin's own: an agent has none, another admin of the
/// tenant cannot see or revoke them, another tenant even less, and a
/// login's token is not a personal one to revoke here.
#[tokio::test]
async fn tokens_are_their_admins_own() {
    let app = TestApp::spawn().await;
    let f = app.fixture("acme", &[]).await;
    app.fixture("globex", &[]).await;
    app.operator(&f, "agent@acme.example.com", Role::Agent, &[f.scope.site]).await;
    app.operator(&f, "second@acme.example.com", Role::Admin, &[]).await;
    let admin = app.login("admin@acme.example.com").await;
    let (_, body) = app.authed(Method::POST, "/api/v1/admin/tokens", &admin, Some(json!({"name": "mine"}))).await;
    let id = body["token"]["id"].as_i64().unwrap();
    let secret = body["token"]["access_token"].as_str().unwrap().to_owned();

    let agent = app.login("agent@acme.example.com").await;
    for (method, path, body) in [
        (Method::GET, "/api/v1/admin/tokens".to_owned(), None),
        (Method::POST, "/api/v1/admin/tokens".to_owned(), Some(json!({"name": "agent's"}))),
        (Method::DELETE, format!("/api/v1/admin/tokens/{id}"), None),
    ] {
        let (status, answer) = app.authed(method.clone(), &path, &agent, body).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{method} {path}: {answer}");
    }
    for other in [app.login("second@acme.example.com").await, app.login("admin@globex.example.com").await] {
        assert!(listed(&app, &other).await.is_empty(), "not another admin's to see");
        let (status, _) = app.authed(Method::DELETE, &format!("/api/v1/admin/tokens/{id}"), &other, None).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "nor to revoke");
    }
    assert!(accepted(&app, &secret).await, "still live");

    // Login tokens have ids in the same table; none is revoked here.
    for guess in 1..=8 {
        if guess == id {
            continue;
        }
        let (status, _) = app.authed(Method::DELETE, &format!("/api/v1/admin/tokens/{guess}"), &admin, None).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "token {guess} is a login's, not a personal token");
    }
    assert!(accepted(&app, &admin).await, "logins are untouched");
}

#[tokio::test]
async fn an_admin_holds_at_most_fifty_live_tokens() {
    let app = TestApp::spawn().await;
    app.fixture("acme", &[]).await;
    let admin = app.login("admin@acme.example.com").await;
    for n in 0..50 {
        let (status, body) = app.authed(Method::POST, "/api/v1/admin/tokens", &admin, Some(json!({"name": format!("t{n}")}))).await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
    }
    let (status, body) = app.authed(Method::POST, "/api/v1/admin/tokens", &admin, Some(json!({"name": "one too many"}))).await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    let first = listed(&app, &admin).await[49]["id"].as_i64().unwrap();
    app.authed(Method::DELETE, &format!("/api/v1/admin/tokens/{first}"), &admin, None).await;
    let (status, _) = app.authed(Method::POST, "/api/v1/admin/tokens", &admin, Some(json!({"name": "room again"}))).await;
    assert_eq!(status, StatusCode::CREATED);
}

/// Null is "not given", as for every optional field.
#[tokio::test]
async fn a_null_expiry_is_the_default() {
    let app = TestApp::spawn().await;
    app.fixture("acme", &[]).await;
    let admin = app.login("admin@acme.example.com").await;
    let (status, body) =
        app.authed(Method::POST, "/api/v1/admin/tokens", &admin, Some(json!({"name": "n", "expires_in_days": null}))).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(body["token"]["expires_at"], "2026-01-31T00:00:00.000Z");
}

/// A stolen bearer token must not buy itself a longer life: a login's
/// token makes none that outlives it, and a personal token makes none.
#[tokio::test]
async fn a_token_never_outlives_the_token_that_made_it() {
    let app = TestApp::with().var("PARLEY_MOBILE_TOKEN_TTL", "1d").start().await;
    app.fixture("acme", &[]).await;
    let (status, login) = app.post("/api/v1/mobile/login", json!({"email": "admin@acme.example.com", "password": PASSWORD})).await;
    assert_eq!(status, StatusCode::OK, "{login}");
    let admin = login["token"].as_str().unwrap().to_owned();
    let mut made_by_login = Vec::new();
    for prefix in PREFIXES {
        let body = json!({"name": format!("long {prefix}"), "expires_in_days": 365});
        let (status, made) = app.authed(Method::POST, &format!("{prefix}/admin/tokens"), &admin, Some(body)).await;
        assert_eq!(status, StatusCode::CREATED, "{made}");
        assert_eq!(made["token"]["expires_at"], "2026-01-02T00:00:00.000Z", "no later than the login's own expiry: {made}");
        let personal = made["token"]["access_token"].as_str().unwrap().to_owned();

        let (status, body) = app
            .authed(Method::POST, &format!("{prefix}/admin/tokens"), &personal, Some(json!({"name": "child", "expires_in_days": 1})))
            .await;
        assert_error(status, &body, StatusCode::FORBIDDEN, "forbidden");
        assert!(!listed(&app, &admin).await.iter().any(|t| t["name"] == "child"), "nothing was made");
        assert!(accepted(&app, &personal).await, "the personal token itself still works");
        made_by_login.push(personal);
    }
    // Once the login has expired, what it made has too.
    app.clock.advance(Duration::from_secs(86_400));
    for token in made_by_login {
        assert!(!accepted(&app, &token).await, "expired with its maker");
    }
}

/// A personal access token is for the mobile API: with the admin API it
/// could make an admin of its own, or a new password for its operator,
/// and so outlive its own revocation.
#[tokio::test]
async fn a_personal_token_cannot_administer_the_tenant() {
    let app = TestApp::spawn().await;
    app.fixture("acme", &[]).await;
    let admin = app.login("admin@acme.example.com").await;
    let (_, made) = app.authed(Method::POST, "/api/admin/tokens", &admin, Some(json!({"name": "script", "expires_in_days": 1}))).await;
    let personal = made["token"]["access_token"].as_str().unwrap().to_owned();
    let (_, me) = app.authed(Method::GET, "/api/mobile/me", &personal, None).await;
    let own_id = me["user"]["id"].as_i64().unwrap();
    let new_admin = json!({"email": "eve@acme.example.com", "name": "Eve", "password": "a password of eve's", "role": "admin"});
    for (method, path, body) in [
        (Method::GET, "/api/v1/admin/sites".to_owned(), None),
        (Method::POST, "/api/v1/admin/operators".to_owned(), Some(new_admin)),
        (Method::PATCH, format!("/api/admin/operators/{own_id}"), Some(json!({"password": "a password of eve's"}))),
        (Method::GET, "/api/admin/tokens".to_owned(), None),
    ] {
        let (status, body) = app.authed(method, &path, &personal, body).await;
        assert_error(status, &body, StatusCode::FORBIDDEN, "forbidden");
    }
    assert!(accepted(&app, &personal).await, "the mobile API takes it");
    let (status, body) = app.post("/api/mobile/login", json!({"email": "eve@acme.example.com", "password": "a password of eve's"})).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "no admin was made: {body}");
}
