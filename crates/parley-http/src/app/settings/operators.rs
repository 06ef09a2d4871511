//! The team: admins invite operators by email, change their role, sites
//! and name, disable them, and send them a link to choose a new password.
//! Each form is one admin API call (`admin/operators/invite`, `PATCH
//! admin/operators/{id}`, `admin/operators/{id}/password-link`).

use axum::extract::{RawQuery, State};
use axum::http::StatusCode;
use axum::response::Response;
use maud::{Markup, html};
use parley_domain::invitations::lifetime_in_words;
use parley_domain::model::{Operator, OperatorId, Role, Site};

use crate::AppState;
use crate::app::admin_pages::{Admin, Refused, back, done_message, message, notice, problem, refusal, settings_frame, token_field, typed};
use crate::app::error::PageError;
use crate::app::form::CheckedForm;
use crate::app::layout::when;
use crate::app::path::Id;
use crate::app::session::WebSession;
use crate::requests::admin::{OperatorInviteRequest, OperatorPatchRequest};

pub const HERE: &str = "/app/settings/operators";

const DONE: [(&str, &str); 4] = [
    ("invited", "The invitation is sent: the link in it works for {lifetime}."),
    ("unsent", "The operator is added, but the email could not be sent. Send the link again below."),
    ("saved", "The operator is saved."),
    ("link", "The link is sent: it works for {lifetime}."),
];

pub async fn to_page() -> Response {
    back(HERE)
}

pub async fn page(State(s): State<AppState>, Admin(who): Admin, RawQuery(query): RawQuery) -> Result<Response, PageError> {
    let done = done_message(query.as_deref(), &DONE).map(|sentence| sentence.replace("{lifetime}", &lifetime_in_words()));
    render(&s, &who, StatusCode::OK, done.as_deref(), None).await
}

/// The form refused, and which operator it was for (`None`: the invitation).
type Held = (Option<i64>, Refused);

async fn render(
    s: &AppState,
    who: &WebSession,
    status: StatusCode,
    done: Option<&str>,
    refused: Option<Held>,
) -> Result<Response, PageError> {
    let operators = s.admin.operators(&who.session).await?;
    let sites = s.admin.sites(&who.session).await?;
    let refused_for = |id: Option<i64>| refused.as_ref().filter(|(at, _)| *at == id).map(|(_, r)| r);
    let new = refused_for(None);
    let main = html! {
        h1 { "Operators" }
        (notice(done))
        section aria-labelledby="invite" {
            h2 #invite { "Invite someone" }
            p.help { "They get an email with a link to choose their own password; it works once, for " (lifetime_in_words()) "." }
            form.stack method="post" action=(HERE) {
                (token_field(who))
                label for="invite-email" { "Email" }
                input #invite-email type="email" name="email" required maxlength=(parley_domain::validate::MAX_EMAIL_CHARS) autocomplete="off" value=(typed(new, "email"));
                label for="invite-name" { "Name" }
                input #invite-name name="name" required maxlength=(parley_domain::validate::MAX_NAME_CHARS) value=(typed(new, "name"));
                (role_choice("invite", if typed(new, "role") == "admin" { Role::Admin } else { Role::Agent }))
                (site_choice("invite", &sites, &new.map(held_sites).unwrap_or_default()))
                (problem("invite-problem", message(new)))
                button type="submit" { "Send the invitation" }
            }
        }
        section aria-labelledby="team" {
            h2 #team { "Your team" }
            @for o in &operators { (operator(who, o, &sites, refused_for(Some(o.id.0)))) }
        }
    };
    Ok(settings_frame(who, "Operators", HERE, status, main))
}

fn held_sites(r: &Refused) -> Vec<i64> {
    r.held.pairs().filter(|(k, _)| *k == "site_ids").filter_map(|(_, v)| v.parse().ok()).collect()
}

fn operator(who: &WebSession, o: &Operator, sites: &[Site], held: Option<&Refused>) -> Markup {
    let id = format!("operator-{}", o.id.0);
    let me = o.id == who.session.operator.id;
    let state = match (o.active, o.password_set) {
        (false, _) => "Disabled",
        (true, false) => "Invited: has not chosen a password yet",
        (true, true) => "Active",
    };
    let chosen: Vec<i64> = held.map_or_else(|| o.site_ids.iter().map(|s| s.0).collect(), held_sites);
    html! {
        article.operator aria-labelledby=(id) {
            h3 #(id) { (o.name) @if me { " (you)" } }
            dl.health {
                dt { "Email" } dd { (o.email) }
                dt { "State" } dd { (state) }
                dt { "Added" } dd { (when(o.created_at)) }
            }
            form.stack method="post" action={ (HERE) "/" (o.id.0) } {
                (token_field(who))
                label for={ (id) "-name" } { "Name" }
                input id={ (id) "-name" } name="name" required maxlength=(parley_domain::validate::MAX_NAME_CHARS) value=(held.map_or(o.name.as_str(), |r| typed(Some(r), "name")));
                @if !me {
                    (role_choice(&id, o.role))
                    label.check {
                        input type="checkbox" name="active" value="true" checked[o.active];
                        " Can sign in (unchecked: disabled, signed out everywhere)"
                    }
                    input type="hidden" name="active" value="false";
                }
                // An admin's sites too: they are the ones it keeps when
                // made an agent in the same save.
                @if !me { (site_choice(&id, sites, &chosen)) }
                (problem(&format!("{id}-problem"), message(held)))
                button type="submit" aria-label={ "Save " (o.name) } { "Save" }
            }
            @if o.active {
                form method="post" action={ (HERE) "/" (o.id.0) "/password-link" } {
                    (token_field(who))
                    button type="submit" aria-label={ (if o.password_set { "Send a new password link to " } else { "Send the invitation again to " }) (o.name) } {
                        @if o.password_set { "Send a link to choose a new password" } @else { "Send the invitation again" }
                    }
                }
            }
        }
    }
}

fn role_choice(id: &str, current: Role) -> Markup {
    html! {
        fieldset {
            legend { "Role" }
            @for (role, label) in [(Role::Agent, "Agent: answers the conversations of its sites"), (Role::Admin, "Admin: every site, and the settings")] {
                label.check {
                    input type="radio" name="role" value=(role.as_str()) checked[role == current] id={ (id) "-role-" (role.as_str()) };
                    " " (label)
                }
            }
        }
    }
}

fn site_choice(id: &str, sites: &[Site], chosen: &[i64]) -> Markup {
    html! {
        fieldset {
            legend { "Sites (for an agent)" }
            // Sent even with no box checked, so unchecking every site clears them.
            input type="hidden" name="site_ids" value="";
            @if sites.is_empty() { p.empty { "No sites yet." } }
            @for site in sites {
                label.check {
                    input type="checkbox" name="site_ids" value=(site.id.0) checked[chosen.contains(&site.id.0)] id={ (id) "-site-" (site.id.0) };
                    " " (site.name)
                }
            }
        }
    }
}

pub async fn invite(State(s): State<AppState>, Admin(who): Admin, CheckedForm(form): CheckedForm) -> Result<Response, PageError> {
    let made = match form.read::<OperatorInviteRequest>() {
        Ok(input) => s.invitations.invite(&who.session, input.into()).await.map(|(_, link)| link.sent),
        Err(e) => Err(e),
    };
    match made {
        Ok(true) => Ok(back(&format!("{HERE}?done=invited"))),
        Ok(false) => Ok(back(&format!("{HERE}?done=unsent"))),
        Err(e) => {
            let (status, message) = refusal(e)?;
            render(&s, &who, status, None, Some((None, Refused { message, held: form }))).await
        }
    }
}

pub async fn update(
    State(s): State<AppState>,
    Admin(who): Admin,
    Id(id): Id,
    CheckedForm(form): CheckedForm,
) -> Result<Response, PageError> {
    let saved = match form.read::<OperatorPatchRequest>() {
        Ok(input) => s.admin.update_operator(&who.session, OperatorId(id), input.into()).await.map(drop),
        Err(e) => Err(e),
    };
    match saved {
        Ok(()) => Ok(back(&format!("{HERE}?done=saved"))),
        Err(e) => {
            let (status, message) = refusal(e)?;
            render(&s, &who, status, None, Some((Some(id), Refused { message, held: form }))).await
        }
    }
}

pub async fn send_link(State(s): State<AppState>, Admin(who): Admin, Id(id): Id, _form: CheckedForm) -> Result<Response, PageError> {
    match s.invitations.send_link(&who.session, OperatorId(id)).await {
        Ok(link) if link.sent => Ok(back(&format!("{HERE}?done=link"))),
        Ok(_) => Ok(back(&format!("{HERE}?done=unsent"))),
        Err(e) => {
            let (status, message) = refusal(e)?;
            render(&s, &who, status, None, Some((Some(id), Refused { message, held: Default::default() }))).await
        }
    }
}
