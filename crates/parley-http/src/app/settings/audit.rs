//! The audit log's page: every change admins made, newest first, as
//! `GET admin/audit` lists it.

use axum::extract::{RawQuery, State};
use axum::http::StatusCode;
use axum::response::Response;
use maud::{Markup, html};
use parley_domain::audit::AuditEntry;
use parley_domain::inbox::PageRequest;

use crate::AppState;
use crate::app::admin_pages::{Admin, settings_frame};
use crate::app::error::PageError;
use crate::app::layout::when;

pub const HERE: &str = "/app/settings/audit";
const PER_PAGE: u32 = 50;

pub async fn page(State(s): State<AppState>, Admin(who): Admin, RawQuery(query): RawQuery) -> Result<Response, PageError> {
    let pairs: Vec<(String, String)> = url::form_urlencoded::parse(query.as_deref().unwrap_or_default().as_bytes()).into_owned().collect();
    let number = pairs
        .iter()
        .find(|(k, _)| k == "page")
        .and_then(|(_, v)| v.parse::<u32>().ok())
        .filter(|p| (1..=1_000_000).contains(p))
        .unwrap_or(1);
    let (entries, meta) = s.audit.entries(&who.session, PageRequest { page: number, per_page: PER_PAGE }).await?;
    let main = html! {
        h1 { "Audit log" }
        p { "Every change an admin made to your team's sites, installations, operators, webhooks, tokens and canned responses, and every erased conversation: who, from which address, and when. Newest first." }
        @if entries.is_empty() && meta.total > 0 {
            // An address past the last page (typed, or the log was pruned).
            p.empty { "No changes on this page. " a href=(HERE) { "See the latest changes" } "." }
        } @else if entries.is_empty() { p.empty { "Nothing changed yet." } }
        @else {
            div.scroll tabindex="0" role="region" aria-label="Changes" {
                table.audit {
                    caption.visually-hidden { "Changes, newest first" }
                    thead { tr { th scope="col" { "When" } th scope="col" { "Who" } th scope="col" { "What" } th scope="col" { "Details" } } }
                    tbody { @for e in &entries { (row(e)) } }
                }
            }
        }
        @if meta.last_page > 1 {
            nav.pages aria-label="Pages of the log" {
                @if meta.current_page > 1 { a href={ (HERE) "?page=" (meta.current_page - 1) } rel="prev" { "Newer" } }
                span { "Page " (meta.current_page) " of " (meta.last_page) }
                @if u64::from(meta.current_page) < meta.last_page { a href={ (HERE) "?page=" (meta.current_page + 1) } rel="next" { "Older" } }
            }
        }
    };
    Ok(settings_frame(&who, "Audit log", HERE, StatusCode::OK, main))
}

fn row(e: &AuditEntry) -> Markup {
    let details: Vec<(String, String)> = e
        .details
        .as_object()
        .map(|o| o.iter().map(|(k, v)| (k.replace('_', " "), v.as_str().map_or_else(|| v.to_string(), str::to_owned))).collect())
        .unwrap_or_default();
    html! {
        tr {
            td { (when(e.created_at)) }
            td {
                (e.actor.name)
                @if let Some(address) = e.actor.address { br; span.muted { (address.to_string()) } }
            }
            td {
                code { (e.action.as_str()) }
                @if let Some(id) = e.target_id { " " span.muted { (e.action.target().replace('_', " ")) " " (id) } }
            }
            td {
                @if details.is_empty() { span.muted { "—" } }
                @else { dl.details { @for (k, v) in &details { dt { (k) } dd { (v) } } } }
            }
        }
    }
}
