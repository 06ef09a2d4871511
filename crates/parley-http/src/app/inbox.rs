//! The inbox (`/app`): the conversations the operator may see, newest
//! activity first, filtered by status.

use axum::extract::{RawQuery, State};
use axum::http::StatusCode;
use axum::response::Response;
use maud::{Markup, html};
use parley_domain::inbox::PageRequest;
use parley_domain::model::{ConversationDetails, ConversationStatus, StatusFilter};

use super::error::PageError;
use super::layout::{page as frame, respond, visitor_name, when};
use super::session::WebSession;
use crate::AppState;

const PER_PAGE: u32 = 50;
/// Characters of the latest message a row shows.
const PREVIEW_CHARS: usize = 100;

/// The filters offered, as (query value, label, filter); the first is
/// the default.
const FILTERS: [(&str, &str, StatusFilter); 5] = [
    ("open", "Open", StatusFilter::Open),
    ("unassigned", "Unassigned", StatusFilter::Only(ConversationStatus::Unassigned)),
    ("mine", "Mine", StatusFilter::Mine),
    ("closed", "Closed", StatusFilter::Only(ConversationStatus::Closed)),
    ("all", "All", StatusFilter::All),
];

pub async fn page(State(s): State<AppState>, who: WebSession, RawQuery(query): RawQuery) -> Result<Response, PageError> {
    // A filter or page the app never links to falls back to the default
    // rather than failing: these come from the address bar. Of a
    // repeated parameter the first counts, as in forms.
    let pairs: Vec<(String, String)> = url::form_urlencoded::parse(query.unwrap_or_default().as_bytes()).into_owned().collect();
    let param = |name: &str| pairs.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str());
    let (status, _, filter) = param("status").and_then(|v| FILTERS.into_iter().find(|(f, _, _)| *f == v)).unwrap_or(FILTERS[0]);
    let number = param("page").and_then(|p| p.parse::<u32>().ok()).filter(|p| (1..=100_000).contains(p)).unwrap_or(1);
    let (list, meta, cursor) = s.inbox.list(&who.session, filter, PageRequest { page: number, per_page: PER_PAGE }).await?;
    let main = html! {
        div.inbox-page {
        div.inbox-list data-live="inbox" data-cursor=(cursor.to_string()) data-url={ "/app?status=" (status) "&page=" (number) } {
            h1 { "Inbox" }
            (super::search::form(""))
            nav.filters aria-label="Filter by status" {
                @for (value, label, _) in FILTERS {
                    a href={ "/app?status=" (value) } aria-current=[(value == status).then_some("page")] { (label) }
                }
            }
            div #conversation-list {
                @if list.is_empty() {
                    p.empty { "No conversations here." }
                } @else {
                    ul.conversations {
                        @for c in &list { li { (row(c)) } }
                    }
                }
                // Inside the live region: new conversations change the count.
                @let last_page = meta.last_page;
                @if last_page > 1 {
                    nav.pages aria-label="Pages" {
                        @if number > 1 { a href={ "/app?status=" (status) "&page=" (number - 1) } rel="prev" { "Newer" } }
                        span { "Page " (number) " of " (last_page) }
                        @if u64::from(number) < last_page { a href={ "/app?status=" (status) "&page=" (number + 1) } rel="next" { "Older" } }
                    }
                }
            }
        }
        // The conversation's place on a wide screen, until one is opened
        // (its page shows the list, the conversation and its details).
        section.inbox-empty aria-label="No conversation open" {
            p.placeholder { "Open a conversation to read and answer it here." }
            p.help { "j and k move through the list, Enter opens, ? lists every shortcut." }
        }
        }
        div #announce.visually-hidden aria-live="polite" {}
        script type="module" src=(crate::app::assets::live_script_url()) {}
    };
    Ok(respond(StatusCode::OK, frame("Inbox", Some(&who), main)))
}

/// One conversation in the list: who, where, in what state, since when.
pub fn row(d: &ConversationDetails) -> Markup {
    let c = &d.conversation;
    let who = visitor_name(&d.visitor);
    let status = match c.status {
        ConversationStatus::Unassigned => "New",
        ConversationStatus::Assigned => "Assigned",
        ConversationStatus::Closed => "Closed",
    };
    let last = c.last_message_at.to_rfc3339();
    // The operator's own read marker, kept by the server (the mobile API
    // counts from the same one); a closed conversation waits for nobody.
    let unread = d.unread_count > 0 && c.status != ConversationStatus::Closed;
    let waiting = d.waiting_since.filter(|_| c.status != ConversationStatus::Closed);
    html! {
        a.conversation.unread[unread] href={ "/app/conversations/" (c.id.0) "#latest" } data-status=(c.status.as_str()) data-id=(c.id.0) data-last=(last) {
            @if unread { span.unread-label { "Unread" } }
            // The avatar is drawn from `data-initials` by the stylesheet,
            // so the name's text stays the name alone.
            span.who data-initials=(super::layout::initials(&who)) { (who) }
            span.site { (d.site.name) }
            @if let Some(line) = d.preview(PREVIEW_CHARS) { span.preview { (line) } }
            span.status { (status) @if let Some(a) = &d.assignee { " · " (a.name) } }
            @if let Some(since) = waiting { span.waiting { "Waiting since " (when(since)) } }
            (when(c.last_message_at))
        }
    }
}
