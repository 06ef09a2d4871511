//! Where sign-in leads: back to the page that asked for it. A link to a
//! conversation opened after the session ended should end on that
//! conversation, not on the inbox.
//!
//! Only a path of the web app itself is followed, so the sign-in form
//! can never be made to send someone elsewhere (an open redirect).

use axum::http::Uri;

/// The inbox, where sign-in leads by default.
pub const HOME: &str = "/app";

/// The longest path followed; anything longer was not made by the app.
const MAX_LEN: usize = 512;

/// `candidate` if it is a path of the web app, else `None`.
pub fn safe(candidate: Option<&str>) -> Option<&str> {
    let path = candidate?;
    let inside = path == HOME || path.starts_with("/app/") || path.starts_with("/app?");
    // No dot segments either: a browser resolves `/app/../api` outside.
    let plain = path.bytes().all(|b| b.is_ascii_graphic()) && !path.contains("//") && !path.contains('\\') && !path.contains("/.");
    (inside && plain && path.len() <= MAX_LEN && !path.starts_with("/app/login") && !path.starts_with("/app/logout")).then_some(path)
}

/// The way back to the request's page, when it is one worth coming back to.
pub fn of(uri: &Uri) -> Option<String> {
    let path = uri.path_and_query().map(|p| p.as_str())?;
    safe(Some(path)).filter(|p| *p != HOME && !p.starts_with("/app/events")).map(str::to_owned)
}

/// The sign-in page that leads back to `next`.
pub fn sign_in_url(next: Option<&str>) -> String {
    match next {
        Some(next) => format!("/app/login?{}", url::form_urlencoded::Serializer::new(String::new()).append_pair("next", next).finish()),
        None => "/app/login".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_paths_of_the_app_are_followed() {
        for ok in ["/app", "/app/conversations/7", "/app?status=closed&page=2", "/app/conversations/7/reply"] {
            assert_eq!(safe(Some(ok)), Some(ok));
        }
        for refused in [
            "https://evil.example/app",
            "//evil.example/app",
            "/app//evil.example",
            "/app/\\evil",
            "/app/../api/v1/mobile/me",
            "/app/./x",
            "/application",
            "/apple",
            "/app/login?next=/app",
            "/app/logout",
            "/api/v1/mobile/conversations",
            "/app/conversations/7 x",
            "/app/conversations/\u{e9}",
            "",
        ] {
            assert_eq!(safe(Some(refused)), None, "{refused}");
        }
        assert_eq!(safe(Some(&format!("/app/{}", "a".repeat(600)))), None);
    }

    #[test]
    fn the_way_back_is_the_request_path_and_query() {
        let uri: Uri = "/app/conversations/7?x=1".parse().unwrap();
        assert_eq!(of(&uri).as_deref(), Some("/app/conversations/7?x=1"));
        assert_eq!(of(&"/app".parse().unwrap()), None, "the inbox is where sign-in leads anyway");
        assert_eq!(of(&"/app/events?after=1".parse().unwrap()), None);
        assert_eq!(sign_in_url(Some("/app?status=closed&page=2")), "/app/login?next=%2Fapp%3Fstatus%3Dclosed%26page%3D2");
    }
}
