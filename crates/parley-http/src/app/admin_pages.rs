//! What the admins' pages (the integrations, the settings) share: the
//! admin check, their frames with section links, problems beside forms,
//! notices after a change, and the copy buttons.

use axum::extract::FromRequestParts;
use axum::http::StatusCode;
use axum::http::request::Parts;
use axum::response::{IntoResponse, Redirect, Response};
use maud::{Markup, html};
use parley_domain::DomainError;
use parley_domain::model::Role;

use crate::AppState;
use crate::app::error::PageError;
use crate::app::form::Form;
use crate::app::layout::{minutes_or_seconds, page, respond};
use crate::app::session::WebSession;
use crate::app::{assets, csrf};
use crate::error::{ApiError, sentence};

/// A signed-in admin; an agent gets a 403 page.
pub struct Admin(pub WebSession);

impl FromRequestParts<AppState> for Admin {
    type Rejection = PageError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, PageError> {
        let who = WebSession::from_request_parts(parts, state).await?;
        if who.session.operator.role != Role::Admin {
            return Err(DomainError::Forbidden("only a tenant admin can open this page").into());
        }
        Ok(Self(who))
    }
}

/// The integrations' sections, as (address, label).
const SECTIONS: [(&str, &str); 4] = [
    ("/app/integrations", "Sites and installations"),
    ("/app/integrations/tokens", "Mobile API tokens"),
    ("/app/integrations/webhooks", "Webhooks"),
    ("/app/integrations/verification", "Verification"),
];

/// The settings' sections, as (address, label).
const SETTINGS: [(&str, &str); 4] = [
    ("/app/settings/operators", "Operators"),
    ("/app/settings/sites", "Sites"),
    ("/app/settings/canned", "Canned responses"),
    ("/app/settings/audit", "Audit log"),
];

/// A page of the integrations: its title, the section links (`current`
/// marked), and the copy buttons' script.
pub fn frame(who: &WebSession, title: &str, current: &str, status: StatusCode, main: Markup) -> Response {
    framed(who, "Integrations", &SECTIONS, title, current, status, main)
}

/// A page of the settings, as [`frame`] is one of the integrations.
pub fn settings_frame(who: &WebSession, title: &str, current: &str, status: StatusCode, main: Markup) -> Response {
    framed(who, "Settings", &SETTINGS, title, current, status, main)
}

fn framed(
    who: &WebSession,
    area: &str,
    sections: &[(&str, &str)],
    title: &str,
    current: &str,
    status: StatusCode,
    main: Markup,
) -> Response {
    let body = html! {
        div.integrations {
            nav.sections aria-label=(area) {
                @for (href, label) in sections {
                    a href=(href) aria-current=[(*href == current).then_some("page")] { (label) }
                }
            }
            (main)
        }
        div #announce.visually-hidden aria-live="polite" {}
        script type="module" src=(assets::integrations_script_url()) {}
    };
    respond(status, page(title, Some(who), body))
}

/// The hidden anti-forgery field of a form.
pub fn token_field(who: &WebSession) -> Markup {
    html! { input type="hidden" name=(csrf::FIELD) value=(who.csrf); }
}

/// `value` in a box with a button that copies it (the button shows once
/// the script runs: without it, the text is there to select).
pub fn copyable(id: &str, label: &str, value: &str, block: bool) -> Markup {
    html! {
        div.copyable {
            @if block { pre #(id) { (value) } } @else { code #(id) { (value) } }
            button.copy type="button" data-copy=(id) hidden aria-label={ "Copy " (label) } { "Copy" }
        }
    }
}

/// A sentence saying a form was refused, beside it; its fields point to
/// it by `id` (`aria-describedby`).
pub fn problem(id: &str, message: Option<&str>) -> Markup {
    html! {
        @if let Some(m) = message { p.problem id=(id) role="alert" { (m) } }
    }
}

/// A form the domain refused: why, and what it held, to show it again.
pub struct Refused {
    pub message: String,
    pub held: Form,
}

/// The sentence beside a form, if it was refused.
pub fn message(refused: Option<&Refused>) -> Option<&str> {
    refused.map(|r| r.message.as_str())
}

/// What was typed in a refused form's field, to show it again.
pub fn typed<'a>(refused: Option<&'a Refused>, name: &str) -> &'a str {
    refused.and_then(|r| r.held.get(name)).unwrap_or_default()
}

/// A sentence saying what just happened.
pub fn notice(message: Option<&str>) -> Markup {
    html! {
        @if let Some(m) = message { p.notice role="status" { (m) } }
    }
}

/// A fixed sentence for `?done=` after a redirect: only these, so an
/// address cannot make the page say anything else.
pub fn done_message(query: Option<&str>, known: &[(&'static str, &'static str)]) -> Option<&'static str> {
    let value = url::form_urlencoded::parse(query.unwrap_or_default().as_bytes()).find(|(k, _)| k == "done").map(|(_, v)| v)?;
    known.iter().find(|(key, _)| *key == value).map(|(_, sentence)| *sentence)
}

/// Back to `to` after a change.
pub fn back(to: &str) -> Response {
    Redirect::to(to).into_response()
}

/// A form's address opened as a page: the overview.
pub async fn to_overview() -> Response {
    back("/app/integrations")
}

/// One refusal of a field as the form says it: the field's label before
/// what it must be ("Name must not be blank"), or alone a refusal that is
/// a sentence to the one acting ("you cannot disable your own account").
fn said(field: &str, message: &str) -> String {
    match message.strip_prefix("you ") {
        Some(rest) => format!("You {rest}"),
        None => format!("{} {message}", label(field)),
    }
}

/// What to say beside a form the domain refused, and with which status:
/// the API's own answer to the same refusal, but for invalid fields, which
/// are named as the form labels them, and a limit, which says how long
/// to wait. Any other failure is the error page.
pub fn refusal(e: DomainError) -> Result<(StatusCode, String), PageError> {
    match e {
        DomainError::Validation(errors) => {
            let all: Vec<String> = errors.fields().iter().flat_map(|(field, ms)| ms.iter().map(move |m| said(field, m))).collect();
            Ok((StatusCode::UNPROCESSABLE_ENTITY, sentence(&all.join("; "))))
        }
        DomainError::RateLimited { retry_after_secs } => Ok((
            StatusCode::TOO_MANY_REQUESTS,
            format!("That was one too many for now. Try again in {}.", minutes_or_seconds(retry_after_secs)),
        )),
        e @ (DomainError::Conflict(_) | DomainError::NotSent(_)) => {
            let answer = ApiError::Domain(e).answer();
            Ok((answer.status, answer.message))
        }
        other => Err(other.into()),
    }
}

/// How a form names a field to people: its label's first words.
fn label(field: &str) -> &'static str {
    match field {
        "name" => "Name",
        "domains" => "Domains",
        "url" => "URL",
        "events" => "Events",
        "event" => "Event",
        "expires_in_days" => "Expires after (days)",
        "channel" => "Channel",
        "to" => "To",
        "shortcut" => "Shortcut",
        "email" => "Email",
        "role" => "Role",
        "site_ids" => "Sites",
        "active" => "Can sign in",
        "current_password" => "Current password",
        "widget_title" => "Title",
        "widget_greeting" => "Greeting",
        "accent_color" => "Colour",
        "privacy_text" => "Privacy text",
        "privacy_url" => "Privacy page",
        "locale" => "Language",
        "business_hours" => "Business hours",
        "new_password" => "New password",
        "body" => "Text",
        _ => "A field",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_read_as_sentences_naming_the_field() {
        let (status, text) = refusal(DomainError::invalid("url", "must be an http or https URL")).expect("shown beside the form");
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
        assert_eq!(text, "URL must be an http or https URL.");
        let (status, text) = refusal(DomainError::Conflict("the endpoint is disabled")).expect("shown beside the form");
        assert_eq!((status, text.as_str()), (StatusCode::CONFLICT, "The endpoint is disabled."));
        let (status, text) = refusal(DomainError::RateLimited { retry_after_secs: 600 }).expect("beside the form");
        assert_eq!((status, text.as_str()), (StatusCode::TOO_MANY_REQUESTS, "That was one too many for now. Try again in 10 minutes."));
        assert!(refusal(DomainError::NotFound).is_err(), "not found is the error page");
    }

    #[test]
    fn only_known_notices_are_said() {
        let known = [("revoked", "The token is revoked.")];
        assert_eq!(done_message(Some("done=revoked"), &known), Some("The token is revoked."));
        assert_eq!(done_message(Some("done=<script>"), &known), None);
        assert_eq!(done_message(None, &known), None);
    }
}
