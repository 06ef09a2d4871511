//! Sites and installations: each installation's token and embed snippet,
//! its health and what to fix, enable and disable, and the *try it* page
//! that embeds the widget on Parley itself.

use crate::requests::admin::{InstallationCreateRequest, InstallationPatchRequest, SiteCreateRequest};
use axum::extract::{RawQuery, State};
use axum::http::StatusCode;
use axum::response::Response;
use maud::{Markup, html};
use parley_domain::model::{Installation, InstallationId, InstallationStatus, Site, SiteId};

use crate::AppState;
use crate::app::admin_pages::{Admin, Refused, back, copyable, done_message, frame, message, notice, problem, refusal, token_field, typed};
use crate::app::error::PageError;
use crate::app::form::CheckedForm;
use crate::app::layout::when;
use crate::app::path::Id;
use crate::app::session::WebSession;

const HERE: &str = "/app/integrations";

const DONE: [(&str, &str); 6] = [
    ("site", "The site is added."),
    ("installation", "The installation is added: put its snippet on the site's pages."),
    ("enabled", "The installation is enabled."),
    ("disabled", "The installation is disabled: its widget takes no new conversations."),
    ("required", "The installation now takes identified visitors only."),
    ("optional", "The installation takes anonymous visitors again."),
];

/// Which form a problem is about.
enum Which {
    Site,
    Installation(SiteId),
    Identity(InstallationId),
}

/// A refused form, and which.
struct Problem {
    form: Which,
    refused: Refused,
}

pub async fn page(State(s): State<AppState>, Admin(who): Admin, RawQuery(query): RawQuery) -> Result<Response, PageError> {
    render(&s, &who, StatusCode::OK, None, done_message(query.as_deref(), &DONE), None).await
}

async fn render(
    s: &AppState,
    who: &WebSession,
    status: StatusCode,
    refused: Option<Problem>,
    done: Option<&str>,
    made: Option<Made>,
) -> Result<Response, PageError> {
    let listed = s.admin.sites_with_installations(&who.session).await?;
    let site_refused = refused.as_ref().filter(|p| matches!(p.form, Which::Site)).map(|p| &p.refused);
    let site_problem = message(site_refused);
    let main = html! {
        h1 { "Sites and installations" }
        (notice(done))
        p { "A site is a website (or app) with the domains its widget may run on; an installation is one place the widget is embedded, with the public token its snippet carries." }
        @if listed.is_empty() { p.empty { "No sites yet: add one below." } }
        @for (site, installations) in &listed {
            @let installation_problem = refused.as_ref().filter(|p| matches!(p.form, Which::Installation(id) if id == site.id)).map(|p| &p.refused);
            (site_section(s, who, site, installations, installation_problem, &Shown { refused: refused.as_ref(), made: made.as_ref() }))
        }
        section aria-labelledby="new-site" {
            h2 #new-site { "Add a site" }
            form.stack method="post" action={ (HERE) "/sites" } {
                (token_field(who))
                label for="site-name" { "Name" }
                input #site-name name="name" required maxlength=(parley_domain::validate::MAX_NAME_CHARS) value=(typed(site_refused, "name"))
                    aria-invalid=[site_problem.map(|_| "true")] aria-describedby=[site_problem.map(|_| "site-problem")];
                label for="site-domains" { "Domains the widget may run on" }
                input #site-domains name="domains" placeholder="www.example.com, shop.example.com" value=(typed(site_refused, "domains"))
                    aria-invalid=[site_problem.map(|_| "true")] aria-describedby={ "site-domains-help" @if site_problem.is_some() { " site-problem" } };
                p.help #site-domains-help { "Separated by commas; subdomains are included. Leave empty to allow any domain." }
                (problem("site-problem", site_problem))
                button type="submit" { "Add site" }
            }
        }
    };
    Ok(frame(who, "Integrations", HERE, status, main))
}

/// An identity secret just made: shown this once, beside its installation.
struct Made {
    installation: InstallationId,
    secret: String,
}

/// What one answer shows beside the installations' identity forms.
struct Shown<'a> {
    refused: Option<&'a Problem>,
    made: Option<&'a Made>,
}

fn site_section(
    s: &AppState,
    who: &WebSession,
    site: &Site,
    installations: &[Installation],
    refused: Option<&Refused>,
    shown: &Shown<'_>,
) -> Markup {
    let heading = format!("site-{}", site.id.0);
    let problem_id = format!("installation-problem-{}", site.id.0);
    let message = message(refused);
    html! {
        section.site aria-labelledby=(heading) {
            h2 #(heading) { (site.name) }
            p.domains {
                @if site.domains.is_empty() { "Any domain may embed the widget." }
                @else { "Domains: " (site.domains.join(", ")) }
            }
            @if installations.is_empty() { p.empty { "No installations yet." } }
            @for i in installations { (installation(s, who, site, i, shown)) }
            form.inline method="post" action={ (HERE) "/sites/" (site.id.0) "/installations" } {
                (token_field(who))
                label for={ "installation-name-" (site.id.0) } { "New installation of " (site.name) }
                input id={ "installation-name-" (site.id.0) } name="name" placeholder="Website" maxlength=(parley_domain::validate::MAX_NAME_CHARS)
                    value=(typed(refused, "name"))
                    aria-invalid=[message.map(|_| "true")] aria-describedby=[message.map(|_| problem_id.as_str())];
                button type="submit" { "Add installation" }
                (problem(&problem_id, message))
            }
        }
    }
}

fn status_label(status: InstallationStatus) -> &'static str {
    match status {
        InstallationStatus::Pending => "Waiting for a first heartbeat",
        InstallationStatus::Healthy => "Healthy",
        InstallationStatus::Stale => "Stale",
        InstallationStatus::Disabled => "Disabled",
    }
}

fn installation(s: &AppState, who: &WebSession, site: &Site, i: &Installation, shown: &Shown<'_>) -> Markup {
    let id = i.id.0;
    let heading = format!("installation-{id}");
    let warnings = s.widget.warnings(site, i, None);
    let status = i.status();
    html! {
        article.installation aria-labelledby=(heading) data-installation=(id) {
            h3 #(heading) { (i.name) }
            p.badge data-status=(status.as_str()) { (status_label(status)) }
            dl.health {
                dt { "Last heartbeat" }
                dd { @if let Some(t) = i.last_seen_at { (when(t)) } @else { "Never" } }
                dt { "Page it came from" }
                dd { (i.page_host.as_deref().unwrap_or("Not reported yet")) }
                dt { "Widget version" }
                dd { (i.widget_version.as_deref().unwrap_or("Not reported yet")) }
            }
            @if !warnings.is_empty() {
                ul.warnings aria-label="What to fix" {
                    @for w in &warnings { li { (w) } }
                }
            }
            h4 { "Public token" }
            (copyable(&format!("token-{id}"), &format!("the public token of {}", i.name), &i.token, false))
            h4 { "Embed snippet" }
            p.help { "Paste it into every page of the site, before " code { "</body>" } "." }
            (copyable(&format!("snippet-{id}"), &format!("the embed snippet of {}", i.name), &s.admin.embed_snippet(i), true))
            div.actions {
                a.button href=(crate::extract::try_page_path(id)) aria-label={ "Try it: " (i.name) } { "Try it" }
                @if i.enabled {
                    form method="post" action={ (HERE) "/installations/" (id) "/disable" } {
                        (token_field(who))
                        button type="submit" aria-label={ "Disable " (i.name) } { "Disable" }
                    }
                } @else {
                    form method="post" action={ (HERE) "/installations/" (id) "/enable" } {
                        (token_field(who))
                        button type="submit" aria-label={ "Enable " (i.name) } { "Enable" }
                    }
                }
            }
            (identity_section(who, i, shown))
        }
    }
}

/// The installation's identity secret and rule: the site's server signs
/// its users' ids with the secret, and the widget passes them on.
fn identity_section(who: &WebSession, i: &Installation, shown: &Shown<'_>) -> Markup {
    let id = i.id.0;
    let made = shown.made.filter(|m| m.installation == i.id);
    let refused = shown.refused.filter(|p| matches!(p.form, Which::Identity(x) if x == i.id)).map(|p| &p.refused);
    let problem_id = format!("identity-problem-{id}");
    html! {
        section.identity aria-labelledby={ "identity-" (id) } {
            h4 #{ "identity-" (id) } { "Signed identity" }
            @if let Some(made) = made {
                p.notice role="status" { "The new identity secret. Copy it now: it is not shown again." }
                (copyable(&format!("identity-secret-{id}"), &format!("the identity secret of {}", i.name), &made.secret, false))
                p.help { "On the site's server, sign each signed-in user's id: " code { "user_hash = hex(HMAC-SHA256(secret, user_id))" }
                    ", or an HS256 token with " code { "sub" } " and " code { "exp" } "; then call " code { "Parley('identify', {user_id, user_hash})" } "." }
            }
            @match (&i.identity.secret, i.identity.previous_secret_expires_at) {
                (None, _) => p { "No identity secret: visitors are anonymous until they verify an email or phone." },
                (Some(_), Some(until)) => p { "An identity secret is set. The one it replaced still checks signatures until " (when(until)) "." },
                (Some(_), None) => p { "An identity secret is set." },
            }
            @if i.identity.required { p { strong { "Only identified visitors may chat." } } }
            (problem(&problem_id, message(refused)))
            div.actions {
                form method="post" action={ (HERE) "/installations/" (id) "/identity-secret" } {
                    (token_field(who))
                    input type="hidden" name="shown" value=(parley_domain::admin::identity_shown(i));
                    @if i.identity.secret.is_some() {
                        button type="submit" aria-label={ "Replace the identity secret of " (i.name) } { "Replace the secret" }
                    } @else {
                        button type="submit" aria-label={ "Make an identity secret for " (i.name) } { "Make a secret" }
                    }
                }
                @if i.identity.secret.is_some() || i.identity.required {
                    form method="post" action={ (HERE) "/installations/" (id) "/identity-required" } {
                        (token_field(who))
                        input type="hidden" name="identity_required" value=(!i.identity.required);
                        @if i.identity.required {
                            button type="submit" aria-label={ "Allow anonymous visitors on " (i.name) } { "Allow anonymous visitors" }
                        } @else {
                            button type="submit" aria-label={ "Require identified visitors on " (i.name) } { "Require identified visitors" }
                        }
                    }
                }
            }
        }
    }
}

pub async fn create_site(State(s): State<AppState>, Admin(who): Admin, CheckedForm(form): CheckedForm) -> Result<Response, PageError> {
    let created = match form.read::<SiteCreateRequest>() {
        Ok(input) => s.admin.create_site(&who.session, input.into()).await.map(|_| ()),
        Err(e) => Err(e),
    };
    match created {
        Ok(()) => Ok(back(&format!("{HERE}?done=site"))),
        Err(e) => refused(&s, &who, Which::Site, form, e).await,
    }
}

pub async fn create_installation(
    State(s): State<AppState>,
    Admin(who): Admin,
    Id(site): Id,
    CheckedForm(form): CheckedForm,
) -> Result<Response, PageError> {
    let site = SiteId(site);
    let created = match form.read::<InstallationCreateRequest>() {
        Ok(input) => s.admin.create_installation(&who.session, site, input.into()).await.map(|(i, _)| i.id),
        Err(e) => Err(e),
    };
    match created {
        Ok(id) => Ok(back(&format!("{HERE}?done=installation#installation-{}", id.0))),
        Err(e) => refused(&s, &who, Which::Installation(site), form, e).await,
    }
}

pub async fn enable(state: State<AppState>, admin: Admin, path: Id, _form: CheckedForm) -> Result<Response, PageError> {
    set_enabled(state, admin, path, true).await
}

pub async fn disable(state: State<AppState>, admin: Admin, path: Id, _form: CheckedForm) -> Result<Response, PageError> {
    set_enabled(state, admin, path, false).await
}

async fn set_enabled(State(s): State<AppState>, Admin(who): Admin, Id(id): Id, enabled: bool) -> Result<Response, PageError> {
    s.admin.set_installation_enabled(&who.session, InstallationId(id), enabled).await?;
    let done = if enabled { "enabled" } else { "disabled" };
    Ok(back(&format!("{HERE}?done={done}#installation-{id}")))
}

/// Makes or replaces the identity secret and shows it, this once.
pub async fn rotate_identity(
    State(s): State<AppState>,
    Admin(who): Admin,
    Id(id): Id,
    CheckedForm(form): CheckedForm,
) -> Result<Response, PageError> {
    let installation = InstallationId(id);
    let shown = form.get("shown").map(str::to_owned);
    match s.admin.rotate_identity_secret(&who.session, installation, shown).await {
        Ok((_, _, secret)) => render(&s, &who, StatusCode::OK, None, None, Some(Made { installation, secret })).await,
        Err(e) => refused(&s, &who, Which::Identity(installation), form, e).await,
    }
}

/// The page again, with the refusal beside the form it is about.
async fn refused(
    s: &AppState,
    who: &WebSession,
    which: Which,
    form: crate::app::form::Form,
    e: parley_domain::DomainError,
) -> Result<Response, PageError> {
    let (status, message) = refusal(e)?;
    render(s, who, status, Some(Problem { form: which, refused: Refused { message, held: form } }), None, None).await
}

/// Requires identified visitors, or allows anonymous ones again.
pub async fn set_identity_required(
    State(s): State<AppState>,
    Admin(who): Admin,
    Id(id): Id,
    CheckedForm(form): CheckedForm,
) -> Result<Response, PageError> {
    let installation = InstallationId(id);
    let updated = match form.read::<InstallationPatchRequest>().and_then(|r| r.patch()) {
        Ok(patch) => s.admin.update_installation(&who.session, installation, patch).await.map(|(i, _)| i.identity.required),
        Err(e) => Err(e),
    };
    match updated {
        Ok(required) => Ok(back(&format!("{HERE}?done={}#installation-{id}", if required { "required" } else { "optional" }))),
        Err(e) => refused(&s, &who, Which::Identity(installation), form, e).await,
    }
}

/// The widget of one installation, embedded on Parley itself: the admin
/// chats as a visitor here and answers from the inbox. Its requests pass
/// the site's domain lock as this page's (see `extract::caller`).
pub async fn try_it(State(s): State<AppState>, Admin(who): Admin, Id(id): Id) -> Result<Response, PageError> {
    let (installation, site) = s.admin.installation(&who.session, InstallationId(id)).await?;
    // The exception holds for the public address only; opened at another
    // (localhost for 127.0.0.1, a proxy's inner name) the widget would be
    // refused with no word why. The script compares the page's own origin,
    // which only the browser knows for sure, and shows this.
    let public_origin = url::Url::parse(&s.web_app.public_url).map(|u| u.origin().ascii_serialization()).unwrap_or_default();
    let main = html! {
        p.problem #elsewhere hidden data-public-origin=(public_origin) { "This page is open at another address than the service's public one (" code { (s.web_app.public_url) } "), and the widget's requests are let through from that address only. Open this page at "
            a href={ (s.web_app.public_url) (crate::extract::try_page_path(id)) } { "the public address" } " to try the widget." }
        h1 { "Try " (installation.name) }
        p { "This page embeds the widget of " strong { (site.name) } " / " (installation.name)
            " exactly as the snippet does on the site: open it with the chat button in the corner, write as a visitor, and answer from the "
            a href="/app" target="_blank" { "inbox" } " (it opens in a new tab). Conversations started here are real conversations of this site." }
        p.help { "The site's domain lock lets this page through, and no other page of this address. Heartbeats from here are not counted in the installation's health." }
        @if !installation.enabled {
            p.problem { "This installation is disabled: the widget takes no new conversations until it is enabled again." }
        }
        p { a href={ (HERE) "#installation-" (id) } { "Back to the installations" } }
        script async src={ (s.web_app.public_url) "/widget.js" } data-api-base=(s.web_app.public_url) data-installation-token=(installation.token) {}
    };
    Ok(frame(&who, &format!("Try {}", installation.name), HERE, StatusCode::OK, main))
}
