//! The conversation page (`/app/conversations/{id}`): the messages, with
//! operator-only notes marked, the visitor and what it proved, and the
//! forms that answer and hand over. Each form posts to a route of its
//! own and is answered by a redirect back to the page (so a reload never
//! sends twice); a form the domain refuses shows the page again with the
//! problem beside it and the text typed kept.

use axum::extract::{FromRequestParts, State};
use axum::http::StatusCode;
use axum::http::request::Parts;
use axum::response::{IntoResponse, Redirect, Response};
use maud::{Markup, html};
use parley_domain::DomainError;
use parley_domain::inbox::Transcript;
use parley_domain::model::{ConversationId, ConversationStatus, Message, OperatorId, SenderKind};
use parley_domain::validate;

use super::csrf;
use super::error::PageError;
use super::form::{CheckedForm, Form};
use super::layout::{page as frame, respond, visitor_name, when};
use super::session::WebSession;
use crate::AppState;
use crate::extract::PathId;

/// Messages a page shows at most, the latest; a page stays small.
const SHOWN: u32 = 200;

/// The conversation id of the path, as a page: anything that is not one
/// is the same "not found" page as an id out of sight.
pub struct Conversation(ConversationId);

impl FromRequestParts<AppState> for Conversation {
    type Rejection = PageError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, PageError> {
        let PathId(id) = PathId::from_request_parts(parts, state).await?;
        Ok(Self(ConversationId(id)))
    }
}

/// The forms that can be refused with something to say beside them.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Which {
    Reply,
    Note,
    HandOver,
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

pub async fn page(State(s): State<AppState>, who: WebSession, Conversation(id): Conversation) -> Result<Response, PageError> {
    render(&s, &who, id, StatusCode::OK, None).await
}

async fn render(
    s: &AppState,
    who: &WebSession,
    id: ConversationId,
    status: StatusCode,
    problem: Option<Problem>,
) -> Result<Response, PageError> {
    let t = s.inbox.transcript(&who.session, id, SHOWN).await?;
    let title = visitor_name(&t.details.visitor);
    let main = html! {
        div.conversation-page data-live="conversation" data-cursor=(t.cursor.to_string()) data-conversation=(id.0)
            data-url={ "/app/conversations/" (id.0) }
            data-last=(t.details.conversation.last_message_at.to_rfc3339()) {
            section.thread aria-labelledby="title" {
                p { a href="/app" { "← Inbox" } }
                h1 #title { (title) }
                div #summary { (summary(&t)) }
                @if t.earlier_left_out {
                    p.earlier { "Earlier messages are not shown; the mobile API lists them all." }
                }
                ol #messages.messages aria-label="Messages" { @for m in &t.messages { (message(m)) } }
                (reply_forms(who, id, problem.as_ref()))
            }
            aside #details aria-label="Conversation details" {
                (actions(who, &t, problem.as_ref()))
                (visitor(&t))
            }
        }
        div #announce.visually-hidden aria-live="polite" {}
        script type="module" src="/app/assets/live.js" {}
    };
    Ok(respond(status, frame(&title, Some(who), main)))
}

/// Status, site and assignee, in a sentence.
fn summary(t: &Transcript) -> Markup {
    let c = &t.details.conversation;
    let status = match c.status {
        ConversationStatus::Unassigned => "Waiting for an operator",
        ConversationStatus::Assigned => "Assigned",
        ConversationStatus::Closed => "Closed",
    };
    html! {
        p.summary data-status=(c.status.as_str()) {
            span.status { (status) }
            @if let Some(a) = &t.details.assignee { " to " strong { (a.name) } }
            " · " (t.details.site.name)
        }
    }
}

fn message(m: &Message) -> Markup {
    let (class, sender) = match m.sender.kind {
        SenderKind::Visitor => ("visitor", m.sender.name.clone().unwrap_or_else(|| "Visitor".into())),
        SenderKind::Operator => ("operator", m.sender.name.clone().unwrap_or_else(|| "Operator".into())),
        SenderKind::System => ("system", String::new()),
    };
    html! {
        li.message.(class).note[m.internal] data-id=(m.id.0) {
            @if m.sender.kind != SenderKind::System {
                p.meta {
                    span.sender { (sender) }
                    @if m.internal { " " span.badge { "Note · operators only" } }
                    " " (when(m.created_at))
                }
            }
            p.body { (m.body) }
        }
    }
}

/// The reply and the note: two forms, so that which one a text goes to
/// is never a checkbox away. Each carries a fresh client message id, so
/// a form sent twice (a double click, a resubmitted POST) adds one message.
fn reply_forms(who: &WebSession, id: ConversationId, problem: Option<&Problem>) -> Markup {
    let (reply_text, reply_problem) = Problem::of(problem, Which::Reply);
    let (note_text, note_problem) = Problem::of(problem, Which::Note);
    html! {
        form.compose method="post" action={ "/app/conversations/" (id.0) "/reply" } {
            (hidden(who))
            input type="hidden" name="client_message_id" value=(parley_domain::ids::form_message_id());
            label for="reply" { "Reply to the visitor" }
            @if let Some(p) = reply_problem { p #reply-problem.problem role="alert" { (p) } }
            textarea #reply name="body" rows="3" required aria-describedby=[reply_problem.map(|_| "reply-problem")] { (reply_text) }
            button type="submit" { "Send reply" }
        }
        form.compose.note-form method="post" action={ "/app/conversations/" (id.0) "/note" } {
            (hidden(who))
            input type="hidden" name="client_message_id" value=(parley_domain::ids::form_message_id());
            label for="note" { "Internal note (only operators see it)" }
            @if let Some(p) = note_problem { p #note-problem.problem role="alert" { (p) } }
            textarea #note name="body" rows="2" required aria-describedby=[note_problem.map(|_| "note-problem")] { (note_text) }
            button type="submit" { "Add note" }
        }
    }
}

/// Take, hand over, close and reopen, as the conversation's state allows.
fn actions(who: &WebSession, t: &Transcript, problem: Option<&Problem>) -> Markup {
    let assignees = &t.assignees;
    let c = &t.details.conversation;
    let id = c.id.0;
    let mine = c.assignee_id == Some(who.session.operator.id);
    let (note_text, hand_problem) = Problem::of(problem, Which::HandOver);
    html! {
        section #actions.actions aria-labelledby="actions-title" {
            h2 #actions-title { "Actions" }
            @if c.status == ConversationStatus::Closed {
                form method="post" action={ "/app/conversations/" (id) "/reopen" } {
                    (hidden(who)) button type="submit" { "Reopen" }
                }
            } @else {
                @if !mine {
                    form method="post" action={ "/app/conversations/" (id) "/take" } {
                        (hidden(who)) button type="submit" { "Take it" }
                    }
                }
                @if !assignees.is_empty() {
                    form.hand-over method="post" action={ "/app/conversations/" (id) "/hand-over" } {
                        (hidden(who))
                        label for="operator" { "Hand over to" }
                        @if let Some(p) = hand_problem { p #hand-problem.problem role="alert" { (p) } }
                        select #operator name="operator_id" required aria-describedby=[hand_problem.map(|_| "hand-problem")] {
                            @for a in assignees { option value=(a.id.0) { (a.name) " (" (a.email) ")" } }
                        }
                        label for="handover-note" { "Note for them (optional, only operators see it)" }
                        textarea #handover-note name="note" rows="2" { (note_text) }
                        button type="submit" { "Hand over" }
                    }
                }
                form method="post" action={ "/app/conversations/" (id) "/close" } {
                    (hidden(who)) button.secondary type="submit" { "Close" }
                }
            }
        }
    }
}

/// Who the visitor is, and what its verification proved.
fn visitor(t: &Transcript) -> Markup {
    let v = &t.details.visitor;
    let p = &v.profile;
    let c = &t.details.conversation;
    html! {
        section #visitor.visitor aria-labelledby="visitor-title" {
            h2 #visitor-title { "Visitor" }
            dl {
                dt { "Name" } dd { (p.name.as_deref().unwrap_or("Not given")) }
                dt { "Email" } dd { (p.email.as_deref().unwrap_or("Not given")) }
                dt { "Phone" } dd { (p.phone.as_deref().unwrap_or("Not given")) }
                dt { "Last page" } dd.url { (p.last_url.as_deref().unwrap_or("Unknown")) }
                dt { "Verified" }
                dd.verified {
                    @match (v.proof(), v.verified_at) {
                        (Some(proof), Some(at)) => {
                            (method_label(proof.method)) ": " strong { (proof.target) }
                            " (" (when(at)) ")"
                            @if !proof.email && !proof.phone { " — not the address or number the visitor now gives" }
                        }
                        _ => "No",
                    }
                }
                dt { "Site" } dd { (t.details.site.name) }
                dt { "Started" } dd { (when(c.created_at)) }
            }
        }
    }
}

fn method_label(m: parley_domain::verification::Method) -> &'static str {
    match m {
        parley_domain::verification::Method::EmailOtp => "Email code",
        parley_domain::verification::Method::SmsOtp => "SMS code",
        parley_domain::verification::Method::MagicLink => "Email link",
    }
}

fn hidden(who: &WebSession) -> Markup {
    html! { input type="hidden" name=(csrf::FIELD) value=(who.csrf); }
}

fn back(id: ConversationId) -> Response {
    Redirect::to(&format!("/app/conversations/{}", id.0)).into_response()
}

/// The page again, 422, with `form`'s problem beside it and its text kept.
async fn refused(
    s: &AppState,
    who: &WebSession,
    id: ConversationId,
    form: Which,
    text: &str,
    message: String,
) -> Result<Response, PageError> {
    let problem = Problem { form, text: text.to_owned(), message };
    render(s, who, id, StatusCode::UNPROCESSABLE_ENTITY, Some(problem)).await
}

/// Back to the page when the domain did it; beside the form when it
/// refused what was given (invalid, or not possible in this state).
async fn settle(
    s: &AppState,
    who: &WebSession,
    id: ConversationId,
    form: Which,
    text: &str,
    done: Result<(), DomainError>,
) -> Result<Response, PageError> {
    let message = match done {
        Ok(()) => return Ok(back(id)),
        Err(DomainError::Validation(errors)) => errors
            .fields()
            .iter()
            .flat_map(|(field, messages)| messages.iter().map(move |m| format!("{field}: {m}")))
            .collect::<Vec<_>>()
            .join("; "),
        Err(DomainError::Conflict(why)) => format!("This cannot be done now: {why}."),
        Err(other) => return Err(other.into()),
    };
    refused(s, who, id, form, text, message).await
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
        Err(m) => return refused(&s, &who, id, Which::Reply, text, format!("The reply {m}.")).await,
    };
    let done = s.inbox.reply(&who.session, id, body, client_id(&form)).await.map(|_| s.metrics.message_created("operator"));
    settle(&s, &who, id, Which::Reply, text, done).await
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
        Err(m) => return refused(&s, &who, id, Which::Note, text, format!("The note {m}.")).await,
    };
    let done = s.inbox.note(&who.session, id, body, client_id(&form)).await.map(drop);
    settle(&s, &who, id, Which::Note, text, done).await
}

/// Assigns, or transfers with the note (see `InboxService::hand_over`).
pub async fn hand_over(
    State(s): State<AppState>,
    who: WebSession,
    Conversation(id): Conversation,
    CheckedForm(form): CheckedForm,
) -> Result<Response, PageError> {
    let text = form.get("note").unwrap_or_default();
    let Some(target) = form.get("operator_id").and_then(|v| v.parse::<i64>().ok()).filter(|v| *v > 0).map(OperatorId) else {
        return refused(&s, &who, id, Which::HandOver, text, "Choose an operator.".to_owned()).await;
    };
    let note = match validate::optional(&validate::NOTE, text) {
        Ok(note) => note,
        Err(m) => return refused(&s, &who, id, Which::HandOver, text, format!("The note {m}.")).await,
    };
    let done = s.inbox.hand_over(&who.session, id, target, note).await.map(drop);
    settle(&s, &who, id, Which::HandOver, text, done).await
}

pub async fn take(
    State(s): State<AppState>,
    who: WebSession,
    Conversation(id): Conversation,
    _: CheckedForm,
) -> Result<Response, PageError> {
    s.inbox.assign(&who.session, id, None).await?;
    Ok(back(id))
}

pub async fn close(
    State(s): State<AppState>,
    who: WebSession,
    Conversation(id): Conversation,
    _: CheckedForm,
) -> Result<Response, PageError> {
    s.inbox.close(&who.session, id).await?;
    Ok(back(id))
}

pub async fn reopen(
    State(s): State<AppState>,
    who: WebSession,
    Conversation(id): Conversation,
    _: CheckedForm,
) -> Result<Response, PageError> {
    s.inbox.reopen(&who.session, id).await?;
    Ok(back(id))
}
