use reqwest::StatusCode;

use crate::helpers::*;

#[tokio::test]
async fn demo_serves_credentials_that_work() {
    let app = TestApp::with().demo().start().await;
    let (status, creds) = app.get("/sandbox/credentials").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(creds["api_base"], app.base.as_str());
    let token = creds["widget_token"].as_str().unwrap();
    assert!(creds["mobile_token"].as_str().unwrap().len() >= 43, "256-bit bearer token");
    let operators = creds["operators"].as_array().unwrap();
    let roles: Vec<&str> = operators.iter().map(|o| o["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["admin", "agent"]);
    assert!(operators.iter().all(|o| o["email"].is_string() && o["password"].is_string()));

    let (status, config) = app.get(&format!("/api/v1/widget/config/{token}")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(config["tenant"]["slug"], "sandbox");
    assert_eq!(config["site"]["domains"], serde_json::json!(["localhost", "127.0.0.1"]));

    let public_id = app.open_conversation("/api", token, "demo-visitor", "hello sandbox").await;
    assert!(public_id.starts_with("conv_"));
}

#[tokio::test]
async fn the_sandbox_page_shows_credentials_and_the_embed_snippet() {
    let app = TestApp::with().demo().start().await;
    let (_, creds) = app.get("/sandbox/credentials").await;
    let res = app.client.get(app.url("/sandbox")).send().await.unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    assert!(res.headers()["content-type"].to_str().unwrap().starts_with("text/html"));
    let html = res.text().await.unwrap();
    for key in ["widget_token", "mobile_token", "api_base"] {
        assert!(html.contains(creds[key].as_str().unwrap()), "{key} shown");
    }
    assert!(html.contains("admin@sandbox.parley.test"));
    assert!(html.contains("<a id=\"web-app\" href=\"/app\">"), "the operators' web app is linked");
    let mut admin = crate::web_browser::Browser::new(&app);
    let signed_in = admin.sign_in("admin@sandbox.parley.test", creds["operators"][0]["password"].as_str().unwrap()).await;
    assert_eq!(signed_in.location.as_deref(), Some("/app"), "a demo login opens the web app");
    let snippet = format!(
        "&lt;script async src=&quot;{base}/widget.js&quot; data-api-base=&quot;{base}&quot; data-installation-token=&quot;{token}&quot;&gt;&lt;/script&gt;",
        base = app.base,
        token = creds["widget_token"].as_str().unwrap()
    );
    assert!(html.contains(&snippet), "embed snippet shown as text");
    // One main landmark, and tables that scroll in their own box on a
    // phone, a box the keyboard can reach.
    assert_eq!(html.matches("<main>").count(), 1);
    assert_eq!(html.matches("<div class=\"scroll\" tabindex=\"0\" role=\"region\"").count(), html.matches("<table").count());
}

#[tokio::test]
async fn seeding_twice_keeps_the_widget_token_and_issues_a_new_mobile_token() {
    let dir = tempfile::tempdir().unwrap();
    let (url, _database) = fresh_database(dir.path(), "demo.sqlite3").await;
    let first = TestApp::with().demo().var("PARLEY_DATABASE_URL", &url).start().await;
    let (_, a) = first.get("/sandbox/credentials").await;
    first.stop().await;
    let second = TestApp::with().demo().var("PARLEY_DATABASE_URL", &url).start().await;
    let (_, b) = second.get("/sandbox/credentials").await;
    assert_eq!(a["widget_token"], b["widget_token"]);
    assert_ne!(a["mobile_token"], b["mobile_token"]);
}

#[tokio::test]
async fn openapi_lists_the_sandbox_in_demo_mode() {
    let app = TestApp::with().demo().start().await;
    let (_, doc) = app.get("/openapi.json").await;
    assert!(doc["paths"]["/sandbox/credentials"]["get"].is_object());
}

/// In the demo, unconfigured channels go to the outbox that the sandbox
/// shows, so the whole verification flow works without a mail server.
#[tokio::test]
async fn the_demo_keeps_verification_messages_in_the_outbox() {
    let app = TestApp::with().demo().start().await;
    let (_, creds) = app.get("/sandbox/credentials").await;
    let token = creds["widget_token"].as_str().unwrap().to_owned();
    let (_, config) = app.get(&format!("/api/widget/config/{token}")).await;
    assert_eq!(config["installation"]["verification_methods"], serde_json::json!(["email_otp", "sms_otp", "magic_link"]));
    let public_id = app.open_conversation("/api", &token, "demo-visitor", "hi").await;
    let path = format!("/api/widget/conversations/{public_id}/verification/start");
    let (status, started) = app.post(&path, serde_json::json!({"token": token, "method": "email_otp", "target": "me@example.com"})).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{started}");
    let (status, sms) = app.post(&path, serde_json::json!({"token": token, "method": "sms_otp", "target": "+14155550123"})).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{sms}");

    let (_, outbox) = app.get("/sandbox/outbox").await;
    let messages = outbox["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 2);
    assert_eq!((messages[0]["channel"].as_str(), messages[0]["to"].as_str()), (Some("sms"), Some("+14155550123")));
    assert_eq!((messages[1]["channel"].as_str(), messages[1]["to"].as_str()), (Some("email"), Some("me@example.com")));
    let body = messages[1]["body"].as_str().unwrap();
    let at = body.find("code is ").unwrap() + 8;
    let code = &body[at..at + 6];
    let confirm = format!("/api/widget/conversations/{public_id}/verification/confirm");
    let id = started["challenge"]["id"].as_i64().unwrap();
    let (status, _) = app.post(&confirm, serde_json::json!({"token": token, "challenge_id": id, "code": code})).await;
    assert_eq!(status, StatusCode::GONE, "the SMS start superseded the email challenge");
    let sms_code = &messages[0]["body"].as_str().unwrap()[..6];
    let sms_id = sms["challenge"]["id"].as_i64().unwrap();
    let (status, body) = app.post(&confirm, serde_json::json!({"token": token, "challenge_id": sms_id, "code": sms_code})).await;
    assert_eq!(status, StatusCode::OK, "{body}");

    let html = app.client.get(app.url("/sandbox")).send().await.unwrap().text().await.unwrap();
    assert!(html.contains("me@example.com") && html.contains(sms_code), "the page shows the outbox");
}

#[tokio::test]
async fn the_sandbox_embeds_the_widget_and_shows_deliveries_to_its_own_receiver() {
    let app = TestApp::with().demo().var("PARLEY_WEBHOOK_POLL_INTERVAL", "20ms").start().await;
    let (_, creds) = app.get("/sandbox/credentials").await;
    let token = creds["widget_token"].as_str().unwrap().to_owned();
    let html = app.client.get(app.url("/sandbox")).send().await.unwrap().text().await.unwrap();
    let live = format!(
        r#"<script async src="{base}/widget.js" data-api-base="{base}" data-installation-token="{token}"></script>"#,
        base = app.base
    );
    assert!(html.contains(&live), "the page embeds the widget as a partner would");

    app.open_conversation("/api", &token, "demo-visitor", "hi").await;
    let deliveries = eventually(|| async {
        let (_, body) = app.get("/sandbox/deliveries").await;
        let list = body["deliveries"].as_array().unwrap().clone();
        (list.len() == 2 && list.iter().all(|d| d["status"] == "delivered")).then_some(list)
    })
    .await;
    let mut events: Vec<&str> = deliveries.iter().map(|d| d["event"].as_str().unwrap()).collect();
    events.sort_unstable();
    assert_eq!(events, ["conversation.created", "message.created"]);
    assert_eq!(deliveries[0]["last_status_code"], 204);
    let html = app.client.get(app.url("/sandbox")).send().await.unwrap().text().await.unwrap();
    assert!(html.contains("conversation.created"), "the page lists them");
}

/// Every HTML page gets a strict content security policy (scripts from this
/// service only, never inline), no framing, a same-origin referrer and
/// `nosniff`; and none of them carries an inline script.
#[tokio::test]
async fn html_pages_send_security_headers_and_no_inline_script() {
    let app = TestApp::with().demo().start().await;
    for path in ["/sandbox", "/verify/1?code=abc", "/verify/not-a-number"] {
        let res = app.client.get(app.url(path)).send().await.unwrap();
        let headers = res.headers().clone();
        let policy = headers.get("content-security-policy").map(|v| v.to_str().unwrap().to_owned()).unwrap_or_default();
        let script_src = policy.split(';').map(str::trim).find(|d| d.starts_with("script-src")).unwrap_or_default().to_owned();
        assert!(script_src.starts_with("script-src 'self'") && !script_src.contains("unsafe"), "{path}: {policy}");
        assert!(policy.contains("frame-ancestors 'none'") && policy.contains("default-src 'none'"), "{path}: {policy}");
        assert_eq!(headers["x-content-type-options"], "nosniff", "{path}");
        assert_eq!(headers["referrer-policy"], "same-origin", "{path}");
        let html = res.text().await.unwrap();
        for tag in html.match_indices("<script").map(|(i, _)| &html[i..html[i..].find('>').map_or(html.len(), |e| i + e)]) {
            assert!(tag.contains(" src="), "{path} has an inline script: {tag}");
        }
    }
    let res = app.client.get(app.url("/api/v1/health")).send().await.unwrap();
    assert_eq!(res.headers()["x-content-type-options"], "nosniff", "JSON answers are not sniffed either");
    assert!(res.headers().get("content-security-policy").is_none());
}

/// The sandbox hands out the demo admin's bearer token: no page of another
/// site may read it (CORS is not granted there), while the API keeps it.
#[tokio::test]
async fn other_sites_cannot_read_the_sandbox() {
    let app = TestApp::with().demo().start().await;
    for path in ["/sandbox/credentials", "/sandbox/outbox", "/sandbox"] {
        let res = app.client.get(app.url(path)).header("origin", "https://evil.example").send().await.unwrap();
        assert_eq!(res.status(), StatusCode::OK);
        assert!(res.headers().get("access-control-allow-origin").is_none(), "{path}");
        let preflight = app
            .client
            .request(reqwest::Method::OPTIONS, app.url(path))
            .header("origin", "https://evil.example")
            .header("access-control-request-method", "GET")
            .header("access-control-request-headers", "authorization")
            .send()
            .await
            .unwrap();
        assert!(preflight.headers().get("access-control-allow-origin").is_none(), "{path}");
    }
    let res = app.client.get(app.url("/api/v1/health")).header("origin", "https://evil.example").send().await.unwrap();
    assert_eq!(res.headers()["access-control-allow-origin"], "https://evil.example", "the API keeps CORS");
}
