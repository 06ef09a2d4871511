use reqwest::{Method, StatusCode};
use serde_json::Value;

use crate::helpers::*;

const POST_ROUTES: [&str; 4] = ["/widget/ping", "/widget/visitors", "/widget/conversations", "/widget/conversations/conv_x/messages"];

async fn raw(app: &TestApp, path: &str, content_type: Option<&str>, body: Vec<u8>) -> (StatusCode, Value) {
    let mut req = app.client.post(app.url(path)).body(body);
    if let Some(ct) = content_type {
        req = req.header("content-type", ct);
    }
    let res = req.send().await.unwrap();
    let status = res.status();
    (status, res.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn malformed_json_is_400() {
    let app = TestApp::spawn().await;
    for prefix in PREFIXES {
        for route in POST_ROUTES {
            let path = format!("{prefix}{route}");
            for body in ["{", "{\"token\": }", "", "[1,2]", "\"text\"", "null"] {
                let (status, res) = raw(&app, &path, Some("application/json"), body.into()).await;
                assert_error(status, &res, StatusCode::BAD_REQUEST, "malformed_json");
            }
        }
    }
}

#[tokio::test]
async fn other_content_types_are_415() {
    let app = TestApp::spawn().await;
    for prefix in PREFIXES {
        for route in POST_ROUTES {
            let path = format!("{prefix}{route}");
            for ct in [None, Some("text/plain"), Some("application/x-www-form-urlencoded"), Some("multipart/form-data")] {
                let (status, res) = raw(&app, &path, ct, b"{}".to_vec()).await;
                assert_error(status, &res, StatusCode::UNSUPPORTED_MEDIA_TYPE, "unsupported_media_type");
            }
            let (status, _) = raw(&app, &path, Some("application/json; charset=utf-8"), b"{}".to_vec()).await;
            assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "a charset parameter is fine");
        }
    }
}

#[tokio::test]
async fn bodies_over_64_kib_are_413() {
    let app = TestApp::spawn().await;
    let big = format!("{{\"token\": \"{}\"}}", "x".repeat(64 * 1024));
    for prefix in PREFIXES {
        for route in POST_ROUTES {
            let (status, res) = raw(&app, &format!("{prefix}{route}"), Some("application/json"), big.clone().into_bytes()).await;
            assert_error(status, &res, StatusCode::PAYLOAD_TOO_LARGE, "payload_too_large");
        }
    }
}

#[tokio::test]
async fn unknown_routes_and_methods_get_json_errors() {
    let app = TestApp::spawn().await;
    let (status, body) = app.get("/api/v1/nothing-here").await;
    assert_error(status, &body, StatusCode::NOT_FOUND, "not_found");
    for prefix in PREFIXES {
        let (status, body) = app.send(Method::DELETE, &format!("{prefix}/widget/ping"), None, &[]).await;
        assert_error(status, &body, StatusCode::METHOD_NOT_ALLOWED, "method_not_allowed");
        let (status, body) = app.send(Method::POST, &format!("{prefix}/widget/config/abc"), None, &[]).await;
        assert_error(status, &body, StatusCode::METHOD_NOT_ALLOWED, "method_not_allowed");
    }
}

#[tokio::test]
async fn a_serve_instance_has_no_sandbox() {
    let app = TestApp::spawn().await;
    for path in ["/sandbox", "/sandbox/credentials"] {
        let (status, body) = app.get(path).await;
        assert_error(status, &body, StatusCode::NOT_FOUND, "not_found");
    }
}
