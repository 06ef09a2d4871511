//! The conversation page's forms. Each answers a redirect back to the
//! page when the domain did it, or the page again (422, or 409 for a
//! change of state) with the problem beside the form when it refused.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use parley_domain::DomainError;
use parley_domain::model::{ConversationId, OperatorId};
use parley_domain::validate;

use super::view::LATEST;
use super::{Conversation, Problem, Which, path, render};
use crate::AppState;
use crate::app::error::PageError;
use crate::app::form::{CheckedForm, Form};
use crate::app::session::WebSession;
use crate::error::sentence;

/// Back to the page, at `anchor`.
fn back(id: ConversationId, anchor: &str) -> Response {
    Redirect::to(&format!("{}#{anchor}", path(id, None))).into_response()
}

/// A form's address opened as a page (a reload after a refused form
/// shows that address): the conversation page itself.
pub async fn show_page(Conversation(id): Conversation) -> Response {
    Redirect::to(&path(id, None)).into_response()
}

/// The page again, with `form`'s problem beside it and its text kept.
async fn refused(
    s: &AppState,
    who: &WebSession,
    id: ConversationId,
    status: StatusCode,
    form: Which,
    text: &str,
    message: String,
) -> Result<Response, PageError> {
    let problem = Problem { form, text: text.to_owned(), message };
    render(s, who, id, status, Some(problem)).await
}

/// Back to the page at `anchor` when the domain did it; beside the form
/// when it refused what was given (invalid, or not possible now).
async fn settle(
    s: &AppState,
    who: &WebSession,
    id: ConversationId,
    (form, anchor): (Which, &str),
    text: &str,
    done: Result<(), DomainError>,
) -> Result<Response, PageError> {
    let (status, message) = match done {
        Ok(()) => return Ok(back(id, anchor)),
        // The problem sits beside its form: the field's name says
        // nothing more to an operator than the place does.
        Err(DomainError::Validation(errors)) => {
            let all: Vec<&str> = errors.fields().values().flat_map(|messages| messages.iter().map(String::as_str)).collect();
            (StatusCode::UNPROCESSABLE_ENTITY, sentence(&all.join("; ")))
        }
        Err(DomainError::Conflict(why)) => (StatusCode::CONFLICT, format!("This cannot be done now: {why}.")),
        Err(other) => return Err(other.into()),
    };
    refused(s, who, id, status, form, text, message).await
}

/// `settle` for take, close and reopen: no text, back at the actions.
async fn settle_action<T>(s: &AppState, who: &WebSession, id: ConversationId, done: Result<T, DomainError>) -> Result<Response, PageError> {
    settle(s, who, id, (Which::Actions, "actions"), "", done.map(drop)).await
}

/// The form's client message id when it is a valid one; a browser never
/// sends another, and without one a repeat is simply a second message.
fn client_id(form: &Form) -> Option<String> {
    form.get("client_message_id").and_then(|v| validate::client_message_id(v).ok())
}

pub async fn reply(
    State(s): State<AppState>,
    who: WebSession,
    Conversation(id): Conversation,
    CheckedForm(form): CheckedForm,
) -> Result<Response, PageError> {
    let text = form.get("body").unwrap_or_default();
    let body = match validate::message_body(text) {
        Ok(body) => body,
        Err(m) => return refused(&s, &who, id, StatusCode::UNPROCESSABLE_ENTITY, Which::Reply, text, format!("The reply {m}.")).await,
    };
    let done = s.inbox.reply(&who.session, id, body, client_id(&form)).await.map(drop);
    settle(&s, &who, id, (Which::Reply, LATEST), text, done).await
}

pub async fn note(
    State(s): State<AppState>,
    who: WebSession,
    Conversation(id): Conversation,
    CheckedForm(form): CheckedForm,
) -> Result<Response, PageError> {
    let text = form.get("body").unwrap_or_default();
    let body = match validate::optional(&validate::NOTE, text).and_then(|b| b.ok_or_else(|| "is required".to_owned())) {
        Ok(body) => body,
        Err(m) => return refused(&s, &who, id, StatusCode::UNPROCESSABLE_ENTITY, Which::Note, text, format!("The note {m}.")).await,
    };
    let done = s.inbox.note(&who.session, id, body, client_id(&form)).await.map(drop);
    settle(&s, &who, id, (Which::Note, LATEST), text, done).await
}

/// Assigns, or transfers with the note (see `InboxService::hand_over`).
pub async fn hand_over(
    State(s): State<AppState>,
    who: WebSession,
    Conversation(id): Conversation,
    CheckedForm(form): CheckedForm,
) -> Result<Response, PageError> {
    let text = form.get("note").unwrap_or_default();
    let unprocessable = StatusCode::UNPROCESSABLE_ENTITY;
    let Some(target) = operator_id(form.get("operator_id")) else {
        return refused(&s, &who, id, unprocessable, Which::HandOver, text, "Choose an operator.".to_owned()).await;
    };
    let note = match validate::optional(&validate::NOTE, text) {
        Ok(note) => note,
        Err(m) => return refused(&s, &who, id, unprocessable, Which::HandOver, text, format!("The note {m}.")).await,
    };
    let done = s.inbox.hand_over(&who.session, id, target, note).await.map(drop);
    settle(&s, &who, id, (Which::HandOver, "actions"), text, done).await
}

/// Takes the conversation as the page showed it (`seen`: its assignee
/// then, empty for none), see `InboxService::take`.
pub async fn take(
    State(s): State<AppState>,
    who: WebSession,
    Conversation(id): Conversation,
    CheckedForm(form): CheckedForm,
) -> Result<Response, PageError> {
    let seen = operator_id(form.get("seen"));
    let done = s.inbox.take(&who.session, id, seen).await;
    settle_action(&s, &who, id, done).await
}

pub async fn close(
    State(s): State<AppState>,
    who: WebSession,
    Conversation(id): Conversation,
    _: CheckedForm,
) -> Result<Response, PageError> {
    let done = s.inbox.close(&who.session, id).await;
    settle_action(&s, &who, id, done).await
}

pub async fn reopen(
    State(s): State<AppState>,
    who: WebSession,
    Conversation(id): Conversation,
    _: CheckedForm,
) -> Result<Response, PageError> {
    let done = s.inbox.reopen(&who.session, id).await;
    settle_action(&s, &who, id, done).await
}

/// An operator id of a form field; anything else is none.
fn operator_id(value: Option<&str>) -> Option<OperatorId> {
    value.and_then(|v| v.parse::<i64>().ok()).filter(|v| *v > 0).map(OperatorId)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_reads_as_a_sentence() {
        assert_eq!(sentence("no such operator"), "No such operator.");
        assert_eq!(sentence("Already one."), "Already one.");
        assert_eq!(sentence(""), "");
    }
}
