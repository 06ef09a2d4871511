//! Choosing a password through an emailed link: an invited operator's
//! first, or a new one an admin sent a link for (`InvitationService`).
//! The page is for someone not signed in, so its form is guarded like the
//! sign-in form: a token in a cookie beside it and this origin.

use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::Response;
use maud::html;
use parley_domain::DomainError;

use super::error::PageError;
use super::form::Form;
use super::layout::{page, respond};
use super::{cookies, csrf};
use crate::AppState;

const HERE: &str = "/app/password";

/// The form, or a plain page saying the link no longer works.
pub async fn form(State(s): State<AppState>, headers: HeaderMap, RawQuery(query): RawQuery) -> Result<Response, PageError> {
    let token = url::form_urlencoded::parse(query.as_deref().unwrap_or_default().as_bytes())
        .find(|(k, _)| k == "token")
        .map(|(_, v)| v.into_owned())
        .unwrap_or_default();
    render(&s, &headers, &token, StatusCode::OK, None).await
}

pub async fn submit(State(s): State<AppState>, headers: HeaderMap, form: Form) -> Result<Response, PageError> {
    let expected = cookies::read(&headers, cookies::LOGIN_CSRF).unwrap_or_default();
    if !csrf::accepts(&headers, form.get(csrf::FIELD), expected) {
        return Err(PageError::Forged);
    }
    let token = form.get("token").unwrap_or_default().to_owned();
    let password = form.get("password").unwrap_or_default();
    if let Err(problem) = parley_domain::validate::new_password(password) {
        return render(&s, &headers, &token, StatusCode::UNPROCESSABLE_ENTITY, Some(&format!("The password {problem}."))).await;
    }
    if form.get("confirm") != Some(password) {
        return render(&s, &headers, &token, StatusCode::UNPROCESSABLE_ENTITY, Some("The two passwords differ.")).await;
    }
    match s.invitations.set_password(&token, password.to_owned()).await {
        Ok(operator) => {
            let markup = page(
                "Password set",
                None,
                html! {
                    h1 { "Your password is set" }
                    p role="status" { "You can now sign in as " strong { (operator.email) } "." }
                    p { a href="/app/login" { "Sign in" } }
                },
            );
            Ok(respond(StatusCode::OK, markup))
        }
        Err(DomainError::NotFound) => Ok(gone()),
        Err(e) => Err(e.into()),
    }
}

async fn render(s: &AppState, headers: &HeaderMap, token: &str, status: StatusCode, problem: Option<&str>) -> Result<Response, PageError> {
    let holder = match s.invitations.holder(token).await {
        Ok(holder) => holder,
        Err(DomainError::NotFound) => return Ok(gone()),
        Err(e) => return Err(e.into()),
    };
    let form_token = csrf::login_form_token(cookies::read(headers, cookies::LOGIN_CSRF))?;
    let markup = page(
        "Choose your password",
        None,
        html! {
            h1 { "Choose your password" }
            p { "For " strong { (holder.email) } ", " (holder.name) ", on " (holder.tenant_name) "'s team." }
            @if let Some(problem) = problem { p.problem role="alert" #password-problem { (problem) } }
            form.signin method="post" action=(HERE) {
                input type="hidden" name=(csrf::FIELD) value=(form_token);
                input type="hidden" name="token" value=(token);
                input type="email" name="username" value=(holder.email) autocomplete="username" hidden;
                label for="password" { "New password" }
                input #password type="password" name="password" autocomplete="new-password" required minlength=(parley_domain::validate::MIN_PASSWORD_CHARS) maxlength=(parley_domain::validate::MAX_PASSWORD_CHARS)
                    aria-describedby="password-help" aria-invalid=[problem.map(|_| "true")] autofocus;
                p.help #password-help { "At least " (parley_domain::validate::MIN_PASSWORD_CHARS) " characters. A phrase of several words is easy to remember and hard to guess." }
                label for="confirm" { "The same again" }
                input #confirm type="password" name="confirm" autocomplete="new-password" required minlength=(parley_domain::validate::MIN_PASSWORD_CHARS) maxlength=(parley_domain::validate::MAX_PASSWORD_CHARS);
                button type="submit" { "Set my password" }
            }
        },
    );
    let mut response = respond(status, markup);
    response
        .headers_mut()
        .append(header::SET_COOKIE, cookies::set(cookies::LOGIN_CSRF, &form_token, csrf::LOGIN_FORM_LIFETIME, s.web_app.secure_cookies));
    Ok(response)
}

/// The one answer for a link that is unknown, used, expired or whose
/// operator was disabled: which of them is nobody's business.
fn gone() -> Response {
    let markup = page(
        "Link expired",
        None,
        html! {
            h1 { "This link no longer works" }
            p { "A link to choose a password works once, for " (parley_domain::invitations::lifetime_in_words()) ". Ask an admin of your team to send you a new one." }
            p { a href="/app/login" { "Sign in" } }
        },
    );
    respond(StatusCode::NOT_FOUND, markup)
}
