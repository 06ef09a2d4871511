//! The sandbox pages of `parley demo`. Never mounted under `parley serve`.

use axum::Json;
use axum::extract::State;
use axum::response::Html;
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::{AppState, SandboxInfo};

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(credentials)).routes(routes!(page))
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

/// The sandbox page: credentials and the embed snippet.
#[utoipa::path(get, path = "/sandbox", operation_id = "sandbox_page", tag = "sandbox",
    responses((status = 200, description = "HTML page", content_type = "text/html")))]
async fn page(State(s): State<AppState>) -> Html<String> {
    Html(s.sandbox.as_deref().map(render).unwrap_or_default())
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;").replace('\'', "&#39;")
}

fn render(s: &SandboxInfo) -> String {
    let c = SandboxCredentials::from(s);
    let snippet = format!(
        r#"<script async src="{base}/widget.js" data-api-base="{base}" data-installation-token="{token}"></script>"#,
        base = c.api_base,
        token = c.widget_token
    );
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
table {{ border-collapse: collapse; }} td, th {{ border: 1px solid #e5e7eb; padding: .3rem .6rem; text-align: left; }}
</style>
</head>
<body>
<h1>Parley sandbox</h1>
<p>A demo tenant with no real data. Everything below is also available as JSON at <a href="/sandbox/credentials">/sandbox/credentials</a>; the API is described at <a href="/openapi.json">/openapi.json</a>.</p>
<h2>Credentials</h2>
<table>
<tr><th>API base</th><td colspan="2"><code id="api-base">{api_base}</code></td></tr>
<tr><th>Demo widget token</th><td colspan="2"><code id="widget-token">{widget_token}</code></td></tr>
<tr><th>Demo mobile bearer token</th><td colspan="2"><code id="mobile-token">{mobile_token}</code></td></tr>
</table>
<h2>Operator logins</h2>
<table><tr><th>Role</th><th>Email</th><th>Password</th></tr>{operators}</table>
<h2>Embed snippet</h2>
<p>Paste this into any page of the site:</p>
<pre id="embed-snippet">{snippet}</pre>
</body>
</html>
"#,
        api_base = escape(&c.api_base),
        widget_token = escape(&c.widget_token),
        mobile_token = escape(&c.mobile_token),
        snippet = escape(&snippet),
    )
}
