use reqwest::{Method, StatusCode};

use crate::helpers::*;

#[tokio::test]
async fn config_describes_tenant_site_and_installation() {
    let app = TestApp::spawn().await;
    let f = app.fixture("acme", &["acme.example"]).await;
    for prefix in PREFIXES {
        let (status, body) = app.get(&format!("{prefix}/widget/config/{}", f.token)).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(body["tenant"]["slug"], "acme");
        assert_eq!(body["tenant"]["name"], "acme Inc.");
        assert_eq!(body["site"]["name"], "acme site");
        assert_eq!(body["site"]["domains"], serde_json::json!(["acme.example"]));
        assert_eq!(body["site"]["widget"]["accent_color"], "#0f766e");
        assert_eq!(body["site"]["widget"]["privacy_url"], "https://example.com/privacy");
        assert_eq!(body["installation"]["name"], "Main website");
        assert_eq!(body["installation"]["status"], "pending");
        assert_eq!(body["installation"]["enabled"], true);
        assert!(body["installation"]["verification_methods"].is_array());
    }
}

#[tokio::test]
async fn unknown_tokens_are_404() {
    let app = TestApp::spawn().await;
    for prefix in PREFIXES {
        let (status, body) = app.get(&format!("{prefix}/widget/config/inst_doesnotexist")).await;
        assert_error(status, &body, StatusCode::NOT_FOUND, "not_found");
    }
}

#[tokio::test]
async fn origin_must_be_a_site_domain_or_subdomain() {
    let app = TestApp::spawn().await;
    let f = app.fixture("acme", &["acme.example"]).await;
    for prefix in PREFIXES {
        let path = format!("{prefix}/widget/config/{}", f.token);
        for ok in ["https://acme.example", "https://www.acme.example:8443", "http://shop.eu.acme.example"] {
            let (status, body) = app.send(Method::GET, &path, None, &[("origin", ok)]).await;
            assert_eq!(status, StatusCode::OK, "{ok}: {body}");
        }
        for bad in ["https://evil.example", "https://notacme.example", "https://acme.example.evil.net", "null"] {
            let (status, body) = app.send(Method::GET, &path, None, &[("origin", bad)]).await;
            assert_error(status, &body, StatusCode::FORBIDDEN, "origin_not_allowed");
        }
    }
}

#[tokio::test]
async fn a_site_without_domains_accepts_any_origin() {
    let app = TestApp::spawn().await;
    let f = app.fixture("acme", &[]).await;
    let (status, _) = app.send(Method::GET, &format!("/api/widget/config/{}", f.token), None, &[("origin", "https://anything.test")]).await;
    assert_eq!(status, StatusCode::OK);
}

#[tokio::test]
async fn widget_routes_answer_cors_preflights_and_carry_cors_headers() {
    let app = TestApp::spawn().await;
    let f = app.fixture("acme", &["acme.example"]).await;
    for prefix in PREFIXES {
        for path in [
            format!("{prefix}/widget/ping"),
            format!("{prefix}/widget/visitors"),
            format!("{prefix}/widget/conversations"),
            format!("{prefix}/widget/conversations/conv_x/messages"),
        ] {
            let res = app
                .client
                .request(Method::OPTIONS, app.url(&path))
                .header("origin", "https://www.acme.example")
                .header("access-control-request-method", "POST")
                .header("access-control-request-headers", "content-type")
                .send()
                .await
                .unwrap();
            assert!(res.status().is_success(), "{path}: {}", res.status());
            let h = res.headers();
            assert_eq!(h["access-control-allow-origin"], "https://www.acme.example");
            assert!(h["access-control-allow-methods"].to_str().unwrap().contains("POST"));
            assert!(h["access-control-allow-headers"].to_str().unwrap().to_lowercase().contains("content-type"));
        }
        let res = app
            .client
            .get(app.url(&format!("{prefix}/widget/config/{}", f.token)))
            .header("origin", "https://acme.example")
            .send()
            .await
            .unwrap();
        assert_eq!(res.headers()["access-control-allow-origin"], "https://acme.example");
        // Refusals carry CORS headers too, so the widget can read the reason.
        let res = app
            .client
            .get(app.url(&format!("{prefix}/widget/config/{}", f.token)))
            .header("origin", "https://evil.example")
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::FORBIDDEN);
        assert_eq!(res.headers()["access-control-allow-origin"], "https://evil.example");
    }
}

#[tokio::test]
async fn installation_health_reports_widget_state_and_warnings() {
    let app = TestApp::spawn().await;
    let f = app.fixture("acme", &["acme.example"]).await;
    for prefix in PREFIXES {
        let path = format!("{prefix}/widget/installations/{}/health", f.token);
        let (status, body) = app.get(&path).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        for key in ["tenant", "site", "installation", "widget", "warnings"] {
            assert!(body.get(key).is_some(), "{key} missing: {body}");
        }
        let warnings = body["warnings"].as_array().unwrap();
        assert!(warnings.iter().any(|w| w.as_str().unwrap().contains("No heartbeat")), "{body}");

        let (status, body) = app.get(&format!("{path}?current_url=https%3A%2F%2Fother.example%2Fpage")).await;
        assert_eq!(status, StatusCode::OK);
        assert!(body["warnings"].as_array().unwrap().iter().any(|w| w.as_str().unwrap().contains("other.example")), "{body}");

        let (status, body) = app.get(&format!("{path}?current_url=not-a-url")).await;
        assert_fields(status, &body, &["current_url"]);

        let (status, body) = app.get(&format!("{prefix}/widget/installations/inst_nope/health")).await;
        assert_error(status, &body, StatusCode::NOT_FOUND, "not_found");
    }
}

#[tokio::test]
async fn installation_health_answers_any_origin() {
    let app = TestApp::spawn().await;
    let f = app.fixture("acme", &["acme.example"]).await;
    let path = format!("/api/v1/widget/installations/{}/health", f.token);
    let (status, _) = app.send(Method::GET, &path, None, &[("origin", "https://evil.example")]).await;
    assert_eq!(status, StatusCode::OK);
}

#[tokio::test]
async fn preflights_allow_the_methods_of_the_admin_api() {
    let app = TestApp::spawn().await;
    for method in ["PATCH", "DELETE"] {
        let res = app
            .client
            .request(Method::OPTIONS, app.url("/api/v1/admin/installations/1"))
            .header("origin", "https://console.example")
            .header("access-control-request-method", method)
            .header("access-control-request-headers", "authorization, content-type")
            .send()
            .await
            .unwrap();
        assert!(res.status().is_success());
        let allowed = res.headers()["access-control-allow-methods"].to_str().unwrap().to_owned();
        assert!(allowed.contains(method), "{allowed}");
        assert!(res.headers()["access-control-allow-headers"].to_str().unwrap().contains("authorization"));
    }
}

#[tokio::test]
async fn the_widget_script_is_served_with_caching_headers() {
    let app = TestApp::spawn().await;
    let res = app.client.get(app.url("/widget.js")).header("origin", "https://shop.example").send().await.unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    assert_eq!(res.headers()["content-type"], "text/javascript; charset=utf-8");
    assert!(res.headers()["cache-control"].to_str().unwrap().contains("max-age"));
    assert_eq!(res.headers()["access-control-allow-origin"], "https://shop.example");
    let etag = res.headers()["etag"].to_str().unwrap().to_owned();
    let body = res.text().await.unwrap();
    assert!(body.contains("attachShadow") && body.contains("data-installation-token"));
    let again = app.client.get(app.url("/widget.js")).header("if-none-match", &etag).send().await.unwrap();
    assert_eq!(again.status(), StatusCode::NOT_MODIFIED);
    let other = app.client.get(app.url("/widget.js")).header("if-none-match", "\"something-else\"").send().await.unwrap();
    assert_eq!(other.status(), StatusCode::OK);

    // Gzipped for a browser that takes it, whole for one that does not.
    let gzipped = app.client.get(app.url("/widget.js")).header("accept-encoding", "gzip, deflate, br").send().await.unwrap();
    assert_eq!(gzipped.headers()["content-encoding"], "gzip");
    assert!(gzipped.headers()["vary"].to_str().unwrap().to_ascii_lowercase().contains("accept-encoding"));
    let packed = gzipped.bytes().await.unwrap().len();
    assert!(packed * 3 < body.len(), "{packed} bytes gzipped of {}", body.len());
    assert!(packed <= 25 * 1024, "the widget stays within 25 KB gzipped, its words come with the configuration: {packed} bytes");
    let again =
        app.client.get(app.url("/widget.js")).header("accept-encoding", "gzip").header("if-none-match", &etag).send().await.unwrap();
    assert_eq!(again.status(), StatusCode::NOT_MODIFIED, "the same version, however it is encoded");
}

#[tokio::test]
async fn the_page_api_types_are_served_beside_the_script() {
    let app = TestApp::spawn().await;
    let res = app.client.get(app.url("/widget.d.ts")).send().await.unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    assert_eq!(res.headers()["content-type"], "application/typescript; charset=utf-8");
    assert!(res.headers()["etag"].to_str().unwrap().starts_with('"'));
    let body = res.text().await.unwrap();
    for command in ["\"identify\"", "\"logout\"", "\"on\"", "unread: { count: number }", "interface Window"] {
        assert!(body.contains(command), "{command} is declared");
    }
}

#[tokio::test]
async fn every_word_the_widget_asks_for_comes_with_the_configuration() {
    let app = TestApp::spawn().await;
    let f = app.fixture("acme", &[]).await;
    let script = app.client.get(app.url("/widget.js")).send().await.unwrap().text().await.unwrap();
    let mut asked: Vec<&str> = script.split(".t(\"").skip(1).filter_map(|rest| rest.split('"').next()).collect();
    // Asked for by value: the verification methods and the codes of errors.
    asked.extend(["email_otp", "sms_otp", "magic_link", "invalid_code", "challenge_expired", "rate_limited"]);
    assert!(asked.len() > 30, "{asked:?}");
    for language in parley_domain::locale::LANGUAGES {
        let (_, config) = app.get(&format!("/api/v1/widget/config/{}?lang={language}", f.token)).await;
        assert_eq!(config["locale"], language);
        for key in &asked {
            assert!(config["strings"][key].is_string(), "{language} has {key}");
        }
    }
}
