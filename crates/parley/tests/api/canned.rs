//! Canned responses: admins keep the tenant's texts under shortcuts,
//! every operator reads them; bad input, duplicate shortcuts and the
//! bound are refused and change nothing; another tenant's are out of
//! reach, and agents cannot write them.

use parley_domain::model::Role;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::helpers::*;

async fn list(app: &TestApp, token: &str) -> Value {
    let (status, body) = app.authed(Method::GET, "/api/mobile/canned-responses", token, None).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body["canned_responses"].clone()
}

async fn create(app: &TestApp, token: &str, body: Value) -> (StatusCode, Value) {
    app.authed(Method::POST, "/api/admin/canned-responses", token, Some(body)).await
}

#[tokio::test]
async fn admins_keep_canned_responses_and_every_operator_reads_them() {
    let app = TestApp::spawn().await;
    let f = app.fixture("acme", &[]).await;
    app.operator(&f, "agent@acme.example.com", Role::Agent, &[f.scope.site]).await;
    let admin = app.login("admin@acme.example.com").await;
    let agent = app.login("agent@acme.example.com").await;
    assert_eq!(list(&app, &agent).await, json!([]));

    let (status, made) = create(&app, &admin, json!({"shortcut": "Thanks", "body": "  Thank you for writing!\nBest, the team  "})).await;
    assert_eq!(status, StatusCode::CREATED, "{made}");
    let thanks = &made["canned_response"];
    assert_eq!((thanks["shortcut"].as_str(), thanks["body"].as_str()), (Some("thanks"), Some("Thank you for writing!\nBest, the team")));
    let (status, made) =
        app.authed(Method::POST, "/api/v1/admin/canned-responses", &admin, Some(json!({"shortcut": "hours", "body": "9 to 5"}))).await;
    assert_eq!(status, StatusCode::CREATED, "{made}");
    let hours = made["canned_response"]["id"].as_i64().unwrap();
    let shortcuts = |l: &Value| l.as_array().unwrap().iter().map(|c| c["shortcut"].as_str().unwrap().to_owned()).collect::<Vec<_>>();
    assert_eq!(shortcuts(&list(&app, &agent).await), ["hours", "thanks"], "by shortcut, for agents too");

    let path = format!("/api/admin/canned-responses/{hours}");
    let (status, changed) = app.authed(Method::PATCH, &path, &admin, Some(json!({"body": "9 to 6, Monday to Friday"}))).await;
    assert_eq!(status, StatusCode::OK, "{changed}");
    assert_eq!(changed["canned_response"]["shortcut"], "hours");
    assert_eq!(changed["canned_response"]["body"], "9 to 6, Monday to Friday");
    let (status, changed) =
        app.authed(Method::PATCH, &format!("/api/v1/admin/canned-responses/{hours}"), &admin, Some(json!({"shortcut": "open"}))).await;
    assert_eq!(status, StatusCode::OK, "{changed}");
    assert_eq!(shortcuts(&list(&app, &agent).await), ["open", "thanks"]);
    assert_eq!(list(&app, &agent).await[0]["body"], "9 to 6, Monday to Friday");

    let (status, _) = app.authed(Method::DELETE, &path, &admin, None).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    assert_eq!(shortcuts(&list(&app, &admin).await), ["thanks"]);
    let (status, body) = app.authed(Method::DELETE, &path, &admin, None).await;
    assert_error(status, &body, StatusCode::NOT_FOUND, "not_found");
    app.stop().await;
}

#[tokio::test]
async fn bad_canned_responses_are_refused_and_change_nothing() {
    let app = TestApp::spawn().await;
    app.fixture("acme", &[]).await;
    let admin = app.login("admin@acme.example.com").await;
    let (_, made) = create(&app, &admin, json!({"shortcut": "thanks", "body": "Thank you"})).await;
    let id = made["canned_response"]["id"].as_i64().unwrap();
    let before = list(&app, &admin).await;

    let long = "x".repeat(5_001);
    for (body, field) in [
        (json!({"body": "text"}), "shortcut"),
        (json!({"shortcut": "", "body": "text"}), "shortcut"),
        (json!({"shortcut": "-dash", "body": "text"}), "shortcut"),
        (json!({"shortcut": "two words", "body": "text"}), "shortcut"),
        (json!({"shortcut": "é", "body": "text"}), "shortcut"),
        (json!({"shortcut": "a".repeat(33), "body": "text"}), "shortcut"),
        (json!({"shortcut": 7, "body": "text"}), "shortcut"),
        (json!({"shortcut": "ok"}), "body"),
        (json!({"shortcut": "ok", "body": "   "}), "body"),
        (json!({"shortcut": "ok", "body": "a\u{0007}b"}), "body"),
        (json!({"shortcut": "ok", "body": long}), "body"),
        (json!({"shortcut": "ok", "body": null}), "body"),
    ] {
        let (status, answer) = create(&app, &admin, body.clone()).await;
        assert_fields(status, &answer, &[field]);
    }
    let path = format!("/api/admin/canned-responses/{id}");
    for (body, field) in [(json!({}), "shortcut"), (json!({"shortcut": "no way"}), "shortcut"), (json!({"body": ""}), "body")] {
        let (status, answer) = app.authed(Method::PATCH, &path, &admin, Some(body)).await;
        assert_fields(status, &answer, &[field]);
    }
    let (status, answer) = app
        .send(
            Method::POST,
            "/api/admin/canned-responses",
            None,
            &[("authorization", &format!("Bearer {admin}")), ("content-type", "application/json")],
        )
        .await;
    assert!(status.is_client_error(), "{status} {answer}");

    // A shortcut is one per tenant, whatever its case.
    let (status, answer) = create(&app, &admin, json!({"shortcut": "THANKS", "body": "again"})).await;
    assert_error(status, &answer, StatusCode::CONFLICT, "conflict");
    let (_, other) = create(&app, &admin, json!({"shortcut": "other", "body": "other"})).await;
    let other = other["canned_response"]["id"].as_i64().unwrap();
    let (status, answer) =
        app.authed(Method::PATCH, &format!("/api/admin/canned-responses/{other}"), &admin, Some(json!({"shortcut": "Thanks"}))).await;
    assert_error(status, &answer, StatusCode::CONFLICT, "conflict");
    let (status, _) = app.authed(Method::DELETE, &format!("/api/admin/canned-responses/{other}"), &admin, None).await;
    assert_eq!(status, StatusCode::NO_CONTENT);

    for bad in ["0", "-1", "abc", "99999999999999999999", &(id + 100).to_string()] {
        let path = format!("/api/admin/canned-responses/{bad}");
        let (status, answer) = app.authed(Method::PATCH, &path, &admin, Some(json!({"body": "x"}))).await;
        assert_error(status, &answer, StatusCode::NOT_FOUND, "not_found");
        let (status, answer) = app.authed(Method::DELETE, &path, &admin, None).await;
        assert_error(status, &answer, StatusCode::NOT_FOUND, "not_found");
    }
    assert_eq!(list(&app, &admin).await, before, "nothing changed");
    app.stop().await;
}

#[tokio::test]
async fn only_admins_write_and_each_tenant_keeps_its_own() {
    let app = TestApp::spawn().await;
    let f = app.fixture("acme", &[]).await;
    let second_site = app.site("acme-docs", f.scope.tenant, &[]).await;
    app.fixture("globex", &[]).await;
    app.operator(&f, "agent@acme.example.com", Role::Agent, &[f.scope.site]).await;
    app.operator(&f, "elsewhere@acme.example.com", Role::Agent, &[second_site.scope.site]).await;
    let admin = app.login("admin@acme.example.com").await;
    let globex = app.login("admin@globex.example.com").await;
    let (_, personal) = app.authed(Method::POST, "/api/admin/tokens", &admin, Some(json!({"name": "phone", "expires_in_days": 1}))).await;
    let personal = personal["token"]["access_token"].as_str().unwrap().to_owned();
    let (_, made) = create(&app, &admin, json!({"shortcut": "thanks", "body": "Thank you"})).await;
    let id = made["canned_response"]["id"].as_i64().unwrap();
    let before = list(&app, &admin).await;

    assert_eq!(list(&app, &globex).await, json!([]), "another tenant's are not listed");
    let (status, _) = create(&app, &globex, json!({"shortcut": "thanks", "body": "Globex thanks"})).await;
    assert_eq!(status, StatusCode::CREATED, "a shortcut is one per tenant, not one in all");
    let path = format!("/api/admin/canned-responses/{id}");
    let (status, body) = app.authed(Method::PATCH, &path, &globex, Some(json!({"body": "mine now"}))).await;
    assert_error(status, &body, StatusCode::NOT_FOUND, "not_found");
    let (status, body) = app.authed(Method::DELETE, &path, &globex, None).await;
    assert_error(status, &body, StatusCode::NOT_FOUND, "not_found");

    for (who, token) in [
        ("an agent of the site", app.login("agent@acme.example.com").await),
        ("an agent without the site", app.login("elsewhere@acme.example.com").await),
        ("an admin's personal token", personal),
    ] {
        assert_eq!(list(&app, &token).await, before, "{who} reads them");
        for (method, path, body) in [
            (Method::POST, "/api/admin/canned-responses".to_owned(), Some(json!({"shortcut": "x", "body": "y"}))),
            (Method::PATCH, path.clone(), Some(json!({"body": "changed"}))),
            (Method::DELETE, path.clone(), None),
        ] {
            let (status, answer) = app.authed(method.clone(), &path, &token, body).await;
            assert_error(status, &answer, StatusCode::FORBIDDEN, "forbidden");
        }
    }
    for (method, path) in [(Method::GET, "/api/mobile/canned-responses".to_owned()), (Method::DELETE, path.clone())] {
        let (status, body) = app.send(method, &path, None, &[]).await;
        assert_error(status, &body, StatusCode::UNAUTHORIZED, "unauthenticated");
    }
    assert_eq!(list(&app, &admin).await, before, "nothing changed");
    app.stop().await;
}

#[tokio::test]
async fn a_tenant_keeps_at_most_five_hundred() {
    let app = TestApp::spawn().await;
    app.fixture("acme", &[]).await;
    let admin = app.login("admin@acme.example.com").await;
    for i in 0..500 {
        let (status, body) = create(&app, &admin, json!({"shortcut": format!("r{i}"), "body": "text"})).await;
        assert_eq!(status, StatusCode::CREATED, "{i}: {body}");
    }
    let (status, body) = create(&app, &admin, json!({"shortcut": "one-more", "body": "text"})).await;
    assert_error(status, &body, StatusCode::CONFLICT, "conflict");
    assert_eq!(list(&app, &admin).await.as_array().unwrap().len(), 500);
    app.stop().await;
}
