//! The conversation page (`/app/conversations/{id}`): the messages, with
//! operator-only notes marked, the visitor and what it proved, and the
//! forms that answer and hand over. Each form posts to a route of its
//! own and is answered by a redirect back to the page (so a reload never
//! sends twice); a form the domain refuses shows the page again with the
//! problem beside it and the text typed kept.
//!
//! `view` renders the page, `actions` answers its forms.

mod actions;
mod erase;
mod forms;
mod view;

use axum::extract::{FromRequestParts, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use parley_domain::inbox::PageRequest;
use parley_domain::model::{ConversationId, StatusFilter};

use super::error::PageError;
use super::layout::respond;
use super::path::Id;
use super::session::WebSession;
use crate::AppState;

pub use actions::{close, hand_over, note, reopen, reply, show_page, take, typing, upload};
pub use erase::{ask as ask_erase, erase};

/// Messages a page shows at most, the latest; a page stays small.
const SHOWN: u32 = 200;
/// Open conversations the list pane beside the conversation shows.
const LISTED: u32 = 30;

/// The conversation id of the path, as a page: anything that is not one
/// is the same "not found" page as an id out of sight.
pub struct Conversation(ConversationId);

impl FromRequestParts<AppState> for Conversation {
    type Rejection = PageError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, PageError> {
        let Id(id) = Id::from_request_parts(parts, state).await?;
        Ok(Self(ConversationId(id)))
    }
}

/// The page's address, or one of its forms' (`action` is `"reply"` …).
fn path(id: ConversationId, action: Option<&str>) -> String {
    match action {
        Some(action) => format!("/app/conversations/{}/{action}", id.0),
        None => format!("/app/conversations/{}", id.0),
    }
}

/// The forms that can be refused with something to say beside them.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Which {
    Reply,
    Note,
    HandOver,
    /// Take, close and reopen: no text, a sentence above the buttons.
    Actions,
}

/// A refused form: which, what was typed in its text, and why.
struct Problem {
    form: Which,
    text: String,
    message: String,
}

impl Problem {
    /// What was typed in `form` and why it was refused, if it was.
    fn of(problem: Option<&Problem>, form: Which) -> (&str, Option<&str>) {
        match problem {
            Some(p) if p.form == form => (p.text.as_str(), Some(p.message.as_str())),
            _ => ("", None),
        }
    }
}

/// The page; showing it reads the conversation, but for the refresh of
/// a tab nobody looks at (`X-Parley-Hidden`, sent by the page's script)
/// and for a page another site opened (`Sec-Fetch-Site: cross-site`):
/// a link elsewhere must not be able to mark conversations read.
pub async fn page(
    State(s): State<AppState>,
    who: WebSession,
    Conversation(id): Conversation,
    headers: HeaderMap,
) -> Result<Response, PageError> {
    let shown = !crate::app::csrf::cross_origin(&headers) && !headers.contains_key("x-parley-hidden");
    show(&s, &who, id, StatusCode::OK, None, shown).await
}

/// The page again after a form (the operator is looking at it).
async fn render(
    s: &AppState,
    who: &WebSession,
    id: ConversationId,
    status: StatusCode,
    problem: Option<Problem>,
) -> Result<Response, PageError> {
    show(s, who, id, status, problem, true).await
}

async fn show(
    s: &AppState,
    who: &WebSession,
    id: ConversationId,
    status: StatusCode,
    problem: Option<Problem>,
    shown: bool,
) -> Result<Response, PageError> {
    let t = s.inbox.transcript(&who.session, id, SHOWN).await?;
    // Shown is read: the operator's marker moves to the newest message
    // (the inbox, the badge and the mobile API count from it). A marker
    // that could not move leaves the page as it is.
    if shown
        && t.details.unread_count > 0
        && let Some(last) = t.messages.last()
        && let Err(e) = s.inbox.mark_read(&who.session, id, last.id).await
    {
        tracing::warn!(error = %e, "a read marker could not be moved");
    }
    let page = PageRequest { page: 1, per_page: LISTED };
    let (listed, _, _) = s.inbox.list(&who.session, StatusFilter::Open, page).await?;
    Ok(respond(status, view::page(who, &t, &listed, problem.as_ref(), s.attachments.links())))
}
