//! Each site's widget, as admins set it: name and domains, the widget's
//! title, greeting, colour and privacy text, its language, and business
//! hours. Both forms are `PATCH admin/sites/{id}`; whether visitors must
//! be identified is an installation's setting, on the integrations page.

use axum::extract::{RawQuery, State};
use axum::http::StatusCode;
use axum::response::Response;
use maud::{Markup, html};
use parley_domain::admin::SitePatch;
use parley_domain::hours::{BusinessHours, Day, OPENINGS_MAX, Opening};
use parley_domain::model::{Site, SiteId};

use crate::AppState;
use crate::app::admin_pages::{Admin, Refused, back, done_message, message, notice, problem, refusal, settings_frame, token_field, typed};
use crate::app::error::PageError;
use crate::app::form::{CheckedForm, Form};
use crate::app::path::Id;
use crate::app::session::WebSession;
use crate::requests::admin::SitePatchRequest;
use parley_domain::validate::{MAX_LONG_TEXT_CHARS, MAX_NAME_CHARS, MAX_URL_CHARS};

pub const HERE: &str = "/app/settings/sites";

const DONE: [(&str, &str); 2] =
    [("saved", "The site is saved: the widget shows it from its next page load."), ("hours", "The business hours are saved.")];

/// Openings a day the form offers at least; a site with more on a day
/// (the API takes more) gets as many, so a save never drops one.
const SLOTS: usize = 2;

/// The openings per day the form shows for these hours.
fn slots(hours: Option<&BusinessHours>) -> usize {
    let most =
        hours.map_or(0, |h| (0..Day::NAMES.len()).map(|d| h.weekly.iter().filter(|o| o.day as usize == d).count()).max().unwrap_or(0));
    most.max(SLOTS)
}

/// Which form of which site was refused.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Part {
    Widget,
    Hours,
}

pub async fn to_page() -> Response {
    back(HERE)
}

pub async fn page(State(s): State<AppState>, Admin(who): Admin, RawQuery(query): RawQuery) -> Result<Response, PageError> {
    render(&s, &who, StatusCode::OK, done_message(query.as_deref(), &DONE), None).await
}

async fn render(
    s: &AppState,
    who: &WebSession,
    status: StatusCode,
    done: Option<&str>,
    refused: Option<(i64, Part, Refused)>,
) -> Result<Response, PageError> {
    let sites = s.admin.sites_with_installations(&who.session).await?;
    let main = html! {
        h1 { "Sites" }
        (notice(done))
        p { "What visitors see of each site's widget. New sites and their installations are made on " a href="/app/integrations" { "the integrations page" } "." }
        @if sites.is_empty() { p.empty { "No sites yet." } }
        @for (site, installations) in &sites {
            @let held = |part: Part| refused.as_ref().filter(|(id, p, _)| *id == site.id.0 && *p == part).map(|(_, _, r)| r);
            section.site-settings aria-labelledby={ "site-" (site.id.0) } {
                h2 id={ "site-" (site.id.0) } { (site.name) }
                (widget_form(who, site, held(Part::Widget)))
                (hours_form(who, site, held(Part::Hours)))
                h3 { "Identified visitors" }
                ul {
                    @for i in installations {
                        li {
                            a href={ "/app/integrations#installation-" (i.id.0) } { (i.name) }
                            ": " @if i.identity.required { "only identified visitors may chat" } @else { "anonymous visitors may chat" }
                        }
                    }
                }
            }
        }
    };
    Ok(settings_frame(who, "Sites", HERE, status, main))
}

fn widget_form(who: &WebSession, site: &Site, held: Option<&Refused>) -> Markup {
    let id = format!("site-{}", site.id.0);
    let value = |name: &str, current: &str| held.map_or(current.to_owned(), |r| typed(Some(r), name).to_owned());
    let look = &site.appearance;
    let locale = held.map_or(site.settings.locale.clone().unwrap_or_default(), |r| typed(Some(r), "locale").to_owned());
    html! {
        h3 { "The widget" }
        form.stack method="post" action={ (HERE) "/" (site.id.0) } {
            (token_field(who))
            label for={ (id) "-name" } { "Site name" }
            input id={ (id) "-name" } name="name" required maxlength=(MAX_NAME_CHARS) value=(value("name", &site.name));
            label for={ (id) "-domains" } { "Domains" }
            // Sent even when the box is emptied: no domains lets the widget run anywhere.
            input type="hidden" name="domains" value="";
            textarea id={ (id) "-domains" } name="domains" rows="3" aria-describedby={ (id) "-domains-help" } {
                (value("domains", &site.domains.join("\n")))
            }
            p.help id={ (id) "-domains-help" } { "One host name per line; its subdomains are included. Empty: the widget runs on any site." }
            label for={ (id) "-title" } { "Title" }
            input id={ (id) "-title" } name="widget_title" required maxlength=(MAX_NAME_CHARS) value=(value("widget_title", &look.title));
            label for={ (id) "-greeting" } { "Greeting" }
            textarea id={ (id) "-greeting" } name="widget_greeting" rows="2" required maxlength=(MAX_LONG_TEXT_CHARS) { (value("widget_greeting", &look.greeting)) }
            label for={ (id) "-colour" } { "Colour" }
            input id={ (id) "-colour" } type="color" name="accent_color" value=(value("accent_color", &look.accent_color));
            label for={ (id) "-privacy" } { "Privacy text" }
            textarea id={ (id) "-privacy" } name="privacy_text" rows="2" required maxlength=(MAX_LONG_TEXT_CHARS) { (value("privacy_text", &look.privacy_text)) }
            label for={ (id) "-privacy-url" } { "Privacy page (https)" }
            input id={ (id) "-privacy-url" } type="url" name="privacy_url" maxlength=(MAX_URL_CHARS)
                value=(value("privacy_url", look.privacy_url.as_deref().unwrap_or_default()));
            label for={ (id) "-locale" } { "Language" }
            select id={ (id) "-locale" } name="locale" {
                option value="" selected[locale.is_empty()] { "The visitor's browser's" }
                @for code in parley_domain::locale::LANGUAGES { option value=(code) selected[locale == code] { (code) } }
            }
            (problem(&format!("{id}-problem"), message(held)))
            button type="submit" aria-label={ "Save the widget of " (site.name) } { "Save" }
        }
    }
}

fn hours_form(who: &WebSession, site: &Site, held: Option<&Refused>) -> Markup {
    let id = format!("site-{}-hours", site.id.0);
    let hours = site.settings.hours.as_ref();
    let count = held.and_then(|r| r.held.get("slots")).and_then(|n| n.parse().ok()).unwrap_or_else(|| slots(hours)).min(OPENINGS_MAX);
    let slot = |day: usize, n: usize, edge: &str| -> String {
        let name = field(day, n, edge);
        if let Some(r) = held {
            return typed(Some(r), &name).to_owned();
        }
        let found = hours.and_then(|h| h.weekly.iter().filter(|o| o.day as usize == day).nth(n));
        found.map(|o| if edge == "open" { o.open.clone() } else { o.close.clone() }).unwrap_or_default()
    };
    let zone = held.map_or_else(|| hours.map_or("UTC".to_owned(), |h| h.time_zone.clone()), |r| typed(Some(r), "time_zone").to_owned());
    let closed =
        held.map_or_else(|| hours.map(|h| h.closed_dates.join("\n")).unwrap_or_default(), |r| typed(Some(r), "closed_dates").to_owned());
    let always = held.map_or(hours.is_none(), |r| r.held.get("always_open").is_some());
    html! {
        h3 { "Business hours" }
        form.stack method="post" action={ (HERE) "/" (site.id.0) "/hours" } {
            (token_field(who))
            input type="hidden" name="slots" value=(count);
            label.check { input type="checkbox" name="always_open" value="true" checked[always]; " Always open (the times below are not used)" }
            label for={ (id) "-zone" } { "Time zone" }
            input id={ (id) "-zone" } name="time_zone" maxlength=(parley_domain::hours::MAX_TIME_ZONE_CHARS) value=(zone) aria-describedby={ (id) "-zone-help" };
            p.help id={ (id) "-zone-help" } { "An IANA name such as Europe/Berlin or America/New_York." }
            div.scroll tabindex="0" role="region" aria-label="Openings by day" {
                table.hours {
                    caption.visually-hidden { "Openings by day" }
                    thead { tr { th scope="col" { "Day" } @for _ in 0..count { th scope="col" { "Opens" } th scope="col" { "Closes" } } } }
                    tbody {
                        @for (day, name) in Day::NAMES.iter().enumerate() {
                            tr {
                                th scope="row" { (capitalised(name)) }
                                @for n in 0..count {
                                    @for edge in ["open", "close"] {
                                        td {
                                            input type="time" name=(field(day, n, edge)) value=(slot(day, n, edge))
                                                aria-label={ (capitalised(name)) ", " @if n > 0 { "second opening, " } (if edge == "open" { "opens" } else { "closes" }) };
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
            label for={ (id) "-closed" } { "Closed on (one YYYY-MM-DD date per line)" }
            textarea id={ (id) "-closed" } name="closed_dates" rows="3" { (closed) }
            (problem(&format!("{id}-problem"), message(held)))
            button type="submit" aria-label={ "Save the business hours of " (site.name) } { "Save hours" }
        }
    }
}

fn field(day: usize, n: usize, edge: &str) -> String {
    format!("{}_{edge}{}", Day::NAMES[day], if n == 0 { String::new() } else { (n + 1).to_string() })
}

fn capitalised(s: &str) -> String {
    let mut chars = s.chars();
    chars.next().map(|c| c.to_uppercase().chain(chars).collect()).unwrap_or_default()
}

pub async fn save(State(s): State<AppState>, Admin(who): Admin, Id(id): Id, CheckedForm(form): CheckedForm) -> Result<Response, PageError> {
    // The form shows every text, so it sends every one: a blank one is
    // refused, where the API's patch would keep what was there.
    let blank =
        ["name", "widget_title", "widget_greeting", "privacy_text"].into_iter().find(|f| form.get(f).is_none_or(|v| v.trim().is_empty()));
    let read = match blank {
        Some(field) => Err(parley_domain::DomainError::invalid(field, "is required")),
        None => form.read::<SitePatchRequest>().and_then(SitePatchRequest::patch),
    };
    let saved = match read {
        Ok(mut patch) => {
            // The form always sends the language: its empty choice is the
            // visitor's browser's, where the API's patch would keep it.
            if form.get("locale") == Some("") {
                patch.locale = Some(None);
            }
            if form.get("privacy_url").is_some_and(|u| u.trim().is_empty()) {
                patch.privacy_url = Some(None);
            }
            s.admin.update_site(&who.session, SiteId(id), patch).await.map(drop)
        }
        Err(e) => Err(e),
    };
    match saved {
        Ok(()) => Ok(back(&format!("{HERE}?done=saved#site-{id}"))),
        Err(e) => {
            let (status, message) = refusal(e)?;
            render(&s, &who, status, None, Some((id, Part::Widget, Refused { message, held: form }))).await
        }
    }
}

pub async fn save_hours(
    State(s): State<AppState>,
    Admin(who): Admin,
    Id(id): Id,
    CheckedForm(form): CheckedForm,
) -> Result<Response, PageError> {
    let patch = SitePatch { hours: Some(hours_of(&form)), ..SitePatch::default() };
    match s.admin.update_site(&who.session, SiteId(id), patch).await {
        Ok(_) => Ok(back(&format!("{HERE}?done=hours#site-{id}"))),
        Err(e) => {
            let (status, message) = refusal(e)?;
            render(&s, &who, status, None, Some((id, Part::Hours, Refused { message, held: form }))).await
        }
    }
}

/// The hours the form describes: none when always open; a day's slot
/// with a time left blank is no opening. What they hold is checked where
/// the change is made (`SitePatch::check`), as the API's are.
fn hours_of(form: &Form) -> Option<BusinessHours> {
    if form.get("always_open").is_some() {
        return None;
    }
    let days = [Day::Monday, Day::Tuesday, Day::Wednesday, Day::Thursday, Day::Friday, Day::Saturday, Day::Sunday];
    let count = form.get("slots").and_then(|n| n.parse().ok()).unwrap_or(SLOTS).min(OPENINGS_MAX);
    let mut weekly = Vec::new();
    for (i, day) in days.into_iter().enumerate() {
        for n in 0..count {
            let open = form.get(&field(i, n, "open")).unwrap_or_default().trim();
            let close = form.get(&field(i, n, "close")).unwrap_or_default().trim();
            if !open.is_empty() || !close.is_empty() {
                weekly.push(Opening { day, open: open.to_owned(), close: close.to_owned() });
            }
        }
    }
    let closed_dates = form.get("closed_dates").unwrap_or_default().split_whitespace().map(str::to_owned).collect();
    Some(BusinessHours { time_zone: form.get("time_zone").unwrap_or_default().trim().to_owned(), weekly, closed_dates })
}
