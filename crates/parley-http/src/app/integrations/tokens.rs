//! Personal access tokens for trying the mobile API: made with a name and
//! an expiry, shown once, listed with their last use, revoked.

use crate::requests::admin::PersonalTokenCreateRequest;
use axum::extract::{RawQuery, State};
use axum::http::StatusCode;
use axum::response::Response;
use maud::html;
use parley_domain::model::{PersonalToken, TokenId};

use crate::AppState;
use crate::app::admin_pages::{Admin, Refused, back, copyable, done_message, frame, message, notice, problem, refusal, token_field, typed};
use crate::app::error::PageError;
use crate::app::form::CheckedForm;
use crate::app::layout::when;
use crate::app::path::Id;
use crate::app::session::WebSession;

const HERE: &str = "/app/integrations/tokens";

const DONE: [(&str, &str); 1] = [("revoked", "The token is revoked: the mobile API refuses it from now on.")];

/// Expiry choices offered, in days; the API takes any from 1 to 365.
const EXPIRIES: [u32; 4] = [7, 30, 90, 365];

pub async fn to_page() -> Response {
    back(HERE)
}

pub async fn page(State(s): State<AppState>, Admin(who): Admin, RawQuery(query): RawQuery) -> Result<Response, PageError> {
    render(&s, &who, StatusCode::OK, View { done: done_message(query.as_deref(), &DONE), ..View::default() }).await
}

#[derive(Default)]
struct View<'a> {
    done: Option<&'a str>,
    /// A token just made, with its secret: shown this once.
    created: Option<(PersonalToken, String)>,
    refused: Option<Refused>,
}

async fn render(s: &AppState, who: &WebSession, status: StatusCode, view: View<'_>) -> Result<Response, PageError> {
    let (refused, message) = (view.refused.as_ref(), message(view.refused.as_ref()));
    let tokens = s.auth.personal_tokens(&who.session).await?;
    let now = s.web_app.clock.now();
    let api = format!("{}/api/v1", s.web_app.public_url);
    let main = html! {
        h1 { "Mobile API tokens" }
        (notice(view.done))
        p { "A personal access token is a bearer token that acts as you, without a password: for testing the mobile API (" code { (api) "/mobile/…" } ") from an app or a script. It opens the mobile API only, never the admin API: still, keep it like a password, give it a short life, and revoke it when the test is over. It is yours alone; other admins neither see nor revoke it." }
        @if let Some((token, secret)) = &view.created {
            section.created aria-labelledby="created" {
                h2 #created { "Token “" (token.name) "” is ready" }
                p role="status" { "Copy it now: it is shown this once and cannot be shown again." }
                (copyable("new-token", "the token", secret, false))
                p.help { "Send it as " code { "Authorization: Bearer <token>" } ". It expires " (when(token.expires_at)) "." }
            }
        }
        section aria-labelledby="new-token-heading" {
            h2 #new-token-heading { "Make a token" }
            form.stack method="post" action=(HERE) {
                (token_field(who))
                label for="token-name" { "What it is for" }
                input #token-name name="name" required maxlength=(parley_domain::validate::MAX_NAME_CHARS) placeholder="iOS app test" value=(typed(refused, "name"))
                    aria-invalid=[message.map(|_| "true")] aria-describedby=[message.map(|_| "token-problem")];
                label for="token-expiry" { "Expires after" }
                @let chosen = Some(typed(refused, "expires_in_days")).filter(|d| EXPIRIES.iter().any(|e| e.to_string() == *d)).unwrap_or("30");
                select #token-expiry name="expires_in_days" {
                    @for days in EXPIRIES { option value=(days) selected[days.to_string() == chosen] { (days) " days" } }
                }
                (problem("token-problem", message))
                button type="submit" { "Make token" }
            }
        }
        section aria-labelledby="tokens-heading" {
            h2 #tokens-heading { "Your tokens" }
            @if tokens.is_empty() { p.empty { "None yet." } } @else {
                table.list {
                    thead { tr { th scope="col" { "Name" } th scope="col" { "Made" } th scope="col" { "Expires" } th scope="col" { "Last used" } th scope="col" { span.visually-hidden { "Actions" } } } }
                    tbody {
                        @for t in &tokens {
                            tr data-token=(t.id.0) {
                                td { (t.name) }
                                td { (when(t.created_at)) }
                                td { (when(t.expires_at)) @if t.expires_at <= now { " (expired)" } }
                                td { @if let Some(at) = t.last_used_at { (when(at)) } @else { "Never" } }
                                td {
                                    form method="post" action={ (HERE) "/" (t.id.0) "/revoke" } {
                                        (token_field(who))
                                        button type="submit" aria-label={ "Revoke " (t.name) } { "Revoke" }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    };
    Ok(frame(who, "Mobile API tokens", HERE, status, main))
}

/// Makes a token and shows it in this answer, once; nothing keeps it to
/// show again.
pub async fn create(State(s): State<AppState>, Admin(who): Admin, CheckedForm(form): CheckedForm) -> Result<Response, PageError> {
    let made = match form.read::<PersonalTokenCreateRequest>() {
        Ok(input) => s.auth.create_personal_token(&who.session, input.into()).await,
        Err(e) => Err(e),
    };
    match made {
        Ok(created) => render(&s, &who, StatusCode::CREATED, View { created: Some(created), ..View::default() }).await,
        Err(e) => {
            let (status, message) = refusal(e)?;
            render(&s, &who, status, View { refused: Some(Refused { message, held: form }), ..View::default() }).await
        }
    }
}

pub async fn revoke(State(s): State<AppState>, Admin(who): Admin, Id(id): Id, _form: CheckedForm) -> Result<Response, PageError> {
    s.auth.revoke_personal_token(&who.session, TokenId(id)).await?;
    Ok(back(&format!("{HERE}?done=revoked")))
}
