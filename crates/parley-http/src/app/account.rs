//! `/app/account`: every operator's own account: its name and what it is
//! pushed about, its password, its sign-ins and its devices, each of
//! which it can end. Each form is one mobile API call (`PATCH mobile/me`,
//! `mobile/me/password`, `mobile/me/sign-ins`, `mobile/devices`).

use axum::extract::{RawQuery, State};
use axum::http::StatusCode;
use axum::response::Response;
use maud::html;
use parley_domain::model::{DeviceId, TokenId, TokenKind};

use super::admin_pages::{Refused, back, done_message, message, notice, problem, refusal, token_field};
use super::error::PageError;
use super::form::CheckedForm;
use super::layout::{page, respond, when};
use super::path::Id;
use super::session::WebSession;
use crate::AppState;
use crate::requests::mobile::{AccountPatchRequest, PasswordChangeRequest};

pub const HERE: &str = "/app/account";

const DONE: [(&str, &str); 4] = [
    ("saved", "Your account is saved."),
    ("password", "Your password is changed. Every other sign-in of yours has ended."),
    ("ended", "The sign-in has ended."),
    ("removed", "The device is removed: it gets no more notifications."),
];

/// Which form was refused.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Part {
    Profile,
    Password,
}

pub async fn to_page() -> Response {
    back(HERE)
}

pub async fn page_view(State(s): State<AppState>, who: WebSession, RawQuery(query): RawQuery) -> Result<Response, PageError> {
    render(&s, &who, StatusCode::OK, done_message(query.as_deref(), &DONE), None).await
}

async fn render(
    s: &AppState,
    who: &WebSession,
    status: StatusCode,
    done: Option<&str>,
    refused: Option<(Part, Refused)>,
) -> Result<Response, PageError> {
    let me = s.account.me(&who.session).await?;
    let sign_ins = s.account.sign_ins(&who.session).await?;
    let devices = s.devices.list(&who.session).await?;
    let held = |part: Part| refused.as_ref().filter(|(p, _)| *p == part).map(|(_, r)| r);
    let profile = held(Part::Profile);
    let password = held(Part::Password);
    let main = html! {
        h1 { "Your account" }
        (notice(done))
        section aria-labelledby="profile" {
            h2 #profile { "Name and notifications" }
            form.stack method="post" action=(HERE) {
                (token_field(who))
                label for="account-name" { "Name" }
                input #account-name name="name" required maxlength=(parley_domain::validate::MAX_NAME_CHARS) autocomplete="name"
                    value=(profile.map_or(me.name.as_str(), |r| typed_or(r, "name")));
                p.help { "Visitors see it beside your replies." }
                fieldset {
                    legend { "Notify me on my devices about" }
                    label.check {
                        input type="checkbox" name="notify_unassigned" value="true" checked[me.notify.unassigned];
                        " New conversations, and messages in conversations nobody has taken"
                    }
                    input type="hidden" name="notify_unassigned" value="false";
                    label.check {
                        input type="checkbox" name="notify_mine" value="true" checked[me.notify.mine];
                        " Messages in my conversations, and conversations handed to me"
                    }
                    input type="hidden" name="notify_mine" value="false";
                }
                (problem("profile-problem", message(profile)))
                button type="submit" { "Save" }
            }
        }
        section aria-labelledby="password" {
            h2 #password { "Password" }
            form.stack method="post" action={ (HERE) "/password" } {
                (token_field(who))
                input type="email" name="username" value=(me.email) autocomplete="username" hidden;
                label for="current-password" { "Current password" }
                input #current-password type="password" name="current_password" required autocomplete="current-password";
                label for="new-password" { "New password" }
                input #new-password type="password" name="new_password" required minlength=(parley_domain::validate::MIN_PASSWORD_CHARS) maxlength=(parley_domain::validate::MAX_PASSWORD_CHARS) autocomplete="new-password"
                    aria-describedby="new-password-help";
                p.help #new-password-help { "At least " (parley_domain::validate::MIN_PASSWORD_CHARS) " characters. Every other sign-in of yours ends; this one stays." }
                label for="confirm-password" { "The new one again" }
                input #confirm-password type="password" name="confirm" required minlength=(parley_domain::validate::MIN_PASSWORD_CHARS) maxlength=(parley_domain::validate::MAX_PASSWORD_CHARS) autocomplete="new-password";
                (problem("password-problem", message(password)))
                button type="submit" { "Change password" }
            }
        }
        section aria-labelledby="sign-ins" {
            h2 #sign-ins { "Where you are signed in" }
            ul.plain {
                @for r in &sign_ins {
                    li.sign-in {
                        span {
                            strong { (kind_label(r.kind)) }
                            @if let Some(name) = &r.name { " · " (name) }
                            @if r.id == who.session.token_id { " · " em { "this browser" } }
                            br;
                            span.muted {
                                "Since " (when(r.created_at))
                                @if let Some(used) = r.last_used_at { ", last used " (when(used)) }
                                ", until " (when(r.expires_at))
                            }
                        }
                        form method="post" action={ (HERE) "/sign-ins/" (r.id.0) "/end" } {
                                (token_field(who))
                                @if r.id == who.session.token_id {
                                    button type="submit" { "Sign out" }
                                } @else {
                                    button type="submit" aria-label={ "End the sign-in: " (kind_label(r.kind)) (r.name.as_deref().map(|n| format!(", {n}")).unwrap_or_default()) } { "End" }
                                }
                            }
                    }
                }
            }
        }
        section aria-labelledby="devices" {
            h2 #devices { "Devices that get notifications" }
            @if devices.is_empty() { p.empty { "None. Use " em { "Enable notifications" } " at the top of the page, or sign in on the mobile app." } }
            ul.plain {
                @for d in &devices {
                    li.sign-in {
                        span {
                            strong { (d.name.as_deref().unwrap_or(d.platform.as_str())) }
                            " · " (d.platform.as_str())
                            br;
                            span.muted {
                                "Added " (when(d.created_at))
                                @if let Some(at) = d.last_push_at { ", last notified " (when(at)) }
                            }
                        }
                        form method="post" action={ (HERE) "/devices/" (d.id.0) "/remove" } {
                            (token_field(who))
                            button type="submit" aria-label={ "Remove the device " (d.name.as_deref().unwrap_or(d.platform.as_str())) } { "Remove" }
                        }
                    }
                }
            }
        }
    };
    Ok(respond(status, page("Your account", Some(who), main)))
}

fn typed_or<'a>(r: &'a Refused, name: &str) -> &'a str {
    r.held.get(name).unwrap_or_default()
}

fn kind_label(kind: TokenKind) -> &'static str {
    match kind {
        TokenKind::Login => "Mobile app",
        TokenKind::Session => "Web app",
        TokenKind::Personal => "Personal token",
    }
}

pub async fn save(State(s): State<AppState>, who: WebSession, CheckedForm(form): CheckedForm) -> Result<Response, PageError> {
    // The form shows the name, so it sends it: a blank one is refused,
    // where the API's patch would keep the name.
    let saved = match form.read::<AccountPatchRequest>() {
        Ok(_) if form.get("name").is_none_or(|n| n.trim().is_empty()) => Err(parley_domain::DomainError::invalid("name", "is required")),
        Ok(input) => s.account.update(&who.session, input.into()).await.map(drop),
        Err(e) => Err(e),
    };
    match saved {
        Ok(()) => Ok(back(&format!("{HERE}?done=saved"))),
        Err(e) => {
            let (status, message) = refusal(e)?;
            render(&s, &who, status, None, Some((Part::Profile, Refused { message, held: form }))).await
        }
    }
}

pub async fn change_password(State(s): State<AppState>, who: WebSession, CheckedForm(form): CheckedForm) -> Result<Response, PageError> {
    let changed = match form.read::<PasswordChangeRequest>() {
        Ok(_) if form.get("confirm") != form.get("new_password") => {
            Err(parley_domain::DomainError::invalid("new_password", "and its repetition differ"))
        }
        Ok(input) => s.account.change_password(&who.session, input.current_password.0, input.new_password.0).await,
        Err(e) => Err(e),
    };
    match changed {
        Ok(()) => Ok(back(&format!("{HERE}?done=password"))),
        Err(e) => {
            let (status, message) = refusal(e)?;
            // What was typed in password fields is never sent back.
            render(&s, &who, status, None, Some((Part::Password, Refused { message, held: Default::default() }))).await
        }
    }
}

pub async fn end_sign_in(State(s): State<AppState>, who: WebSession, Id(id): Id, _form: CheckedForm) -> Result<Response, PageError> {
    s.account.end_sign_in(&who.session, TokenId(id)).await?;
    if TokenId(id) == who.session.token_id {
        // This browser's own sign-in: its cookie goes too, as on sign-out.
        let mut response = back("/app/login");
        response
            .headers_mut()
            .append(axum::http::header::SET_COOKIE, super::cookies::clear(super::cookies::SESSION, s.web_app.secure_cookies));
        return Ok(response);
    }
    Ok(back(&format!("{HERE}?done=ended")))
}

pub async fn remove_device(State(s): State<AppState>, who: WebSession, Id(id): Id, _form: CheckedForm) -> Result<Response, PageError> {
    s.devices.remove(&who.session, DeviceId(id)).await?;
    Ok(back(&format!("{HERE}?done=removed")))
}
