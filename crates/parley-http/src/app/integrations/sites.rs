//! Sites and installations: each installation's token and embed snippet,
//! its health and what to fix, enable and disable, and the *try it* page
//! that embeds the widget on Parley itself.

use axum::extract::{RawQuery, State};
use axum::http::StatusCode;
use axum::response::Response;
use maud::{Markup, PreEscaped, html};
use parley_domain::admin::NewInstallationInput;
use parley_domain::model::{Installation, InstallationId, InstallationStatus, Site, SiteId};
use parley_domain::tenancy::NewSiteInput;

use super::common::{Admin, Id, back, copyable, done_message, frame, notice, problem, read, refusal, token_field};
use crate::AppState;
use crate::app::error::PageError;
use crate::app::form::CheckedForm;
use crate::app::layout::when;
use crate::app::session::WebSession;

const HERE: &str = "/app/integrations";

const DONE: [(&str, &str); 4] = [
    ("site", "The site is added."),
    ("installation", "The installation is added: put its snippet on the site's pages."),
    ("enabled", "The installation is enabled."),
    ("disabled", "The installation is disabled: its widget takes no new conversations."),
];

/// Which form a problem is about.
enum Form {
    Site,
    Installation(SiteId),
}

struct Problem {
    form: Form,
    message: String,
}

pub async fn page(State(s): State<AppState>, Admin(who): Admin, RawQuery(query): RawQuery) -> Result<Response, PageError> {
    render(&s, &who, StatusCode::OK, None, done_message(query.as_deref(), &DONE)).await
}

async fn render(
    s: &AppState,
    who: &WebSession,
    status: StatusCode,
    refused: Option<Problem>,
    done: Option<&str>,
) -> Result<Response, PageError> {
    let sites = s.admin.sites(&who.session).await?;
    let mut listed = Vec::with_capacity(sites.len());
    for site in sites {
        let installations = s.admin.installations(&who.session, site.id).await?;
        listed.push((site, installations));
    }
    let site_problem = refused.as_ref().filter(|p| matches!(p.form, Form::Site)).map(|p| p.message.as_str());
    let main = html! {
        h1 { "Sites and installations" }
        (notice(done))
        p { "A site is a website (or app) with the domains its widget may run on; an installation is one place the widget is embedded, with the public token its snippet carries." }
        @if listed.is_empty() { p.empty { "No sites yet: add one below." } }
        @for (site, installations) in &listed {
            @let installation_problem = refused.as_ref().and_then(|p| match p.form { Form::Installation(id) if id == site.id => Some(p.message.as_str()), _ => None });
            (site_section(s, who, site, installations, installation_problem))
        }
        section aria-labelledby="new-site" {
            h2 #new-site { "Add a site" }
            form.stack method="post" action={ (HERE) "/sites" } {
                (token_field(who))
                label for="site-name" { "Name" }
                input #site-name name="name" required maxlength="255";
                label for="site-domains" { "Domains the widget may run on" }
                input #site-domains name="domains" placeholder="www.example.com, shop.example.com" aria-describedby="site-domains-help";
                p.help #site-domains-help { "Separated by commas; subdomains are included. Leave empty to allow any domain." }
                (problem(site_problem))
                button type="submit" { "Add site" }
            }
        }
    };
    Ok(frame(who, "Integrations", HERE, status, main))
}

fn site_section(s: &AppState, who: &WebSession, site: &Site, installations: &[Installation], problem_here: Option<&str>) -> Markup {
    let heading = format!("site-{}", site.id.0);
    html! {
        section.site aria-labelledby=(heading) {
            h2 #(heading) { (site.name) }
            p.domains {
                @if site.domains.is_empty() { "Any domain may embed the widget." }
                @else { "Domains: " (site.domains.join(", ")) }
            }
            @if installations.is_empty() { p.empty { "No installations yet." } }
            @for i in installations { (installation(s, who, site, i)) }
            form.inline method="post" action={ (HERE) "/sites/" (site.id.0) "/installations" } {
                (token_field(who))
                label for={ "installation-name-" (site.id.0) } { "New installation" }
                input id={ "installation-name-" (site.id.0) } name="name" placeholder="Website" maxlength="255";
                button type="submit" { "Add installation" }
                (problem(problem_here))
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

fn installation(s: &AppState, who: &WebSession, site: &Site, i: &Installation) -> Markup {
    let id = i.id.0;
    let heading = format!("installation-{id}");
    let warnings = s.widget.warnings(site, i, None);
    let status = i.status();
    html! {
        article.installation aria-labelledby=(heading) data-installation=(id) {
            h3 #(heading) { (i.name) " " span.badge data-status=(status.as_str()) { (status_label(status)) } }
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
            (copyable(&format!("token-{id}"), "the public token", &i.token, false))
            h4 { "Embed snippet" }
            p.help { "Paste it into every page of the site, before " code { "</body>" } "." }
            (copyable(&format!("snippet-{id}"), "the embed snippet", &s.admin.embed_snippet(i), true))
            div.actions {
                a.button href=(crate::extract::try_page_path(id)) { "Try it" }
                @if i.enabled {
                    form method="post" action={ (HERE) "/installations/" (id) "/disable" } {
                        (token_field(who))
                        button type="submit" { "Disable" }
                    }
                } @else {
                    form method="post" action={ (HERE) "/installations/" (id) "/enable" } {
                        (token_field(who))
                        button type="submit" { "Enable" }
                    }
                }
            }
        }
    }
}

pub async fn create_site(State(s): State<AppState>, Admin(who): Admin, CheckedForm(form): CheckedForm) -> Result<Response, PageError> {
    let created = match read::<NewSiteInput>(&form, &["domains"], &[]) {
        Ok(input) => s.admin.create_site(&who.session, input).await.map(|_| ()),
        Err(e) => Err(e),
    };
    match created {
        Ok(()) => Ok(back(&format!("{HERE}?done=site"))),
        Err(e) => {
            let (status, message) = refusal(e)?;
            render(&s, &who, status, Some(Problem { form: Form::Site, message }), None).await
        }
    }
}

pub async fn create_installation(
    State(s): State<AppState>,
    Admin(who): Admin,
    Id(site): Id,
    CheckedForm(form): CheckedForm,
) -> Result<Response, PageError> {
    let site = SiteId(site);
    let created = match read::<NewInstallationInput>(&form, &[], &[]) {
        Ok(input) => s.admin.create_installation(&who.session, site, input).await.map(|i| i.id),
        Err(e) => Err(e),
    };
    match created {
        Ok(id) => Ok(back(&format!("{HERE}?done=installation#installation-{}", id.0))),
        Err(e) => {
            let (status, message) = refusal(e)?;
            render(&s, &who, status, Some(Problem { form: Form::Installation(site), message }), None).await
        }
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

/// The widget of one installation, embedded on Parley itself: the admin
/// chats as a visitor here and answers from the inbox. Its requests pass
/// the site's domain lock as this page's (see `extract::caller`).
pub async fn try_it(State(s): State<AppState>, Admin(who): Admin, Id(id): Id) -> Result<Response, PageError> {
    let (installation, site) = s.admin.installation(&who.session, InstallationId(id)).await?;
    let snippet = s.admin.embed_snippet(&installation);
    let main = html! {
        h1 { "Try " (installation.name) }
        p { "This page embeds the widget of " strong { (site.name) } " / " (installation.name)
            " exactly as the snippet does on the site: open it with the chat button in the corner, write as a visitor, and answer from the "
            a href="/app" target="_blank" { "inbox" } " (it opens in a new tab). Conversations started here are real conversations of this site." }
        p.help { "The site's domain lock lets this page through, and no other page of this address. Heartbeats from here are not counted in the installation's health." }
        @if !installation.enabled {
            p.problem role="alert" { "This installation is disabled: the widget takes no new conversations until it is enabled again." }
        }
        p { a href={ (HERE) "#installation-" (id) } { "Back to the installations" } }
        (PreEscaped(snippet))
    };
    Ok(frame(&who, &format!("Try {}", installation.name), HERE, StatusCode::OK, main))
}
