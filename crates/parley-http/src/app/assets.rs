//! The web app's static files, compiled into the binary.

use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};

const STYLESHEET: &str = include_str!("../../assets/app.css");
const LIVE_SCRIPT: &str = include_str!("../../assets/live.js");

pub async fn stylesheet() -> Response {
    asset(STYLESHEET, "text/css; charset=utf-8")
}

/// The module that keeps the inbox and the conversation page live.
pub async fn live_script() -> Response {
    asset(LIVE_SCRIPT, "text/javascript; charset=utf-8")
}

fn asset(body: &'static str, content_type: &'static str) -> Response {
    let mut response = body.into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    // Small and changed only by a release; a day keeps pages fast without
    // holding an old release's look for long.
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("public, max-age=86400"));
    response
}
