//! Signing in to the web app and out of it.
//!
//! Sign-in goes through the same checks and limits as the mobile API's
//! (`AuthService::login`): the same answer and cost for an unknown email
//! and a wrong password, failures counted per account and per address.

use std::time::Duration;

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use maud::html;
use parley_domain::DomainError;
use parley_domain::auth::{LoginInput, SignIn};

use super::error::PageError;
use super::form::{CheckedForm, Form};
use super::layout::{page, respond};
use super::session::WebSession;
use super::{cookies, csrf};
use crate::AppState;
use crate::extract::ClientCaller;

/// How long a sign-in form may be left open before it is submitted.
const FORM_LIFETIME: Duration = Duration::from_secs(3600);

/// The sign-in form, or the inbox for someone signed in already.
pub async fn form(State(s): State<AppState>, session: Option<WebSession>) -> Result<Response, PageError> {
    if session.is_some() {
        return Ok(Redirect::to("/app").into_response());
    }
    sign_in_page(&s, StatusCode::OK, "", None)
}

/// The form with a fresh anti-forgery token, set as a cookie beside it.
fn sign_in_page(s: &AppState, status: StatusCode, email: &str, problem: Option<&str>) -> Result<Response, PageError> {
    let token = parley_domain::ids::login_form_token()?;
    let markup = page(
        "Sign in",
        None,
        html! {
            h1 { "Sign in" }
            @if let Some(problem) = problem {
                p.problem role="alert" { (problem) }
            }
            form.signin method="post" action="/app/login" {
                input type="hidden" name=(csrf::FIELD) value=(token);
                label for="email" { "Email" }
                input #email type="email" name="email" value=(email) autocomplete="username" required autofocus[email.is_empty()];
                label for="password" { "Password" }
                input #password type="password" name="password" autocomplete="current-password" required autofocus[!email.is_empty()];
                button type="submit" { "Sign in" }
            }
        },
    );
    let mut response = respond(status, markup);
    response.headers_mut().append(header::SET_COOKIE, cookies::set(cookies::LOGIN_CSRF, &token, FORM_LIFETIME, s.web_app.secure_cookies));
    Ok(response)
}

pub async fn submit(
    State(s): State<AppState>,
    ClientCaller(caller): ClientCaller,
    headers: HeaderMap,
    form: Form,
) -> Result<Response, PageError> {
    let expected = cookies::read(&headers, cookies::LOGIN_CSRF).unwrap_or_default();
    if !csrf::accepts(&headers, form.get(csrf::FIELD), expected) {
        return Err(PageError::Forged);
    }
    let email = form.get("email").unwrap_or_default().to_owned();
    let input = LoginInput { email: email.clone(), password: form.get("password").unwrap_or_default().to_owned(), device_name: None };
    match s.auth.login(caller.key(), input, SignIn::Web).await {
        Ok(outcome) => {
            let mut response = Redirect::to("/app").into_response();
            let secure = s.web_app.secure_cookies;
            let headers = response.headers_mut();
            headers.append(header::SET_COOKIE, cookies::set(cookies::SESSION, &outcome.token, s.auth.session_ttl(), secure));
            headers.append(header::SET_COOKIE, cookies::clear(cookies::LOGIN_CSRF, secure));
            Ok(response)
        }
        Err(DomainError::InvalidCredentials) => sign_in_page(&s, StatusCode::UNAUTHORIZED, &email, Some("The email or password is wrong.")),
        Err(DomainError::RateLimited { retry_after_secs }) => {
            let wait = retry_after_secs.max(1);
            let problem = format!("Too many attempts. Try again in {}.", minutes_or_seconds(wait));
            let mut response = sign_in_page(&s, StatusCode::TOO_MANY_REQUESTS, &email, Some(&problem))?;
            response.headers_mut().insert(header::RETRY_AFTER, wait.into());
            Ok(response)
        }
        Err(other) => Err(other.into()),
    }
}

fn minutes_or_seconds(secs: u64) -> String {
    match secs {
        0..=1 => "a second".into(),
        2..=90 => format!("{secs} seconds"),
        _ => format!("{} minutes", secs.div_ceil(60)),
    }
}

/// Ends the session (it is revoked, not only forgotten by the browser).
pub async fn logout(State(s): State<AppState>, who: WebSession, _: CheckedForm) -> Result<Response, PageError> {
    s.auth.logout(&who.session).await?;
    let mut response = Redirect::to("/app/login").into_response();
    response.headers_mut().append(header::SET_COOKIE, cookies::clear(cookies::SESSION, s.web_app.secure_cookies));
    Ok(response)
}
