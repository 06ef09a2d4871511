//! The conversation page's markup. Every region the live script swaps
//! (`conversation-list`, `summary`, `messages`, `actions`, `visitor`)
//! has an id of its own.

use maud::{Markup, html};
use parley_domain::attachments::links::Links;
use parley_domain::inbox::Transcript;
use parley_domain::model::{AttachmentRef, ConversationDetails, ConversationId, ConversationStatus, Message, SenderKind};

use super::{Problem, Which, path};
use crate::app::csrf;
use crate::app::layout::{page as frame, visitor_name, when};
use crate::app::session::WebSession;

/// Where the page opens after a form: the latest message, with the reply
/// form below it, so a long thread is not scrolled through again.
pub const LATEST: &str = "latest";

/// The page: on a wide screen three panes (the open conversations, this
/// one, its details), on a phone this one alone.
pub fn page(who: &WebSession, t: &Transcript, listed: &[ConversationDetails], problem: Option<&Problem>, links: &Links) -> Markup {
    let id = t.details.conversation.id;
    let title = visitor_name(&t.details.visitor);
    let last = t.messages.len().saturating_sub(1);
    let main = html! {
        div.conversation-page data-live="conversation" data-cursor=(t.cursor.to_string()) data-conversation=(id.0)
            data-url=(path(id, None))
            data-last=(t.details.conversation.last_message_at.to_rfc3339()) {
            nav.list-pane aria-label="Open conversations" {
                div #conversation-list {
                    p { a href="/app" { "All conversations" } }
                    @if listed.is_empty() { p.empty { "No open conversations." } }
                    ul.conversations {
                        @for c in listed {
                            li aria-current=[(c.conversation.id == id).then_some("page")] { (crate::app::inbox::row(c)) }
                        }
                    }
                }
            }
            section.thread aria-labelledby="title" {
                p { a href="/app" { "← Inbox" } }
                h1 #title { (title) }
                div #summary { (summary(t)) }
                @if t.earlier_left_out {
                    p.earlier { "Earlier messages are not shown; the mobile API lists them all." }
                }
                ol #messages.messages aria-label="Messages" {
                    @for (i, m) in t.messages.iter().enumerate() { (message(m, i == last, links)) }
                }
                // "The visitor is typing", shown by the page's script.
                p #typing.typing aria-live="polite" hidden {}
                (reply_forms(who, id, problem))
            }
            aside #details aria-label="Conversation details" {
                (actions(who, t, problem))
                (visitor(t))
            }
        }
        div #announce.visually-hidden aria-live="polite" {}
        script type="module" src=(crate::app::assets::live_script_url()) {}
    };
    frame(&title, Some(who), main)
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
            @if let (ConversationStatus::Assigned, Some(a)) = (c.status, &t.details.assignee) { " to " strong { (a.name) } }
            " · " (t.details.site.name)
        }
    }
}

fn message(m: &Message, latest: bool, links: &Links) -> Markup {
    let (class, sender) = match m.sender.kind {
        SenderKind::Visitor => ("visitor", m.sender.name.clone().unwrap_or_else(|| "Visitor".into())),
        SenderKind::Operator => ("operator", m.sender.name.clone().unwrap_or_else(|| "Operator".into())),
        SenderKind::System => ("system", String::new()),
    };
    html! {
        li.message.(class).note[m.internal] data-id=(m.id.0) id=[latest.then_some(LATEST)] {
            @if m.sender.kind != SenderKind::System {
                p.meta {
                    span.sender { (sender) }
                    @if m.internal { " " span.badge { "Note · operators only" } }
                    " " (when(m.created_at))
                    // The read receipt: the visitor's widget showed it.
                    @if let Some(seen) = m.read_by_visitor_at { " · " span.seen { "Seen " (when(seen)) } }
                }
            }
            @if !m.body.is_empty() {
                p.body {
                    (m.body)
                    // Who closed or reopened it, for operators' eyes.
                    @if let (SenderKind::System, Some(actor)) = (m.sender.kind, &m.sender.name) { " by " (actor) }
                }
            }
            @if !m.attachments.is_empty() {
                ul.files {
                    @for a in &m.attachments { li { (file(a, links)) } }
                }
            }
        }
    }
}

/// A file of a message: a picture as its thumbnail, anything else as a
/// link with its name and size; both open the signed link.
fn file(a: &AttachmentRef, links: &Links) -> Markup {
    let (url, thumbnail) = links.of(a);
    html! {
        a.file href=(url) target="_blank" rel="noopener noreferrer" {
            @if let (Some(src), Some(w), Some(h)) = (thumbnail, a.width, a.height) {
                @let scale = (240.0 / f64::from(w.max(h))).min(1.0);
                img src=(src) alt=(a.name) loading="lazy" width=((f64::from(w) * scale).round() as u32) height=((f64::from(h) * scale).round() as u32);
            } @else {
                "📄 " (a.name) " · " (parley_domain::attachments::names::bytes(a.size))
            }
        }
    }
}

/// The reply and the note: two forms, so that which one a text goes to
/// is never a checkbox away. Each carries a fresh client message id, so
/// a form sent twice (a double click, a resubmitted POST) adds one message.
fn reply_forms(who: &WebSession, id: ConversationId, problem: Option<&Problem>) -> Markup {
    html! {
        (compose(who, id, Compose { which: Which::Reply, field: "reply", label: "Reply to the visitor", rows: 3, button: "Send reply" }, problem))
        (compose(who, id, Compose { which: Which::Note, field: "note", label: "Internal note (only operators see it)", rows: 2, button: "Add note" }, problem))
    }
}

/// What differs between the reply form and the note form.
struct Compose {
    which: Which,
    /// The text field's id, also the form's action.
    field: &'static str,
    label: &'static str,
    rows: u8,
    button: &'static str,
}

fn compose(who: &WebSession, id: ConversationId, c: Compose, problem: Option<&Problem>) -> Markup {
    let (text, problem) = Problem::of(problem, c.which);
    let problem_id = format!("{}-problem", c.field);
    html! {
        form.compose.note-form[c.which == Which::Note] method="post" action=(path(id, Some(c.field))) {
            (hidden(who))
            @if let Some(id) = csrf::form_message_id() { input type="hidden" name="client_message_id" value=(id); }
            label for=(c.field) { (c.label) }
            @if let Some(p) = problem { p.problem id=(problem_id) role="alert" { (p) } }
            textarea id=(c.field) name="body" rows=(c.rows) required aria-describedby=[problem.map(|_| &problem_id)] { (text) }
            button type="submit" { (c.button) }
            // Files, through the page's script (shown by it): chosen,
            // dropped or pasted, uploaded at once, sent with the reply.
            // After the button, so Tab goes from the text to sending.
            @if c.which == Which::Reply {
                input type="hidden" name="attachment_ids" value="";
                div.attachments hidden {
                    label.visually-hidden for="reply-files" { "Files for this reply" }
                    input #reply-files type="file" multiple hidden;
                    button.attach type="button" aria-controls="reply-files" { "Attach files" }
                    ul.tray aria-label="Files for this reply" {}
                }
            }
        }
    }
}

/// Take, hand over, close and reopen, as the conversation's state allows.
/// Take carries the assignee the page shows, so that taking a
/// conversation someone took meanwhile is refused rather than done.
fn actions(who: &WebSession, t: &Transcript, problem: Option<&Problem>) -> Markup {
    let assignees = &t.assignees;
    let c = &t.details.conversation;
    let id = c.id;
    let mine = c.assignee_id == Some(who.session.operator.id);
    let (note_text, hand_problem) = Problem::of(problem, Which::HandOver);
    // A refused hand-over whose form is gone (nobody left to choose)
    // still says why, above the actions.
    let (_, action_problem) = Problem::of(problem, Which::Actions);
    let action_problem = action_problem.or(hand_problem.filter(|_| assignees.is_empty()));
    html! {
        section #actions.actions aria-labelledby="actions-title" {
            h2 #actions-title { "Actions" }
            @if let Some(p) = action_problem { p #actions-problem.problem role="alert" { (p) } }
            @if c.status == ConversationStatus::Closed {
                form method="post" action=(path(id, Some("reopen"))) {
                    (hidden(who)) button type="submit" { "Reopen" }
                }
            } @else {
                @if !mine {
                    form method="post" action=(path(id, Some("take"))) {
                        (hidden(who))
                        input type="hidden" name="seen" value=(c.assignee_id.map(|a| a.0.to_string()).unwrap_or_default());
                        button type="submit" {
                            @match &t.details.assignee {
                                Some(a) => { "Take over from " (a.name) }
                                None => "Take it",
                            }
                        }
                    }
                }
                @if !assignees.is_empty() {
                    form.hand-over method="post" action=(path(id, Some("hand-over"))) {
                        (hidden(who))
                        label for="operator" { "Hand over to" }
                        @if let Some(p) = hand_problem { p #hand-problem.problem role="alert" { (p) } }
                        select #operator name="operator_id" required aria-describedby=[hand_problem.map(|_| "hand-problem")] {
                            option value="" selected disabled { "Choose an operator" }
                            @for a in assignees { option value=(a.id.0) { (a.name) " (" (a.email) ")" } }
                        }
                        label for="handover-note" { "Note for them (optional, only operators see it)" }
                        textarea #handover-note name="note" rows="2" { (note_text) }
                        button type="submit" { "Hand over" }
                    }
                }
                form method="post" action=(path(id, Some("close"))) {
                    (hidden(who)) button.secondary type="submit" { "Close" }
                }
            }
            // Asked again on a page of its own: it cannot be undone.
            @if who.session.operator.role == parley_domain::model::Role::Admin {
                p { a.danger href=(path(id, Some("erase"))) { "Erase this conversation…" } }
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
                dt { "Email" } dd {
                    (p.email.as_deref().unwrap_or("Not given"))
                    @if v.email_proven_by() == Some("site") {
                        " " span.proven { "(proven by the site)" }
                    }
                }
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
                dt { "Identified" }
                dd.identified {
                    @match &v.user_id {
                        Some(user) => { "Yes, by the site: user " strong { (user) } }
                        None => "No",
                    }
                }
                @if !v.attributes.is_empty() {
                    dt { "Attributes" }
                    dd.attributes {
                        ul {
                            @for (key, value) in &v.attributes {
                                li { (key) ": " (attribute_text(value)) }
                            }
                        }
                    }
                }
                dt { "Site" } dd { (t.details.site.name) }
                dt { "Started" } dd { (when(c.created_at)) }
            }
        }
    }
}

/// An attribute's value as text: a string as it is, anything else as JSON.
fn attribute_text(value: &serde_json::Value) -> String {
    match value {
        serde_json::Value::String(text) => text.clone(),
        other => other.to_string(),
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
