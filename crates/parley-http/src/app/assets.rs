//! The web app's static files, compiled into the binary.

use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};

const STYLESHEET: &str = include_str!("../../assets/app.css");

pub async fn stylesheet() -> Response {
    let mut response = STYLESHEET.into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/css; charset=utf-8"));
    // Small and changed only by a release; a day keeps pages fast without
    // holding an old release's look for long.
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("public, max-age=86400"));
    response
}
