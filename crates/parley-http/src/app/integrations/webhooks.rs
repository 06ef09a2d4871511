//! Webhook endpoints: made with the secret shown once, their events, a new
//! secret with the old one's overlap explained, delete, test events, the
//! delivery log with every attempt, redeliver, and how to verify.

use axum::extract::{RawQuery, State};
use axum::http::StatusCode;
use axum::response::Response;
use maud::{Markup, html};
use parley_domain::events::EventKind;
use parley_domain::inbox::PageRequest;
use parley_domain::model::{DeliveryId, WebhookId};
use parley_domain::webhooks::{Delivery, DeliveryStatus, Webhook, signing};

use crate::AppState;
use crate::app::admin_pages::{Admin, Refused, back, copyable, done_message, frame, message, notice, problem, refusal, token_field, typed};
use crate::app::error::PageError;
use crate::app::form::CheckedForm;
use crate::app::layout::when;
use crate::app::path::{Id, Ids};
use crate::app::session::WebSession;
use crate::requests::admin::{WebhookCreateRequest, WebhookTestRequest};

const HERE: &str = "/app/integrations/webhooks";
/// Deliveries a page of the log shows.
const PER_PAGE: u32 = 20;

const DONE: [(&str, &str); 3] = [
    ("deleted", "The endpoint is deleted, with its delivery log."),
    ("test", "A test event is on its way: it shows in the log below once sent."),
    ("redelivered", "The event is queued again: it shows at the top of the log."),
];

fn detail_path(id: WebhookId) -> String {
    format!("{HERE}/{}", id.0)
}

pub async fn to_detail(Id(id): Id) -> Response {
    back(&detail_path(WebhookId(id)))
}

/// A redeliver form's address opened as a page: the endpoint's log.
pub async fn to_log(Ids(id, _): Ids) -> Response {
    back(&format!("{}#log", detail_path(WebhookId(id))))
}

pub async fn list(State(s): State<AppState>, Admin(who): Admin, RawQuery(query): RawQuery) -> Result<Response, PageError> {
    render_list(&s, &who, StatusCode::OK, done_message(query.as_deref(), &DONE), None).await
}

async fn render_list(
    s: &AppState,
    who: &WebSession,
    status: StatusCode,
    done: Option<&str>,
    refused: Option<Refused>,
) -> Result<Response, PageError> {
    let (refused, message) = (refused.as_ref(), message(refused.as_ref()));
    let ticked: Vec<&str> = refused.map(|r| r.held.pairs().filter(|(k, _)| *k == "events").map(|(_, v)| v).collect()).unwrap_or_default();
    let endpoints = s.webhooks.list(&who.session).await?;
    let main = html! {
        h1 { "Webhooks" }
        (notice(done))
        p { "Parley sends each event of your tenant to your endpoints as a signed " code { "POST" } ", retries until your server answers 2xx, and logs every attempt." }
        @if endpoints.is_empty() { p.empty { "No endpoints yet." } } @else {
            table.list {
                thead { tr { th scope="col" { "Endpoint" } th scope="col" { "Events" } th scope="col" { "State" } } }
                tbody {
                    @for w in &endpoints {
                        tr {
                            td { a href=(detail_path(w.id)) { (w.url) } }
                            td { (events_label(w)) }
                            td { (state_label(w)) }
                        }
                    }
                }
            }
        }
        section aria-labelledby="new-endpoint" {
            h2 #new-endpoint { "Add an endpoint" }
            form.stack method="post" action=(HERE) {
                (token_field(who))
                label for="endpoint-url" { "URL" }
                input #endpoint-url name="url" type="url" required placeholder="https://partner.example.com/parley" value=(typed(refused, "url"))
                    aria-invalid=[message.map(|_| "true")] aria-describedby=[message.map(|_| "endpoint-problem")];
                fieldset {
                    legend { "Events (none chosen: every kind)" }
                    @for kind in EventKind::WEBHOOK {
                        label.check { input type="checkbox" name="events" value=(kind.as_str()) checked[ticked.contains(&kind.as_str())]; " " code { (kind.as_str()) } }
                    }
                }
                (problem("endpoint-problem", message))
                button type="submit" { "Add endpoint" }
            }
        }
        (guide())
    };
    Ok(frame(who, "Webhooks", HERE, status, main))
}

fn events_label(w: &Webhook) -> String {
    match &w.events {
        None => "Every kind".to_owned(),
        Some(kinds) => kinds.iter().map(|k| k.as_str()).collect::<Vec<_>>().join(", "),
    }
}

fn state_label(w: &Webhook) -> String {
    if !w.enabled {
        return format!("Disabled: {}", w.disabled_reason.as_deref().unwrap_or("by Parley"));
    }
    match (w.paused_until, w.failure_streak) {
        (Some(_), _) => format!("Paused after {} failures in a row", w.failure_streak),
        (None, 0) => "Active".to_owned(),
        (None, n) => format!("Active, {n} failures in a row"),
    }
}

/// How to check a delivery, with the header names exactly as sent.
fn guide() -> Markup {
    html! {
        section.guide aria-labelledby="verify" {
            h2 #verify { "Verifying deliveries" }
            p { "Every delivery follows the " a href="https://www.standardwebhooks.com/" { "Standard Webhooks" } " specification, so its libraries verify it with the endpoint's " code { "whsec_…" } " secret as it is. The headers:" }
            table.list {
                thead { tr { th scope="col" { "Header" } th scope="col" { "Value" } } }
                tbody {
                    tr { td { code { "webhook-id" } } td { "The event's id (" code { "event_id" } "): the same on every retry and redelivery, so you can drop repeats." } }
                    tr { td { code { "webhook-timestamp" } } td { "Unix seconds when this attempt was signed; refuse ones more than five minutes from your clock." } }
                    tr { td { code { "webhook-signature" } } td { code { "v1," } " and the base64 HMAC-SHA256 of " code { "{webhook-id}.{webhook-timestamp}.{body}" } "; two, separated by a space, for a day after a new secret." } }
                    tr { td { code { "X-Service-Event" } } td { "The event's kind, as in " code { "event" } "." } }
                    tr { td { code { "X-Service-Timestamp" } ", " code { "X-Service-Signature" } } td { "The timestamp and signature in the interface's own form: " code { "v1=" } " and the hex HMAC-SHA256 of " code { "{timestamp}.{body}" } "." } }
                }
            }
            p { "With the " code { "standardwebhooks" } " package (JavaScript, Python and others), verify the raw body before parsing it:" }
            pre { "import { Webhook } from \"standardwebhooks\";\n\nconst payload = new Webhook(secret).verify(rawBody, {\n  \"webhook-id\": headers[\"webhook-id\"],\n  \"webhook-timestamp\": headers[\"webhook-timestamp\"],\n  \"webhook-signature\": headers[\"webhook-signature\"],\n});\n// throws when the signature or the timestamp is wrong" }
            p { "Test events carry " code { "\"test\": true" } " in the envelope; real ones have no " code { "test" } " field." }
        }
    }
}

/// Registers an endpoint and shows it with its secret, this once.
pub async fn create(State(s): State<AppState>, Admin(who): Admin, CheckedForm(form): CheckedForm) -> Result<Response, PageError> {
    let made = match form.read::<WebhookCreateRequest>() {
        Ok(input) => s.webhooks.create(&who.session, input.into()).await,
        Err(e) => Err(e),
    };
    match made {
        Ok(webhook) => {
            render_detail(
                &s,
                &who,
                webhook.id,
                StatusCode::CREATED,
                Detail { secret: Some((webhook.secret.clone(), false)), ..Detail::default() },
            )
            .await
        }
        Err(e) => {
            let (status, message) = refusal(e)?;
            render_list(&s, &who, status, None, Some(Refused { message, held: form })).await
        }
    }
}

#[derive(Default)]
struct Detail<'a> {
    done: Option<&'a str>,
    /// A secret just made: (the secret, whether it replaced another).
    secret: Option<(String, bool)>,
    /// A refused test, rotation or redelivery.
    problem: Option<String>,
    page: u32,
}

pub async fn detail(State(s): State<AppState>, Admin(who): Admin, Id(id): Id, RawQuery(query): RawQuery) -> Result<Response, PageError> {
    let pairs: Vec<(String, String)> = url::form_urlencoded::parse(query.as_deref().unwrap_or_default().as_bytes()).into_owned().collect();
    let page =
        pairs.iter().find(|(k, _)| k == "page").and_then(|(_, v)| v.parse::<u32>().ok()).filter(|p| (1..=100_000).contains(p)).unwrap_or(1);
    let done = done_message(query.as_deref(), &DONE);
    render_detail(&s, &who, WebhookId(id), StatusCode::OK, Detail { done, page, ..Detail::default() }).await
}

async fn render_detail(s: &AppState, who: &WebSession, id: WebhookId, status: StatusCode, view: Detail<'_>) -> Result<Response, PageError> {
    let webhook = s.webhooks.get(&who.session, id).await?;
    let page = PageRequest { page: view.page.max(1), per_page: PER_PAGE };
    let (deliveries, meta) = s.webhooks.deliveries(&who.session, id, page).await?;
    let here = detail_path(id);
    let main = html! {
        p { a href=(HERE) { "All endpoints" } }
        h1 { "Endpoint " code { (webhook.url) } }
        (notice(view.done))
        @if let Some((secret, rotated)) = &view.secret {
            section.created aria-labelledby="secret" {
                h2 #secret { @if *rotated { "The new signing secret" } @else { "The signing secret" } }
                p role="status" { "Copy it now: it is shown this once and cannot be shown again." }
                (copyable("webhook-secret", "the signing secret", secret, false))
                @if *rotated { p.help { "For the next 24 hours every delivery is signed with both the new secret and the old one, so your server keeps accepting deliveries while you put the new secret in place. After that, only the new one signs." } }
            }
        }
        dl.health {
            dt { "Events" } dd { (events_label(&webhook)) }
            dt { "State" } dd { (state_label(&webhook)) }
            dt { "Added" } dd { (when(webhook.created_at)) }
            @if let Some(until) = webhook.previous_secret_expires_at { dt { "Previous secret signs until" } dd { (when(until)) } }
        }
        (problem("endpoint-problem", view.problem.as_deref()))
        p.help #rotate-help { "A new secret is shown once; the current one keeps signing beside it for 24 hours, so your server can switch without missing a delivery. A second new secret within those hours ends the current one's overlap at once." }
        div.actions {
            form.inline method="post" action={ (here) "/test" } {
                (token_field(who))
                label for="test-event" { "Send a test event" }
                select #test-event name="event" {
                    @for kind in EventKind::WEBHOOK { option value=(kind.as_str()) { (kind.as_str()) } }
                }
                button type="submit" { "Send test" }
            }
            form method="post" action={ (here) "/rotate" } {
                (token_field(who))
                input type="hidden" name="shown" value=(signing::fingerprint(&webhook.secret));
                button type="submit" aria-describedby="rotate-help" { "New secret" }
            }
            form method="post" action={ (here) "/delete" } {
                (token_field(who))
                button.danger type="submit" { "Delete endpoint" }
            }
        }
        section #log aria-labelledby="log-heading" {
            h2 #log-heading { "Deliveries" }
            @if deliveries.is_empty() { p.empty { "None yet: send a test event." } }
            @for d in &deliveries { (delivery(who, &here, d)) }
            @if meta.last_page > 1 {
                nav.pages aria-label="Pages of the log" {
                    @if meta.current_page > 1 { a href={ (here) "?page=" (meta.current_page - 1) "#log" } rel="prev" { "Newer" } }
                    span { "Page " (meta.current_page) " of " (meta.last_page) }
                    @if u64::from(meta.current_page) < meta.last_page { a href={ (here) "?page=" (meta.current_page + 1) "#log" } rel="next" { "Older" } }
                }
            }
        }
        (guide())
    };
    Ok(frame(who, "Webhook endpoint", HERE, status, main))
}

fn status_label(status: DeliveryStatus) -> &'static str {
    match status {
        DeliveryStatus::Pending => "Pending",
        DeliveryStatus::Delivered => "Delivered",
        DeliveryStatus::Failed => "Failed",
    }
}

fn delivery(who: &WebSession, here: &str, d: &Delivery) -> Markup {
    html! {
        article.delivery data-delivery=(d.id.0) data-status=(d.status.as_str()) aria-labelledby={ "delivery-" (d.id.0) } {
            h3 #{ "delivery-" (d.id.0) } { code { (d.kind.as_str()) } }
            p.badge data-status=(d.status.as_str()) { (status_label(d.status)) }
            p.help { "Event " code { (d.event_id) } ", queued " (when(d.created_at))
                @if let Some(next) = d.next_attempt_at { ", next attempt " (when(next)) }
                @if let Some(e) = &d.last_error { ". Last error: " (e) } }
            @if !d.attempts.is_empty() {
                table.list {
                    thead { tr { th scope="col" { "Attempt" } th scope="col" { "Answer" } th scope="col" { "Took" } th scope="col" { "Error" } } }
                    tbody {
                        @for a in &d.attempts {
                            tr {
                                td { (when(a.attempted_at)) }
                                td { @if let Some(code) = a.status_code { "HTTP " (code) } @else { "None" } }
                                td { (a.duration_ms) " ms" }
                                td { (a.error.as_deref().unwrap_or("")) }
                            }
                        }
                    }
                }
            }
            form method="post" action={ (here) "/deliveries/" (d.id.0) "/redeliver" } {
                (token_field(who))
                button type="submit" aria-label={ "Redeliver " (d.kind.as_str()) " " (d.event_id) } { "Redeliver" }
            }
        }
    }
}

/// A refused change shows the endpoint's page with the problem.
async fn refused_on_detail(s: &AppState, who: &WebSession, id: WebhookId, e: parley_domain::DomainError) -> Result<Response, PageError> {
    let (status, message) = refusal(e)?;
    render_detail(s, who, id, status, Detail { problem: Some(message), ..Detail::default() }).await
}

pub async fn rotate(
    State(s): State<AppState>,
    Admin(who): Admin,
    Id(id): Id,
    CheckedForm(form): CheckedForm,
) -> Result<Response, PageError> {
    let id = WebhookId(id);
    // The secret the page showed; a form without it checks nothing, as
    // the API does not.
    let rotated = match form.get("shown") {
        Some(shown) => s.webhooks.rotate_secret_shown(&who.session, id, shown.to_owned()).await,
        None => s.webhooks.rotate_secret(&who.session, id).await,
    };
    match rotated {
        Ok(webhook) => {
            render_detail(&s, &who, id, StatusCode::OK, Detail { secret: Some((webhook.secret, true)), ..Detail::default() }).await
        }
        Err(e) => refused_on_detail(&s, &who, id, e).await,
    }
}

pub async fn delete(State(s): State<AppState>, Admin(who): Admin, Id(id): Id, _form: CheckedForm) -> Result<Response, PageError> {
    s.webhooks.delete(&who.session, WebhookId(id)).await?;
    Ok(back(&format!("{HERE}?done=deleted")))
}

pub async fn send_test(
    State(s): State<AppState>,
    Admin(who): Admin,
    Id(id): Id,
    CheckedForm(form): CheckedForm,
) -> Result<Response, PageError> {
    let id = WebhookId(id);
    let sent = match form.read::<WebhookTestRequest>() {
        Ok(input) => s.webhooks.send_test(&who.session, id, input.event).await.map(|_| ()),
        Err(e) => Err(e),
    };
    match sent {
        Ok(()) => Ok(back(&format!("{}?done=test#log", detail_path(id)))),
        Err(e) => refused_on_detail(&s, &who, id, e).await,
    }
}

pub async fn redeliver(
    State(s): State<AppState>,
    Admin(who): Admin,
    Ids(id, delivery): Ids,
    _form: CheckedForm,
) -> Result<Response, PageError> {
    let id = WebhookId(id);
    match s.webhooks.redeliver(&who.session, id, DeliveryId(delivery)).await {
        Ok(_) => Ok(back(&format!("{}?done=redelivered#log", detail_path(id)))),
        Err(e) => refused_on_detail(&s, &who, id, e).await,
    }
}
