//! The conversation page's forms. Each answers a redirect back to the
//! page when the domain did it, or the page again (422, or 409 for a
//! change of state) with the problem beside the form when it refused.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use parley_domain::DomainError;
use parley_domain::model::{Content, ConversationId};

use super::forms::{HandOverForm, NoteForm, ReplyForm, TakeForm};
use super::view::LATEST;
use super::{Conversation, Problem, Which, path, render};
use crate::AppState;
use crate::app::error::PageError;
use crate::app::form::CheckedForm;
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

/// What a refused form says about `field`, in a sentence that names it
/// as the page does (`what`): "The reply must not be empty."
fn said(e: &DomainError, field: &str, what: &str) -> String {
    let first = match e {
        DomainError::Validation(errors) => errors.fields().get(field).and_then(|m| m.first()).map(String::as_str),
        _ => None,
    };
    format!("{what} {}.", first.unwrap_or("could not be read"))
}

pub async fn reply(
    State(s): State<AppState>,
    who: WebSession,
    Conversation(id): Conversation,
    CheckedForm(form): CheckedForm,
) -> Result<Response, PageError> {
    let text = form.get("body").unwrap_or_default();
    let reply = match form.read::<ReplyForm>() {
        Ok(reply) => reply,
        Err(e) => return refused(&s, &who, id, StatusCode::UNPROCESSABLE_ENTITY, Which::Reply, text, said(&e, "body", "The reply")).await,
    };
    let files = reply.attachment_ids.map(|a| a.0).unwrap_or_default();
    let content = match Content::new(reply.body.map(|b| b.0), files) {
        Ok(content) => content,
        Err(e) => return refused(&s, &who, id, StatusCode::UNPROCESSABLE_ENTITY, Which::Reply, text, said(&e, "body", "The reply")).await,
    };
    let done = s.inbox.reply(&who.session, id, content, reply.client_message_id.map(|c| c.0)).await.map(drop);
    settle(&s, &who, id, (Which::Reply, LATEST), text, done).await
}

/// A file for the next reply, uploaded by the page's script with the
/// session's anti-forgery token in a header (the body is the file). Its
/// answer is the API's, which the script reads.
pub async fn upload(
    State(s): State<AppState>,
    who: WebSession,
    Conversation(id): Conversation,
    _token: crate::app::csrf::HeaderToken,
    request: axum::extract::Request,
) -> Result<(StatusCode, axum::Json<crate::views::widget::UploadResponse>), crate::error::ApiError> {
    let target = s.inbox.upload_target(&who.session, id).await?;
    crate::routes::received(&s, target, request).await
}

/// The operator is typing a reply: the visitor's widget shows it (see
/// `TypingService`). Posted by the page's script, with the session's
/// anti-forgery token.
pub async fn typing(
    State(s): State<AppState>,
    who: WebSession,
    Conversation(id): Conversation,
    _form: CheckedForm,
) -> Result<StatusCode, PageError> {
    s.typing.operator(&who.session, id).await?;
    Ok(StatusCode::NO_CONTENT)
}

pub async fn note(
    State(s): State<AppState>,
    who: WebSession,
    Conversation(id): Conversation,
    CheckedForm(form): CheckedForm,
) -> Result<Response, PageError> {
    let text = form.get("body").unwrap_or_default();
    let note = match form.read::<NoteForm>() {
        Ok(note) => note,
        Err(e) => return refused(&s, &who, id, StatusCode::UNPROCESSABLE_ENTITY, Which::Note, text, said(&e, "body", "The note")).await,
    };
    let done = s.inbox.note(&who.session, id, Content::text(note.body.0), note.client_message_id.map(|c| c.0)).await.map(drop);
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
    let hand_over = match form.read::<HandOverForm>() {
        Ok(hand_over) => hand_over,
        Err(e) => return refused(&s, &who, id, unprocessable, Which::HandOver, text, said(&e, "note", "The note")).await,
    };
    let Some(target) = hand_over.operator_id else {
        return refused(&s, &who, id, unprocessable, Which::HandOver, text, "Choose an operator.".to_owned()).await;
    };
    let done = s.inbox.hand_over(&who.session, id, target.0, hand_over.note.map(|n| n.0)).await.map(drop);
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
    // Every field of a take is read quietly: it cannot be refused.
    let seen = form.read::<TakeForm>().ok().and_then(|t| t.seen).map(|s| s.0);
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
