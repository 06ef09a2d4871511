//! The sandbox pages of `parley demo`. Never mounted under `parley serve`.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Html;
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::routes;

use super::Mount;
use crate::error::ApiError;
use crate::html::escape;
use crate::{AppState, SandboxInfo};

pub fn routes(api: Mount) -> Mount {
    api.routes(routes!(credentials)).routes(routes!(page)).routes(routes!(outbox)).routes(routes!(deliveries)).routes(routes!(receive))
}

#[derive(Serialize, ToSchema)]
pub struct SandboxCredentials {
    api_base: String,
    widget_token: String,
    /// Bearer token of the demo admin for the mobile and admin APIs.
    mobile_token: String,
    operators: Vec<SandboxOperator>,
}

#[derive(Serialize, ToSchema)]
pub struct SandboxOperator {
    email: String,
    password: String,
    #[schema(value_type = crate::views::names::RoleName)]
    role: &'static str,
}

impl From<&SandboxInfo> for SandboxCredentials {
    fn from(s: &SandboxInfo) -> Self {
        let c = &s.credentials;
        Self {
            api_base: s.api_base.clone(),
            widget_token: c.widget_token.clone(),
            mobile_token: c.mobile_token.clone(),
            operators: c
                .operators
                .iter()
                .map(|(email, password, role)| SandboxOperator { email: email.clone(), password: password.clone(), role: role.as_str() })
                .collect(),
        }
    }
}

/// Demo credentials as JSON.
#[utoipa::path(get, path = "/sandbox/credentials", operation_id = "sandbox_credentials", tag = "sandbox",
    responses((status = 200, body = SandboxCredentials)))]
async fn credentials(State(s): State<AppState>) -> Json<Option<SandboxCredentials>> {
    Json(s.sandbox.as_deref().map(SandboxCredentials::from))
}

#[derive(Serialize, ToSchema)]
pub struct OutboxMessageView {
    #[schema(value_type = crate::views::names::ChannelName)]
    channel: &'static str,
    to: String,
    subject: Option<String>,
    /// The plain-text body, codes and links included.
    body: String,
    created_at: crate::views::DateTime,
}

#[derive(Serialize, ToSchema)]
pub struct OutboxResponse {
    /// Newest first.
    messages: Vec<OutboxMessageView>,
}

async fn outbox_messages(s: &AppState) -> Result<Vec<OutboxMessageView>, ApiError> {
    let Some(info) = s.sandbox.as_deref() else { return Ok(Vec::new()) };
    let list = info.service.outbox().await?;
    Ok(list
        .into_iter()
        .map(|m| OutboxMessageView {
            channel: m.channel,
            to: m.recipient,
            subject: m.subject,
            body: m.body,
            created_at: crate::views::at(m.created_at),
        })
        .collect())
}

/// The emails and SMS the demo kept instead of sending (verification codes
/// and links), newest first.
#[utoipa::path(get, path = "/sandbox/outbox", operation_id = "sandbox_outbox", tag = "sandbox",
    responses((status = 200, body = OutboxResponse)))]
async fn outbox(State(s): State<AppState>) -> Result<Json<OutboxResponse>, ApiError> {
    Ok(Json(OutboxResponse { messages: outbox_messages(&s).await? }))
}

#[derive(Serialize, ToSchema)]
pub struct SandboxDeliveryView {
    #[schema(value_type = crate::views::names::EventName)]
    event: &'static str,
    event_id: String,
    #[schema(value_type = crate::views::names::DeliveryStatusName)]
    status: &'static str,
    attempts: usize,
    last_status_code: Option<u16>,
    created_at: crate::views::DateTime,
}

#[derive(Serialize, ToSchema)]
pub struct SandboxDeliveriesResponse {
    /// Newest first.
    deliveries: Vec<SandboxDeliveryView>,
}

async fn delivery_views(s: &AppState) -> Result<Vec<SandboxDeliveryView>, ApiError> {
    let Some(info) = s.sandbox.as_deref() else { return Ok(Vec::new()) };
    Ok(info
        .service
        .deliveries()
        .await?
        .into_iter()
        .map(|d| SandboxDeliveryView {
            event: d.kind.as_str(),
            event_id: d.event_id,
            status: d.status.as_str(),
            attempts: d.attempts.len(),
            last_status_code: d.attempts.last().and_then(|a| a.status_code),
            created_at: crate::views::at(d.created_at),
        })
        .collect())
}

/// Recent deliveries to the demo's built-in webhook receiver.
#[utoipa::path(get, path = "/sandbox/deliveries", operation_id = "sandbox_deliveries", tag = "sandbox",
    responses((status = 200, body = SandboxDeliveriesResponse)))]
async fn deliveries(State(s): State<AppState>) -> Result<Json<SandboxDeliveriesResponse>, ApiError> {
    Ok(Json(SandboxDeliveriesResponse { deliveries: delivery_views(&s).await? }))
}

/// The demo's built-in webhook receiver: accepts every delivery.
#[utoipa::path(post, path = "/sandbox/webhook-receiver", operation_id = "sandbox_webhook_receiver", tag = "sandbox",
    responses((status = 204, description = "Accepted")))]
async fn receive() -> StatusCode {
    StatusCode::NO_CONTENT
}

/// The sandbox page: credentials, the embed snippet and the outbox.
#[utoipa::path(get, path = "/sandbox", operation_id = "sandbox_page", tag = "sandbox",
    responses((status = 200, description = "HTML page", content_type = "text/html")))]
async fn page(State(s): State<AppState>) -> Result<Html<String>, ApiError> {
    let messages = outbox_messages(&s).await?;
    let deliveries = delivery_views(&s).await?;
    Ok(Html(s.sandbox.as_deref().map(|info| render(info, &messages, &deliveries)).unwrap_or_default()))
}

fn render(s: &SandboxInfo, outbox: &[OutboxMessageView], deliveries: &[SandboxDeliveryView]) -> String {
    let delivery_rows: String = if deliveries.is_empty() {
        "<tr><td colspan=\"4\">No events yet.</td></tr>".to_owned()
    } else {
        deliveries
            .iter()
            .map(|d| {
                let code = d.last_status_code.map(|c| c.to_string()).unwrap_or_else(|| "-".to_owned());
                format!(
                    "<tr><td>{}</td><td>{}</td><td>{}</td><td>{} ({code})</td></tr>",
                    escape(&d.created_at.to_string()),
                    d.event,
                    escape(&d.event_id),
                    d.status
                )
            })
            .collect()
    };
    let c = SandboxCredentials::from(s);
    let outbox_rows: String = if outbox.is_empty() {
        "<tr><td colspan=\"4\">Nothing sent yet.</td></tr>".to_owned()
    } else {
        outbox
            .iter()
            .map(|m| {
                let subject = m.subject.as_deref().map(|s| format!("<strong>{}</strong><br>", escape(s))).unwrap_or_default();
                format!(
                    "<tr><td>{}</td><td>{}</td><td>{}</td><td>{subject}<pre>{}</pre></td></tr>",
                    escape(&m.created_at.to_string()),
                    m.channel,
                    escape(&m.to),
                    escape(&m.body)
                )
            })
            .collect()
    };
    let snippet = parley_domain::widget::embed_snippet(&c.api_base, &c.widget_token);
    let operators: String = c
        .operators
        .iter()
        .map(|o| {
            format!("<tr><td>{}</td><td><code>{}</code></td><td><code>{}</code></td></tr>", o.role, escape(&o.email), escape(&o.password))
        })
        .collect();
    format!(
        r#"<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Parley sandbox</title>
<style>
body {{ font: 16px/1.5 system-ui, sans-serif; max-width: 52rem; margin: 2rem auto; padding: 0 1rem; color: #1f2937; }}
code, pre {{ background: #f3f4f6; border-radius: 4px; padding: .1rem .3rem; word-break: break-all; }}
pre {{ padding: 1rem; white-space: pre-wrap; }}
table {{ border-collapse: collapse; }} td, th {{ border: 1px solid #e5e7eb; padding: .3rem .6rem; text-align: left; vertical-align: top; }}
.scroll {{ overflow-x: auto; max-width: 100%; }}
</style>
</head>
<body>
<main>
<h1>Parley sandbox</h1>
<p>A demo tenant with no real data. Everything below is also available as JSON at <a href="/sandbox/credentials">/sandbox/credentials</a>; the API is described at <a href="/openapi.json">/openapi.json</a>.</p>
<h2>Credentials</h2>
<div class="scroll" tabindex="0" role="region" aria-label="Credentials"><table>
<tr><th>API base</th><td colspan="2"><code id="api-base">{api_base}</code></td></tr>
<tr><th>Demo widget token</th><td colspan="2"><code id="widget-token">{widget_token}</code></td></tr>
<tr><th>Demo mobile bearer token</th><td colspan="2"><code id="mobile-token">{mobile_token}</code></td></tr>
</table></div>
<h2>Operator logins</h2>
<p>Answer the visitors in the web app: <a id="web-app" href="/app">/app</a>, signed in with one of these.</p>
<div class="scroll" tabindex="0" role="region" aria-label="Operator logins"><table><tr><th>Role</th><th>Email</th><th>Password</th></tr>{operators}</table></div>
<h2>Outbox</h2>
<p>Emails and SMS the demo would have sent (verification codes and links), newest first. As JSON: <a href="/sandbox/outbox">/sandbox/outbox</a>.</p>
<div class="scroll" tabindex="0" role="region" aria-label="Outbox"><table id="outbox"><tr><th>When</th><th>Channel</th><th>To</th><th>Message</th></tr>{outbox_rows}</table></div>
<h2>Webhook deliveries</h2>
<p>The demo registers its own receiver, so every event shows here with its delivery. As JSON: <a href="/sandbox/deliveries">/sandbox/deliveries</a>.</p>
<div class="scroll" tabindex="0" role="region" aria-label="Webhook deliveries"><table id="deliveries"><tr><th>When</th><th>Event</th><th>Event id</th><th>Status (last HTTP status)</th></tr>{delivery_rows}</table></div>
<h2>Embed snippet</h2>
<p>Paste this into any page of the site:</p>
<pre id="embed-snippet">{snippet}</pre>
<p>This page embeds it exactly so: the chat button in the corner is the widget.</p>
</main>
{snippet_live}
</body>
</html>
"#,
        api_base = escape(&c.api_base),
        widget_token = escape(&c.widget_token),
        mobile_token = escape(&c.mobile_token),
        snippet = escape(&snippet),
        snippet_live = snippet,
        delivery_rows = delivery_rows,
        outbox_rows = outbox_rows,
    )
}
