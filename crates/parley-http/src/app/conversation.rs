//! The conversation page (`/app/conversations/{id}`): the messages, with
//! operator-only notes marked, the visitor and what it proved, and the
//! forms that answer and hand over. Each form posts to a route of its
//! own and is answered by a redirect back to the page (so a reload never
//! sends twice); a form the domain refuses shows the page again with the
//! problem beside it and the text typed kept.

use axum::extract::{FromRequestParts, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use maud::{Markup, html};
use parley_domain::DomainError;
use parley_domain::inbox::Transcript;
use parley_domain::model::{ConversationId, ConversationStatus, Message, OperatorId, OperatorRef, SenderKind};
use parley_domain::validate;

use super::csrf;
use super::error::PageError;
use super::form::Form;
use super::layout::{page as frame, respond};
use super::session::WebSession;
use crate::AppState;
use crate::extract::PathId;

/// Messages a page shows at most, the latest; a page stays small.
const SHOWN: usize = 200;

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

/// Which form a problem belongs to, with what was typed in it.
enum Problem {
    Reply { text: String, message: String },
    Note { text: String, message: String },
    HandOver { note: String, message: String },
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
    let assignees =
        if t.details.conversation.status == ConversationStatus::Closed { Vec::new() } else { s.inbox.assignees(&who.session, id).await? };
    let title = visitor_name(&t);
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
                (actions(who, &t, &assignees, problem.as_ref()))
                (visitor(&t))
            }
        }
        div #announce.visually-hidden aria-live="polite" {}
        script type="module" src="/app/assets/live.js" {}
    };
    Ok(respond(status, frame(&title, Some(who), main)))
}

fn visitor_name(t: &Transcript) -> String {
    let v = &t.details.visitor;
    v.profile.name.clone().or_else(|| v.profile.email.clone()).unwrap_or_else(|| format!("Visitor {}", v.id.0))
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
    let at = m.created_at.to_rfc3339();
    html! {
        li.message.(class).note[m.internal] data-id=(m.id.0) {
            @if m.sender.kind != SenderKind::System {
                p.meta {
                    span.sender { (sender) }
                    @if m.internal { " " span.badge { "Note · operators only" } }
                    " " time datetime=(at) { (at) }
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
    let (reply_text, reply_problem) = match problem {
        Some(Problem::Reply { text, message }) => (text.as_str(), Some(message.as_str())),
        _ => ("", None),
    };
    let (note_text, note_problem) = match problem {
        Some(Problem::Note { text, message }) => (text.as_str(), Some(message.as_str())),
        _ => ("", None),
    };
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
fn actions(who: &WebSession, t: &Transcript, assignees: &[OperatorRef], problem: Option<&Problem>) -> Markup {
    let c = &t.details.conversation;
    let id = c.id.0;
    let mine = c.assignee_id == Some(who.session.operator.id);
    let (note_text, hand_problem) = match problem {
        Some(Problem::HandOver { note, message }) => (note.as_str(), Some(message.as_str())),
        _ => ("", None),
    };
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
                            " (" time datetime=(at.to_rfc3339()) { (at.to_rfc3339()) } ")"
                            @if !proof.email && !proof.phone { " — not the address or number the visitor now gives" }
                        }
                        _ => "No",
                    }
                }
                dt { "Site" } dd { (t.details.site.name) }
                dt { "Started" } dd { time datetime=(c.created_at.to_rfc3339()) { (c.created_at.to_rfc3339()) } }
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

/// A text field's value checked by `check`, or the sentence saying why not.
fn text(form: &Form, name: &str, check: fn(&str) -> validate::Check<String>) -> Result<String, String> {
    check(form.get(name).unwrap_or_default())
}

/// The form's client message id when it is a valid one; a browser never
/// sends another, and without one a repeat is simply a second message.
fn client_id(form: &Form) -> Option<String> {
    form.get("client_message_id").and_then(|v| validate::client_message_id(v).ok())
}

/// A note's text: the note rule, and something to say.
fn note_body(s: &str) -> validate::Check<String> {
    validate::optional(&validate::NOTE, s)?.ok_or_else(|| "is required".to_owned())
}

/// The sentence of a refusal that belongs beside a form, or the error.
fn beside_form(e: DomainError) -> Result<String, PageError> {
    match e {
        DomainError::Validation(errors) => Ok(errors
            .fields()
            .iter()
            .flat_map(|(field, messages)| messages.iter().map(move |m| format!("{field}: {m}")))
            .collect::<Vec<_>>()
            .join("; ")),
        DomainError::Conflict(why) => Ok(format!("This cannot be done now: {why}.")),
        other => Err(other.into()),
    }
}

pub async fn reply(
    State(s): State<AppState>,
    who: WebSession,
    Conversation(id): Conversation,
    headers: HeaderMap,
    form: Form,
) -> Result<Response, PageError> {
    who.check_form(&headers, form.get(csrf::FIELD))?;
    let typed = form.get("body").unwrap_or_default().to_owned();
    let outcome = match text(&form, "body", validate::message_body) {
        Ok(body) => s.inbox.reply(&who.session, id, body, client_id(&form)).await.map(|_| ()).map_err(beside_form),
        Err(message) => Err(Ok(format!("The reply {message}."))),
    };
    match outcome {
        Ok(()) => {
            s.metrics.message_created("operator");
            Ok(back(id))
        }
        Err(Ok(message)) => render(&s, &who, id, StatusCode::UNPROCESSABLE_ENTITY, Some(Problem::Reply { text: typed, message })).await,
        Err(Err(e)) => Err(e),
    }
}

pub async fn note(
    State(s): State<AppState>,
    who: WebSession,
    Conversation(id): Conversation,
    headers: HeaderMap,
    form: Form,
) -> Result<Response, PageError> {
    who.check_form(&headers, form.get(csrf::FIELD))?;
    let typed = form.get("body").unwrap_or_default().to_owned();
    let outcome = match text(&form, "body", note_body) {
        Ok(body) => s.inbox.note(&who.session, id, body, client_id(&form)).await.map(|_| ()).map_err(beside_form),
        Err(message) => Err(Ok(format!("The note {message}."))),
    };
    match outcome {
        Ok(()) => Ok(back(id)),
        Err(Ok(message)) => render(&s, &who, id, StatusCode::UNPROCESSABLE_ENTITY, Some(Problem::Note { text: typed, message })).await,
        Err(Err(e)) => Err(e),
    }
}

pub async fn take(
    State(s): State<AppState>,
    who: WebSession,
    Conversation(id): Conversation,
    headers: HeaderMap,
    form: Form,
) -> Result<Response, PageError> {
    who.check_form(&headers, form.get(csrf::FIELD))?;
    s.inbox.assign(&who.session, id, None).await?;
    Ok(back(id))
}

/// Assigns an unassigned conversation, or transfers an assigned one; a
/// note makes it a transfer either way, since only a transfer carries one.
pub async fn hand_over(
    State(s): State<AppState>,
    who: WebSession,
    Conversation(id): Conversation,
    headers: HeaderMap,
    form: Form,
) -> Result<Response, PageError> {
    who.check_form(&headers, form.get(csrf::FIELD))?;
    let typed = form.get("note").unwrap_or_default().to_owned();
    let target = form.get("operator_id").and_then(|v| v.parse::<i64>().ok()).filter(|v| *v > 0).map(OperatorId);
    let note = validate::optional(&validate::NOTE, &typed);
    let outcome = match (target, note) {
        (None, _) => Err(Ok("Choose an operator.".to_owned())),
        (_, Err(message)) => Err(Ok(format!("The note {message}."))),
        (Some(target), Ok(note)) => {
            let status = s.inbox.get(&who.session, id).await?.conversation.status;
            let result = if note.is_none() && status == ConversationStatus::Unassigned {
                s.inbox.assign(&who.session, id, Some(target)).await
            } else {
                s.inbox.transfer(&who.session, id, target, note).await
            };
            result.map(|_| ()).map_err(beside_form)
        }
    };
    match outcome {
        Ok(()) => Ok(back(id)),
        Err(Ok(message)) => render(&s, &who, id, StatusCode::UNPROCESSABLE_ENTITY, Some(Problem::HandOver { note: typed, message })).await,
        Err(Err(e)) => Err(e),
    }
}

pub async fn close(
    State(s): State<AppState>,
    who: WebSession,
    Conversation(id): Conversation,
    headers: HeaderMap,
    form: Form,
) -> Result<Response, PageError> {
    who.check_form(&headers, form.get(csrf::FIELD))?;
    s.inbox.close(&who.session, id).await?;
    Ok(back(id))
}

pub async fn reopen(
    State(s): State<AppState>,
    who: WebSession,
    Conversation(id): Conversation,
    headers: HeaderMap,
    form: Form,
) -> Result<Response, PageError> {
    who.check_form(&headers, form.get(csrf::FIELD))?;
    s.inbox.reopen(&who.session, id).await?;
    Ok(back(id))
}
