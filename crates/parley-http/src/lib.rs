//! Parley's HTTP layer: routing, extraction and error mapping, nothing more.
//!
//! Handlers read a request into the domain's checked input (see
//! [`extract`] and [`requests`]), call one domain service, and turn the
//! result into a response body ([`views`]) or an error ([`error`]).

mod app;
pub mod error;
pub mod extract;
mod html;
mod middleware;
mod requests;
mod routes;
pub mod server;
mod static_file;
pub mod stream;
mod views;

use std::sync::Arc;

use axum::extract::FromRef;
use parley_domain::admin::AdminService;
use parley_domain::auth::AuthService;
use parley_domain::devices::DevicesService;
use parley_domain::feed::FeedService;
use parley_domain::health::HealthService;
use parley_domain::inbox::InboxService;
use parley_domain::metrics::Metrics;
use parley_domain::sandbox::{DemoCredentials, SandboxService};
use parley_domain::verification::service::VerificationService;
use parley_domain::webhooks::service::WebhookService;
use parley_domain::widget::WidgetService;

pub use app::WebAppSettings;
pub use extract::TrustedProxies;
pub use requests::mobile::LONG_POLL_MAX_WAIT;
pub use routes::{BODY_LIMIT, INBOUND_LIMIT, MetricsAccess, RouterOptions, metrics_router, router};

/// What every handler can reach. Cloned for every request (axum's `State`),
/// so it is one `Arc`: a clone is one atomic increment, not one per service.
#[derive(Clone)]
pub struct AppState(Arc<Services>);

impl AppState {
    pub fn new(services: Services) -> Self {
        Self(Arc::new(services))
    }
}

impl std::ops::Deref for AppState {
    type Target = Services;

    fn deref(&self) -> &Services {
        &self.0
    }
}

/// The domain services behind the routes.
pub struct Services {
    pub widget: WidgetService,
    pub health: HealthService,
    pub auth: AuthService,
    pub inbox: InboxService,
    pub admin: AdminService,
    pub webhooks: WebhookService,
    pub devices: DevicesService,
    pub verification: VerificationService,
    pub feed: FeedService,
    pub continuity: parley_domain::continuity::ContinuityService,
    /// The tenant's canned responses.
    pub canned: parley_domain::canned::CannedService,
    pub audit: parley_domain::audit::AuditService,
    pub account: parley_domain::account::AccountService,
    pub invitations: parley_domain::invitations::InvitationService,
    /// Erasing conversations at an admin's request.
    pub erasure: Arc<parley_domain::erasure::ErasureService>,
    /// Uploads, signed links to files, and the files themselves.
    pub attachments: Arc<parley_domain::attachments::AttachmentService>,
    /// Typing indicators, to the other side's streams.
    pub typing: parley_domain::typing::TypingService,
    /// Which conversations have a widget stream open here.
    pub presence: Arc<parley_domain::continuity::presence::Presence>,
    /// `PARLEY_INBOUND_TOKEN`: what `POST inbound/email` requires; the
    /// route answers 404 without it.
    pub inbound_token: Option<String>,
    pub streams: stream::Streams,
    pub metrics: Metrics,
    pub proxies: TrustedProxies,
    pub web_app: WebAppSettings,
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
