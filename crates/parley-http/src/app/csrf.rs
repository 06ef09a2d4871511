//! Protection against cross-site request forgery on every form that
//! changes something.
//!
//! Two checks, both required. The form carries a token a page of another
//! site cannot know: derived from the session token (an HttpOnly cookie
//! no script reads) once signed in, and, on the sign-in form, a random
//! token that must equal a cookie set with the form. And the browser's
//! `Sec-Fetch-Site`, when it sends one, must say the request came from
//! this origin (or from the address bar); a browser too old to send it
//! must send no `Origin` or that of the address the request was sent to
//! (its `Host`, which a proxy passes on). `SameSite=Lax` cookies already
//! keep other sites' POSTs unauthenticated; these hold where it does not
//! (older browsers, a sibling subdomain).

use axum::http::{HeaderMap, header};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use parley_domain::DomainError;
use parley_domain::ids;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// The form field every state-changing form carries.
pub const FIELD: &str = "csrf";

/// The token of the forms of the session `session_token`.
pub fn session_token(session_token: &str) -> String {
    let digest = Sha256::new().chain_update(b"parley web app csrf\n").chain_update(session_token.as_bytes()).finalize();
    URL_SAFE_NO_PAD.encode(digest)
}

/// The sign-in form's token (a cookie and a form field that must
/// match): 128 random bits. A sign-in page keeps the one its cookie
/// already holds: when a session ends, every open tab goes to sign in at
/// once, and a fresh token per page would leave only the last tab's form
/// working.
pub fn login_form_token(existing: Option<&str>) -> Result<String, DomainError> {
    match existing {
        Some(token) if is_login_form_token(token) => Ok(token.to_owned()),
        _ => ids::prefixed::<16>(LOGIN_PREFIX),
    }
}

const LOGIN_PREFIX: &str = "lf_";

/// How long a form for someone not signed in (signing in, choosing a
/// password) may be left open before it is sent: its token's cookie
/// lasts as long.
pub const LOGIN_FORM_LIFETIME: std::time::Duration = std::time::Duration::from_secs(3600);

/// Whether `token` has the shape `login_form_token` gives (anything else
/// in the cookie is replaced, never echoed into the page).
fn is_login_form_token(token: &str) -> bool {
    token
        .strip_prefix(LOGIN_PREFIX)
        .is_some_and(|rest| rest.len() == 22 && rest.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'))
}

/// The client message id a page's form carries, so that a form sent
/// twice (a double click, a resubmitted POST) adds one message: random,
/// not secret. Without a random source the form goes without one.
pub fn form_message_id() -> Option<String> {
    ids::prefixed::<16>("web_").ok()
}

/// Whether a submitted form is accepted: its token `given` is `expected`
/// and the browser does not say it came from another site.
pub fn accepts(headers: &HeaderMap, given: Option<&str>, expected: &str) -> bool {
    !cross_origin(headers) && matches(given, expected)
}

/// Whether `given` is `expected`, in time independent of where they differ.
fn matches(given: Option<&str>, expected: &str) -> bool {
    given.is_some_and(|g| !expected.is_empty() && bool::from(g.as_bytes().ct_eq(expected.as_bytes())))
}

/// Whether the browser says the request came from another origin.
/// `Sec-Fetch-Site` decides where a browser sends it, since it names the
/// page's origin whatever a proxy did to the address; without it, the
/// `Origin` does. Neither sent (other clients) is not refused here: the
/// token is.
pub fn cross_origin(headers: &HeaderMap) -> bool {
    match headers.get("sec-fetch-site").map(|v| v.to_str().unwrap_or_default()) {
        Some(site) => site != "same-origin" && site != "none",
        None => foreign_origin(headers),
    }
}

/// Whether the request names an `Origin` other than the address it was
/// sent to (its `Host`, as a proxy passes it on). `null` (a sandboxed
/// frame, a redirect from elsewhere) and anything unreadable count as
/// foreign.
fn foreign_origin(headers: &HeaderMap) -> bool {
    let Some(origin) = headers.get(header::ORIGIN) else { return false };
    let Some(origin) = origin.to_str().ok().and_then(|o| url::Url::parse(o).ok()) else { return true };
    !headers
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .and_then(|host| url::Url::parse(&format!("{}://{}", origin.scheme(), host.trim())).ok())
        .is_some_and(|here| here.origin() == origin.origin())
}

/// The header a page's script sends the session's token in, where the
/// body is not a form of fields (an upload).
pub const HEADER: &str = "x-parley-csrf";

/// A request whose `x-parley-csrf` header carries the session's token,
/// from this site: checked before the body is read.
pub struct HeaderToken;

impl<S: Send + Sync> axum::extract::FromRequestParts<S> for HeaderToken {
    type Rejection = super::error::PageError;

    async fn from_request_parts(parts: &mut axum::http::request::Parts, _: &S) -> Result<Self, Self::Rejection> {
        let expected = super::cookies::read(&parts.headers, super::cookies::SESSION).map(session_token).unwrap_or_default();
        let given = parts.headers.get(HEADER).and_then(|v| v.to_str().ok());
        if accepts(&parts.headers, given, &expected) { Ok(HeaderToken) } else { Err(super::error::PageError::Forged) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    #[test]
    fn a_sign_in_page_keeps_a_well_formed_form_token() {
        let fresh = login_form_token(None).unwrap();
        assert!(is_login_form_token(&fresh), "{fresh}");
        assert_eq!(login_form_token(Some(&fresh)).unwrap(), fresh);
        for odd in ["", "lf_", "lf_short", "xx_AAAAAAAAAAAAAAAAAAAAAA", "lf_AAAAAAAAAAAAAAAAAAAA\"><"] {
            let replaced = login_form_token(Some(odd)).unwrap();
            assert_ne!(replaced, odd);
            assert!(is_login_form_token(&replaced));
        }
    }

    #[test]
    fn the_token_is_bound_to_its_session() {
        let a = session_token("ses_a");
        assert_eq!(a, session_token("ses_a"));
        assert_ne!(a, session_token("ses_b"));
        assert!(matches(Some(&a), &a));
        assert!(!matches(Some("forged"), &a));
        assert!(!matches(None, &a));
        assert!(!matches(Some(""), ""), "an empty token never matches");
    }

    #[test]
    fn an_origin_other_than_the_address_asked_is_refused() {
        let with = |pairs: &[(&'static str, &'static str)]| {
            let mut headers = HeaderMap::new();
            for (name, value) in pairs {
                headers.insert(*name, HeaderValue::from_static(value));
            }
            cross_origin(&headers)
        };
        assert!(!with(&[("host", "chat.example.com")]), "no Origin: the token decides");
        assert!(!with(&[("host", "chat.example.com"), ("origin", "https://chat.example.com")]));
        assert!(!with(&[("host", "Chat.Example.com:443"), ("origin", "https://chat.example.com")]), "default port, any case");
        assert!(!with(&[("host", "127.0.0.1:8080"), ("origin", "http://127.0.0.1:8080")]));
        // Behind a proxy that rewrote the address, a browser's
        // Sec-Fetch-Site decides.
        let proxied = [("host", "10.0.0.5:8080"), ("origin", "https://chat.example.com")];
        assert!(with(&proxied), "an old browser behind such a proxy: the token is not enough");
        assert!(!with(&[proxied[0], proxied[1], ("sec-fetch-site", "same-origin")]));
        assert!(with(&[("host", "chat.example.com"), ("origin", "https://chat.example.com"), ("sec-fetch-site", "cross-site")]));
        for (host, origin) in [
            ("chat.example.com", "https://evil.example"),
            ("chat.example.com", "https://chat.example.com.evil.example"),
            ("127.0.0.1:8080", "http://127.0.0.1:8081"),
            ("chat.example.com", "null"),
            ("chat.example.com", "not a url"),
        ] {
            assert!(with(&[("host", host), ("origin", origin)]), "{origin} sent to {host}");
        }
        assert!(with(&[("origin", "https://chat.example.com")]), "an Origin with no address to match");
    }

    #[test]
    fn only_this_origin_and_the_address_bar_pass() {
        let mut headers = HeaderMap::new();
        assert!(!cross_origin(&headers));
        for (value, refused) in [("same-origin", false), ("none", false), ("same-site", true), ("cross-site", true)] {
            headers.insert("sec-fetch-site", HeaderValue::from_static(value));
            assert_eq!(cross_origin(&headers), refused, "{value}");
        }
    }
}
