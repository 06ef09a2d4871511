//! Search (`/app/search`): the conversations the operator sees that hold
//! the words, or whose visitor's name and email do, each with
//! the words marked in a snippet of its latest matching message. The
//! same search as `GET mobile/search` (`parley_domain::search`).

use axum::extract::{RawQuery, State};
use axum::http::StatusCode;
use axum::response::Response;
use maud::{Markup, html};
use parley_domain::inbox::PageRequest;
use parley_domain::search::{SearchQuery, snippet, word_starts};
use parley_domain::validate;

use super::error::PageError;
use super::inbox::row;
use super::layout::{page as frame, respond};
use super::session::WebSession;
use crate::AppState;

const PER_PAGE: u32 = 50;

/// The search form, as the inbox and this page show it.
pub fn form(q: &str) -> Markup {
    html! {
        form.search role="search" method="get" action="/app/search" {
            label for="search-q" { "Search conversations" }
            input #search-q type="search" name="q" value=(q) maxlength=(parley_domain::validate::SEARCH_TEXT.max_chars) required placeholder="Words, a name or an email";
            button type="submit" { "Search" }
        }
    }
}

pub async fn page(State(s): State<AppState>, who: WebSession, RawQuery(query): RawQuery) -> Result<Response, PageError> {
    let pairs: Vec<(String, String)> = url::form_urlencoded::parse(query.unwrap_or_default().as_bytes()).into_owned().collect();
    let param = |name: &str| pairs.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str());
    let q = param("q").unwrap_or_default().trim().to_owned();
    let number = param("page").and_then(|p| p.parse::<u32>().ok()).filter(|p| (1..=100_000).contains(p)).unwrap_or(1);
    let parsed = match q.as_str() {
        "" => None,
        text => Some(validate::SEARCH_TEXT.check(text).map_err(|_| ()).and_then(|()| SearchQuery::parse(text).map_err(|_| ()))),
    };
    let found = match parsed {
        Some(Ok(query)) => {
            let terms = query.words.clone();
            Some(Ok((s.inbox.search(&who.session, query, PageRequest { page: number, per_page: PER_PAGE }).await?, terms)))
        }
        Some(Err(())) => Some(Err(())),
        None => None,
    };
    let link = |page: u32| {
        format!(
            "/app/search?{}",
            url::form_urlencoded::Serializer::new(String::new()).append_pair("q", &q).append_pair("page", &page.to_string()).finish()
        )
    };
    let main = html! {
        h1 { "Search" }
        (form(&q))
        @match &found {
            None => {}
            Some(Err(())) => p.problem role="alert" { "Type at least one letter or digit, on one line, in at most 200 characters." },
            Some(Ok((page, _))) if page.hits.is_empty() => p.empty role="status" { "Nothing found for “" (q) "”." },
            Some(Ok((page, terms))) => {
                p.visually-hidden role="status" {
                    @let n = page.hits.len();
                    (n) @if n == 1 { " conversation" } @else { " conversations" } " on this page"
                    @if page.more { ", more on the next" } "."
                }
                ul.conversations.results {
                    @for hit in &page.hits {
                        li {
                            (row(&hit.conversation))
                            @if let Some(m) = &hit.message {
                                p.snippet { (marked(&snippet(&m.body, terms), terms)) }
                            }
                        }
                    }
                }
                @if number > 1 || page.more {
                    nav.pages aria-label="Pages" {
                        @if number > 1 { a href=(link(number - 1)) rel="prev" { "Previous" } }
                        span { "Page " (number) }
                        @if page.more { a href=(link(number + 1)) rel="next" { "Next" } }
                    }
                }
            }
        }
    };
    let title = if q.is_empty() { "Search".to_owned() } else { format!("Search: {q}") };
    Ok(respond(StatusCode::OK, frame(&title, Some(&who), main)))
}

/// `text` with each place one of `terms` starts a word in `mark`.
fn marked(text: &str, terms: &[String]) -> Markup {
    let chars: Vec<char> = text.chars().collect();
    let mut parts: Vec<(bool, String)> = Vec::new();
    let mut at = 0;
    for (start, len) in word_starts(&chars, terms) {
        parts.push((false, chars[at..start].iter().collect()));
        parts.push((true, chars[start..start + len].iter().collect()));
        at = start + len;
    }
    parts.push((false, chars[at..].iter().collect()));
    html! {
        @for (is_mark, piece) in parts.iter().filter(|(_, p)| !p.is_empty()) {
            @if *is_mark { mark { (piece) } } @else { (piece) }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_words_found_are_marked_where_they_start_a_word() {
        let terms = vec!["refund".to_owned(), "or".to_owned()];
        assert_eq!(
            marked("Your REFUND for order <5>, prefunded", &terms).into_string(),
            "Your <mark>REFUND</mark> for <mark>or</mark>der &lt;5&gt;, prefunded"
        );
    }
}
