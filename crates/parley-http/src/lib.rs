//! Parley's HTTP layer: routing, extraction and error mapping, nothing more.
//!
//! Handlers read a request into the domain's checked input (see
//! [`extract`] and [`requests`]), call one domain service, and turn the
//! result into a response body ([`views`]) or an error ([`error`]).

pub mod error;
pub mod extract;
mod html;
mod middleware;
mod requests;
mod routes;
mod views;

use std::sync::Arc;

use axum::extract::FromRef;
use parley_domain::admin::AdminService;
use parley_domain::auth::AuthService;
use parley_domain::health::HealthService;
use parley_domain::inbox::InboxService;
use parley_domain::metrics::Metrics;
use parley_domain::sandbox::{DemoCredentials, SandboxService};
use parley_domain::verification::service::VerificationService;
use parley_domain::webhooks::service::WebhookService;
use parley_domain::widget::WidgetService;

pub use extract::TrustedProxies;
pub use routes::{BODY_LIMIT, metrics_router, router};

/// What every handler can reach.
#[derive(Clone)]
pub struct AppState {
    pub widget: WidgetService,
    pub health: HealthService,
    pub auth: AuthService,
    pub inbox: InboxService,
    pub admin: AdminService,
    pub webhooks: WebhookService,
    pub verification: VerificationService,
    pub metrics: Metrics,
    pub proxies: TrustedProxies,
    /// Present only under `parley demo`: mounts `/sandbox`.
    pub sandbox: Option<Arc<SandboxInfo>>,
}

impl FromRef<AppState> for TrustedProxies {
    fn from_ref(s: &AppState) -> Self {
        s.proxies.clone()
    }
}

/// What the sandbox pages show.
pub struct SandboxInfo {
    pub api_base: String,
    pub credentials: DemoCredentials,
    pub service: SandboxService,
}
