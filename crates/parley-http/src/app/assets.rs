//! The web app's stylesheet and script, compiled into the binary.
//!
//! Pages link them with their version in the address (`?v=`), so a
//! browser keeps them for good and a new release's pages fetch the new
//! files at once: an old script never runs against a new page's markup.

use axum::extract::RawQuery;
use axum::http::HeaderMap;
use axum::response::Response;

use crate::static_file::StaticFile;

static STYLESHEET: StaticFile = StaticFile::new(include_bytes!("../../assets/app.css"), "text/css; charset=utf-8");
/// The module that keeps the inbox and the conversation page live.
static LIVE_SCRIPT: StaticFile = StaticFile::new(include_bytes!("../../assets/live.js"), "text/javascript; charset=utf-8");

/// The integrations pages' copy buttons.
static INTEGRATIONS_SCRIPT: StaticFile = StaticFile::new(include_bytes!("../../assets/integrations.js"), "text/javascript; charset=utf-8");

/// The *Enable notifications* control.
static PUSH_SCRIPT: StaticFile = StaticFile::new(include_bytes!("../../assets/push.js"), "text/javascript; charset=utf-8");

/// The icon browsers ask every page of the service for.
static FAVICON: StaticFile = StaticFile::new(include_bytes!("../../assets/favicon.ico"), "image/x-icon");

/// `GET /favicon.ico`: its address is fixed, so it is checked again each
/// day rather than kept for good.
pub async fn favicon(headers: HeaderMap) -> Response {
    FAVICON.respond(&headers, "public, max-age=86400")
}

pub fn push_script_url() -> String {
    format!("/app/assets/push.js?v={}", PUSH_SCRIPT.version())
}

pub async fn push_script(headers: HeaderMap, RawQuery(query): RawQuery) -> Response {
    serve(&PUSH_SCRIPT, &headers, query.as_deref())
}

pub fn integrations_script_url() -> String {
    format!("/app/assets/integrations.js?v={}", INTEGRATIONS_SCRIPT.version())
}

pub async fn integrations_script(headers: HeaderMap, RawQuery(query): RawQuery) -> Response {
    serve(&INTEGRATIONS_SCRIPT, &headers, query.as_deref())
}

pub fn stylesheet_url() -> String {
    format!("/app/assets/app.css?v={}", STYLESHEET.version())
}

pub fn live_script_url() -> String {
    format!("/app/assets/live.js?v={}", LIVE_SCRIPT.version())
}

pub async fn stylesheet(headers: HeaderMap, RawQuery(query): RawQuery) -> Response {
    serve(&STYLESHEET, &headers, query.as_deref())
}

pub async fn live_script(headers: HeaderMap, RawQuery(query): RawQuery) -> Response {
    serve(&LIVE_SCRIPT, &headers, query.as_deref())
}

/// Kept for good when asked for by this version; otherwise (an old
/// page's address, or none) checked with the server every time.
fn serve(file: &StaticFile, headers: &HeaderMap, query: Option<&str>) -> Response {
    let versioned = query.and_then(|q| q.strip_prefix("v=")) == Some(file.version());
    let cache = if versioned { "public, max-age=31536000, immutable" } else { "no-cache" };
    file.respond(headers, cache)
}
