//! Reading and setting the web app's cookies.

use std::time::Duration;

use axum::http::{HeaderMap, HeaderValue, header};

/// The session token.
pub const SESSION: &str = "parley_session";
/// The sign-in form's anti-forgery token, before there is a session.
pub const LOGIN_CSRF: &str = "parley_login_csrf";
/// The browser's device mark, left by a successful sign-in and kept
/// across sign-outs (see `parley_domain::auth`).
pub const DEVICE: &str = "parley_device";

/// The value of cookie `name`, from every `Cookie` header.
pub fn read<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v)
}

/// A `Set-Cookie` value: HttpOnly, SameSite=Lax, for `/app` only. Values
/// are tokens of URL-safe characters, never quoted or escaped.
pub fn set(name: &str, value: &str, max_age: Duration, secure: bool) -> HeaderValue {
    let secure = if secure { "; Secure" } else { "" };
    let cookie = format!("{name}={value}; Path=/app; Max-Age={}; HttpOnly; SameSite=Lax{secure}", max_age.as_secs());
    HeaderValue::from_str(&cookie).unwrap_or_else(|_| HeaderValue::from_static(""))
}

/// Removes cookie `name` from the browser.
pub fn clear(name: &str, secure: bool) -> HeaderValue {
    set(name, "", Duration::ZERO, secure)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cookie_is_found_among_others_and_across_headers() {
        let mut headers = HeaderMap::new();
        headers.append(header::COOKIE, HeaderValue::from_static("a=1; parley_session=ses_x"));
        headers.append(header::COOKIE, HeaderValue::from_static("b=2"));
        assert_eq!(read(&headers, SESSION), Some("ses_x"));
        assert_eq!(read(&headers, "b"), Some("2"));
        assert_eq!(read(&headers, "parley"), None);
    }

    #[test]
    fn cookies_are_http_only_lax_and_secure_when_asked() {
        let plain = set(SESSION, "v", Duration::from_secs(60), false);
        assert_eq!(plain, "parley_session=v; Path=/app; Max-Age=60; HttpOnly; SameSite=Lax");
        assert!(set(SESSION, "v", Duration::from_secs(60), true).to_str().unwrap().ends_with("; Secure"));
        assert!(clear(SESSION, false).to_str().unwrap().contains("Max-Age=0"));
    }
}
