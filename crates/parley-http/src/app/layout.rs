//! The frame every web app page shares: landmarks, the signed-in
//! operator's navigation, the stylesheet. Pages render their first view
//! whole on the server; no script is needed to read them.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use maud::{DOCTYPE, Markup, html};

use super::csrf;
use super::session::WebSession;

/// A whole page. `who` is the signed-in operator, whose navigation and
/// sign-out button the header shows.
pub fn page(title: &str, who: Option<&WebSession>, main: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) " · Parley" }
                link rel="stylesheet" href=(super::assets::stylesheet_url());
            }
            body {
                a.skip href="#main" { "Skip to content" }
                header.bar {
                    a.brand href="/app" { "Parley" }
                    @if let Some(w) = who {
                        nav aria-label="Main" {
                            a href="/app" { "Inbox" }
                            a href="/app/search" { "Search" }
                            @if w.session.operator.role == parley_domain::model::Role::Admin {
                                a href="/app/integrations" { "Integrations" }
                                a href="/app/settings" { "Settings" }
                            }
                        }
                        span.push {
                            button #enable-push type="button" hidden data-csrf=(w.csrf) { "Enable notifications" }
                            span #push-status role="status" {}
                        }
                        script type="module" src=(super::assets::push_script_url()) {}
                        form.signout method="post" action="/app/logout" {
                            input type="hidden" name=(csrf::FIELD) value=(w.csrf);
                            a.who href="/app/account" title="Your account" {
                                (avatar(&w.session.operator.name)) span.name { (w.session.operator.name) }
                            }
                            button type="submit" { "Sign out" }
                        }
                    }
                }
                main #main { (main) }
            }
        }
    }
}

/// An HTML response of `markup`, never cached: pages show live data and
/// carry form tokens.
pub fn respond(status: StatusCode, markup: Markup) -> Response {
    let mut response = (status, markup.into_string()).into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/html; charset=utf-8"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// A page that only says something (an error, a refusal).
pub fn message(status: StatusCode, title: &str, text: &str) -> Response {
    respond(
        status,
        page(
            title,
            None,
            html! {
                h1 { (title) }
                p { (text) }
                p { a href="/app" { "Back to the inbox" } }
            },
        ),
    )
}

/// How pages name a visitor: its name, else its email, else its number.
pub fn visitor_name(v: &parley_domain::model::Visitor) -> String {
    v.profile.name.clone().or_else(|| v.profile.email.clone()).unwrap_or_else(|| format!("Visitor {}", v.id.0))
}

/// A moment as people read it, in UTC on the server ("2026-11-22 14:05
/// UTC"); the page's script rewrites it in the reader's own time zone.
pub fn when(t: parley_domain::clock::Timestamp) -> Markup {
    let iso = t.rfc3339();
    let iso = iso.as_str();
    html! { time datetime=(iso) { (iso[..10]) " " (iso[11..16]) " UTC" } }
}

/// A wait as people say it: "a second", "40 seconds", "15 minutes".
pub fn minutes_or_seconds(secs: u64) -> String {
    match secs {
        0..=1 => "a second".into(),
        2..=90 => format!("{secs} seconds"),
        _ => format!("{} minutes", secs.div_ceil(60)),
    }
}

/// A person's initials: the first letters of the first and last words
/// of its name, what its avatar shows.
pub fn initials(name: &str) -> String {
    let mut words = name.split_whitespace().filter_map(|w| w.chars().next());
    let first = words.next().map(|c| c.to_uppercase().collect::<String>()).unwrap_or_else(|| "?".into());
    let last = words.next_back().map(|c| c.to_uppercase().collect::<String>()).unwrap_or_default();
    format!("{first}{last}")
}

/// The avatar of an operator: its initials in a circle.
pub fn avatar(name: &str) -> Markup {
    html! { span.avatar aria-hidden="true" { (initials(name)) } }
}

#[cfg(test)]
mod tests {
    use super::*;
    use parley_domain::clock::Timestamp;

    #[test]
    fn a_moment_reads_as_date_and_minute_in_utc() {
        // 2026-11-22T14:05:09.250Z
        let t = Timestamp::from_millis(1_795_356_309_250);
        assert_eq!(when(t).into_string(), r#"<time datetime="2026-11-22T14:05:09.250Z">2026-11-22 14:05 UTC</time>"#);
    }

    #[test]
    fn initials_are_the_first_and_last_words_first_letters() {
        assert_eq!(initials("Ann Marie Smith"), "AS");
        assert_eq!(initials("émile"), "É");
        assert_eq!(initials("  "), "?");
        assert_eq!(initials("bea o'neil"), "BO");
    }
}
