//! Signing in to the web app and out of it.
//!
//! Sign-in goes through the same checks and limits as the mobile API's
//! (`AuthService::login`): the same answer and cost for an unknown email
//! and a wrong password, failures counted per account and per address.

use std::time::Duration;

use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use maud::html;
use parley_domain::DomainError;
use parley_domain::auth::{LoginInput, SignIn};

use super::error::PageError;
use super::form::{CheckedForm, Form};
use super::layout::minutes_or_seconds;
use super::layout::{page, respond};
use super::session::WebSession;
use super::{cookies, csrf, next};
use crate::AppState;
use crate::extract::ClientCaller;

/// How long a browser keeps its device mark (the mark itself is honoured
/// as long).
const DEVICE_MARK_LIFETIME: Duration = parley_domain::auth::DEVICE_MARK_LIFETIME;

/// The sign-in form, or where it leads for someone signed in already.
pub async fn form(
    State(s): State<AppState>,
    session: Option<WebSession>,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
) -> Result<Response, PageError> {
    let back =
        query.as_deref().and_then(|q| url::form_urlencoded::parse(q.as_bytes()).find(|(k, _)| k == "next").map(|(_, v)| v.into_owned()));
    let back = next::safe(back.as_deref());
    if session.is_some() {
        return Ok(Redirect::to(back.unwrap_or(next::HOME)).into_response());
    }
    let page = SignInPage { email: "", problem: None, next: back };
    sign_in_page(&s, &headers, StatusCode::OK, page)
}

/// What the sign-in page shows besides its fields.
struct SignInPage<'a> {
    email: &'a str,
    problem: Option<&'a str>,
    /// The page to go back to once signed in (checked by `next::safe`).
    next: Option<&'a str>,
}

/// The form with its anti-forgery token, set as a cookie beside it (the
/// cookie's own, when the request has one; see `csrf::login_form_token`).
fn sign_in_page(s: &AppState, headers: &HeaderMap, status: StatusCode, p: SignInPage<'_>) -> Result<Response, PageError> {
    let SignInPage { email, problem, next: back } = p;
    let token = csrf::login_form_token(cookies::read(headers, cookies::LOGIN_CSRF))?;
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
                @if let Some(back) = back { input type="hidden" name="next" value=(back); }
                label for="email" { "Email" }
                input #email type="email" name="email" value=(email) autocomplete="username" required autofocus[email.is_empty()];
                label for="password" { "Password" }
                input #password type="password" name="password" autocomplete="current-password" required autofocus[!email.is_empty()];
                button type="submit" { "Sign in" }
            }
        },
    );
    let mut response = respond(status, markup);
    response
        .headers_mut()
        .append(header::SET_COOKIE, cookies::set(cookies::LOGIN_CSRF, &token, csrf::LOGIN_FORM_LIFETIME, s.web_app.secure_cookies));
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
    let back = next::safe(form.get("next"));
    // What cannot be an address is refused before any lookup, as the
    // mobile login refuses it (a NUL byte, kilobytes of text).
    if parley_domain::validate::email(&email).is_err() {
        let page = SignInPage { email: &email, problem: Some("Enter the email address you sign in with."), next: back };
        return sign_in_page(&s, &headers, StatusCode::UNPROCESSABLE_ENTITY, page);
    }
    let input = LoginInput {
        email: email.clone(),
        password: form.get("password").unwrap_or_default().to_owned(),
        device_name: None,
        // A browser that signed in before is judged by its own failures.
        device_mark: cookies::read(&headers, cookies::DEVICE).map(str::to_owned),
    };
    match s.auth.login(caller.key(), input, SignIn::Web).await {
        Ok(outcome) => {
            let mut response = Redirect::to(back.unwrap_or(next::HOME)).into_response();
            let secure = s.web_app.secure_cookies;
            let headers = response.headers_mut();
            headers.append(header::SET_COOKIE, cookies::set(cookies::SESSION, &outcome.token, s.auth.session_ttl(), secure));
            headers.append(header::SET_COOKIE, cookies::clear(cookies::LOGIN_CSRF, secure));
            headers.append(header::SET_COOKIE, cookies::set(cookies::DEVICE, &outcome.device_mark, DEVICE_MARK_LIFETIME, secure));
            Ok(response)
        }
        Err(DomainError::InvalidCredentials) => {
            let page = SignInPage { email: &email, problem: Some("The email or password is wrong."), next: back };
            sign_in_page(&s, &headers, StatusCode::UNAUTHORIZED, page)
        }
        Err(DomainError::RateLimited { retry_after_secs }) => {
            let wait = retry_after_secs.max(1);
            let problem = format!("Too many attempts. Try again in {}.", minutes_or_seconds(wait));
            let page = SignInPage { email: &email, problem: Some(&problem), next: back };
            let mut response = sign_in_page(&s, &headers, StatusCode::TOO_MANY_REQUESTS, page)?;
            response.headers_mut().insert(header::RETRY_AFTER, wait.into());
            Ok(response)
        }
        Err(other) => Err(other.into()),
    }
}

/// Ends the session (it is revoked, not only forgotten by the browser).
pub async fn logout(State(s): State<AppState>, who: WebSession, _: CheckedForm) -> Result<Response, PageError> {
    s.auth.logout(&who.session).await?;
    let mut response = Redirect::to("/app/login").into_response();
    response.headers_mut().append(header::SET_COOKIE, cookies::clear(cookies::SESSION, s.web_app.secure_cookies));
    Ok(response)
}
