use reqwest::{Method, StatusCode};
use serde_json::json;

use crate::helpers::*;

#[tokio::test]
async fn an_admin_sets_up_a_site_an_installation_and_an_agent_through_the_api() {
    let app = TestApp::spawn().await;
    app.fixture("acme", &[]).await;
    let admin = app.login("admin@acme.example.com").await;
    for (n, prefix) in PREFIXES.into_iter().enumerate() {
        let (status, body) = app
            .authed(
                Method::POST,
                &format!("{prefix}/admin/sites"),
                &admin,
                Some(json!({"name": format!("Shop {n}"), "domains": ["Shop.Example", "shop.example"], "accent_color": "#AA0000",
                            "privacy_url": "https://shop.example/privacy"})),
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        let site = &body["site"];
        assert_eq!(site["domains"], json!(["shop.example"]), "lower-cased and deduplicated");
        assert_eq!(site["widget"]["accent_color"], "#aa0000");
        assert_eq!(site["widget"]["title"], format!("Shop {n}"));
        let site_id = site["id"].as_i64().unwrap();

        let (status, body) = app
            .authed(
                Method::POST,
                &format!("{prefix}/admin/sites/{site_id}/installations"),
                &admin,
                Some(json!({"name": "Checkout", "installation_type": "web"})),
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        let token = body["installation"]["token"].as_str().unwrap().to_owned();
        assert_eq!(body["installation"]["status"], "pending");
        assert_eq!(body["installation"]["site_id"], site_id);
        let snippet = body["embed_snippet"].as_str().unwrap();
        assert_eq!(
            snippet,
            format!(
                r#"<script async src="{base}/widget.js" data-api-base="{base}" data-installation-token="{token}"></script>"#,
                base = app.base
            )
        );
        let (status, config) = app.get(&format!("{prefix}/widget/config/{token}")).await;
        assert_eq!(status, StatusCode::OK, "the new token works at once");
        assert_eq!(config["site"]["name"], format!("Shop {n}"));

        assert_eq!(body["installation"]["embed_snippet"], snippet);
        assert_eq!(
            body["installation"]["warnings"][0],
            "No heartbeat received yet: check that the embed snippet is on your pages and that the page has loaded it."
        );

        // The list tells what the web app's integrations page shows.
        app.post(
            &format!("{prefix}/widget/ping"),
            json!({"token": token, "version": "1.0.0", "current_url": "https://elsewhere.example/"}),
        )
        .await;
        let (_, list) = app.authed(Method::GET, &format!("{prefix}/admin/sites/{site_id}/installations"), &admin, None).await;
        assert_eq!(list["installations"].as_array().unwrap().len(), 1);
        let listed = &list["installations"][0];
        assert_eq!(
            (listed["status"].as_str(), listed["page_host"].as_str(), listed["widget_version"].as_str()),
            (Some("healthy"), Some("elsewhere.example"), Some("1.0.0"))
        );
        assert_eq!(listed["embed_snippet"], snippet);
        assert!(
            listed["warnings"][0].as_str().unwrap().starts_with("The page host elsewhere.example is not among the site's domains"),
            "{listed}"
        );

        let email = format!("agent{n}@acme.example");
        let (status, body) = app
            .authed(
                Method::POST,
                &format!("{prefix}/admin/operators"),
                &admin,
                Some(json!({"email": email, "name": "Agent", "password": "agent password 1", "role": "agent", "site_ids": [site_id]})),
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        assert_eq!(body["operator"]["role"], "agent");
        assert_eq!(body["operator"]["site_ids"], json!([site_id]));
        assert!(!body.to_string().contains("agent password 1"), "passwords never come back");
        let (status, _) = app.post("/api/mobile/login", json!({"email": email, "password": "agent password 1"})).await;
        assert_eq!(status, StatusCode::OK);
    }
    let (_, sites) = app.authed(Method::GET, "/api/admin/sites", &admin, None).await;
    assert_eq!(sites["sites"].as_array().unwrap().len(), 3);
    let (_, ops) = app.authed(Method::GET, "/api/admin/operators", &admin, None).await;
    assert_eq!(ops["operators"].as_array().unwrap().len(), 3);
}

#[tokio::test]
async fn admin_inputs_are_validated() {
    let app = TestApp::spawn().await;
    let f = app.fixture("acme", &[]).await;
    let admin = app.login("admin@acme.example.com").await;
    let site = f.scope.site.0;
    for prefix in PREFIXES {
        let (status, body) = app.authed(Method::POST, &format!("{prefix}/admin/sites"), &admin, Some(json!({}))).await;
        assert_fields(status, &body, &["name"]);
        let (status, body) = app
            .authed(
                Method::POST,
                &format!("{prefix}/admin/sites"),
                &admin,
                Some(json!({"name": " ", "domains": ["ok.example", "bad domain", 7], "accent_color": "blue", "privacy_url": "nope"})),
            )
            .await;
        assert_fields(status, &body, &["accent_color", "domains", "name", "privacy_url"]);
        assert_eq!(body["error"]["fields"]["domains"].as_array().unwrap().len(), 2, "each bad item is named");

        let (status, body) =
            app.authed(Method::POST, &format!("{prefix}/admin/sites/{site}/installations"), &admin, Some(json!({"name": 5}))).await;
        assert_fields(status, &body, &["name"]);
        let (status, body) = app.authed(Method::POST, &format!("{prefix}/admin/sites/999/installations"), &admin, Some(json!({}))).await;
        assert_error(status, &body, StatusCode::NOT_FOUND, "not_found");
        let (status, body) = app.authed(Method::PATCH, &format!("{prefix}/admin/installations/1"), &admin, Some(json!({}))).await;
        assert_fields(status, &body, &["enabled"]);
        let (status, body) =
            app.authed(Method::PATCH, &format!("{prefix}/admin/installations/999"), &admin, Some(json!({"enabled": true}))).await;
        assert_error(status, &body, StatusCode::NOT_FOUND, "not_found");

        let (status, body) = app.authed(Method::POST, &format!("{prefix}/admin/operators"), &admin, Some(json!({}))).await;
        assert_fields(status, &body, &["email", "name", "password", "role"]);
        let (status, body) = app
            .authed(
                Method::POST,
                &format!("{prefix}/admin/operators"),
                &admin,
                Some(json!({"email": "x", "name": "X", "password": "short", "role": "owner", "site_ids": [0, "a"]})),
            )
            .await;
        assert_fields(status, &body, &["email", "password", "role", "site_ids"]);
        let (status, body) = app
            .authed(
                Method::POST,
                &format!("{prefix}/admin/operators"),
                &admin,
                Some(json!({"email": "ADMIN@acme.example.com", "name": "Dup", "password": PASSWORD, "role": "agent"})),
            )
            .await;
        assert_fields(status, &body, &["email"]);
        let (status, body) = app
            .authed(
                Method::POST,
                &format!("{prefix}/admin/operators"),
                &admin,
                Some(json!({"email": "new@acme.example", "name": "N", "password": PASSWORD, "role": "agent", "site_ids": [424242]})),
            )
            .await;
        assert_fields(status, &body, &["site_ids"]);
    }
}

#[tokio::test]
async fn an_admin_cannot_lock_itself_out() {
    let app = TestApp::spawn().await;
    app.fixture("acme", &[]).await;
    let admin = app.login("admin@acme.example.com").await;
    let (_, me) = app.authed(Method::GET, "/api/mobile/me", &admin, None).await;
    let id = me["user"]["id"].as_i64().unwrap();
    let (status, body) =
        app.authed(Method::PATCH, &format!("/api/admin/operators/{id}"), &admin, Some(json!({"active": false, "role": "agent"}))).await;
    assert_fields(status, &body, &["active", "role"]);
    let (status, body) = app.authed(Method::PATCH, &format!("/api/admin/operators/{id}"), &admin, Some(json!({"name": "Boss"}))).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["operator"]["name"], "Boss");
}

#[tokio::test]
async fn disabling_an_installation_refuses_new_visitors_and_conversations() {
    let app = TestApp::spawn().await;
    let f = app.fixture("acme", &[]).await;
    let admin = app.login("admin@acme.example.com").await;
    let (_, list) = app.authed(Method::GET, &format!("/api/admin/sites/{}/installations", f.scope.site.0), &admin, None).await;
    let id = list["installations"][0]["id"].as_i64().unwrap();
    let public_id = app.open_conversation("/api", &f.token, "early", "before").await;
    let events = app.events("acme").await.len();

    let (status, body) =
        app.authed(Method::PATCH, &format!("/api/v1/admin/installations/{id}"), &admin, Some(json!({"enabled": false}))).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["installation"]["status"], "disabled");
    assert_eq!(body["installation"]["enabled"], false);
    assert_eq!(app.events("acme").await.len(), events + 1, "installation.health.changed");
    let (status, _) =
        app.authed(Method::PATCH, &format!("/api/v1/admin/installations/{id}"), &admin, Some(json!({"enabled": false}))).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(app.events("acme").await.len(), events + 1, "no change, no event");

    for prefix in PREFIXES {
        let (status, body) = app.post(&format!("{prefix}/widget/visitors"), json!({"token": f.token, "uuid": "late"})).await;
        assert_error(status, &body, StatusCode::FORBIDDEN, "forbidden");
        let (status, body) = app
            .post(
                &format!("{prefix}/widget/conversations"),
                json!({"token": f.token, "visitor_uuid": "late", "message": "hi", "privacy_accepted": true}),
            )
            .await;
        assert_error(status, &body, StatusCode::FORBIDDEN, "forbidden");
        let (status, health) = app.get(&format!("{prefix}/widget/installations/{}/health", f.token)).await;
        assert_eq!(status, StatusCode::OK, "health still answers");
        assert_eq!(health["installation"]["status"], "disabled");
        assert!(health["warnings"].to_string().contains("disabled"));
    }
    let (status, _) = app.post_message("/api", &f.token, &public_id, "still here").await;
    assert_eq!(status, StatusCode::CREATED, "existing conversations go on");

    app.authed(Method::PATCH, &format!("/api/admin/installations/{id}"), &admin, Some(json!({"enabled": true}))).await;
    let (status, _) = app.post("/api/widget/visitors", json!({"token": f.token, "uuid": "late"})).await;
    assert_eq!(status, StatusCode::CREATED);
}
