//! Building and running the service: open storage, build the domain
//! services, bind the listener, serve until told to stop, then drain.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use parley_domain::admin::AdminService;
use parley_domain::attachments::AttachmentService;
use parley_domain::attachments::links::Links;
use parley_domain::auth::{AuthService, DeviceMarks};
use parley_domain::automation::{Automation, AutomationSettings};
use parley_domain::continuity::presence::Presence;
use parley_domain::continuity::tokens::MailTokens;
use parley_domain::continuity::{ContinuityService, MailSettings};
use parley_domain::devices::DevicesService;
use parley_domain::erasure::ErasureService;
use parley_domain::feed::{CursorSeal, FeedService, FeedSettings, Hub};
use parley_domain::health::{HealthService, HealthSettings};
use parley_domain::inbox::InboxService;
use parley_domain::keys::{Purpose, ServerKeys};
use parley_domain::limits::RateLimits;
use parley_domain::metrics::Metrics;
use parley_domain::sandbox::{self, DemoCredentials, SandboxService};
use parley_domain::tenancy::Tenancy;
use parley_domain::verification::channels::{Channels, EmailSender, SmsSender};
use parley_domain::verification::service::VerificationService;
use parley_domain::webhooks::service::WebhookService;
use parley_domain::widget::{WidgetService, WidgetSettings};
use parley_domain::{Clock, Database, DomainError};
use parley_http::server::ServerSettings;
use parley_http::stream::{StreamSettings, Streams};
use parley_http::{AppState, MetricsAccess, RouterOptions, SandboxInfo, Services, TrustedProxies, WebAppSettings};
use parley_notify::{SandboxOutbox, SmsGateway, SmtpMailer};
use parley_worker::feed::FeedFollower;
use parley_worker::mail::MailWorker;
use parley_worker::push::{Providers, PushSettings, PushWorker, load_vapid_key};
use parley_worker::sweeper::Sweeper;
use parley_worker::webhooks::{DeliverySettings, WebhookWorker};
use tokio::net::{TcpListener, TcpSocket};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::config::Config;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Serve,
    /// Seeds the sandbox tenant and mounts `/sandbox`.
    Demo,
}

#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("cannot open the database: {0}")]
    Database(#[from] parley_storage::OpenError),
    #[error("cannot listen on {addr}: {source}")]
    Listen { addr: SocketAddr, source: std::io::Error },
    #[error("cannot seed the sandbox: {0}")]
    Seed(DomainError),
    #[error("cannot build the webhook client: {0}")]
    WebhookClient(String),
    #[error("cannot set up message delivery: {0}")]
    Channel(String),
    #[error("cannot read or make the installation's secret: {0}")]
    Keys(DomainError),
    #[error("cannot set up operator pushes: {0}")]
    Push(String),
    #[error("cannot open the attachments' store: {0}")]
    Files(String),
}

/// Connections the separate metrics listener accepts at once.
const METRICS_CONNECTIONS: usize = 16;

pub struct Application {
    listener: TcpListener,
    /// `PARLEY_METRICS_LISTEN`: `/metrics` on its own address.
    metrics_listener: Option<TcpListener>,
    router: axum::Router,
    metrics_router: axum::Router,
    db: Database,
    local_addr: SocketAddr,
    public_url: String,
    webhook_worker: Arc<WebhookWorker>,
    push_worker: Arc<PushWorker>,
    mail_worker: Arc<MailWorker>,
    presence: Arc<Presence>,
    sweeper: Sweeper,
    follower: FeedFollower,
    streams: Streams,
    demo: Option<DemoCredentials>,
    server: ServerSettings,
}

/// Connections the kernel queues for the accept loop. Thousands of widgets
/// reconnect at once after a restart or a network blip; a short queue
/// drops their handshakes and each dropped one waits a second or more
/// to retry. The kernel caps it at `net.core.somaxconn`.
const LISTEN_BACKLOG: u32 = 4096;

fn bind(addr: SocketAddr) -> Result<TcpListener, StartError> {
    let listen = || -> std::io::Result<TcpListener> {
        let socket = if addr.is_ipv4() { TcpSocket::new_v4()? } else { TcpSocket::new_v6()? };
        socket.set_reuseaddr(true)?;
        socket.bind(addr)?;
        socket.listen(LISTEN_BACKLOG)
    };
    listen().map_err(|source| StartError::Listen { addr, source })
}

impl Application {
    /// Opens storage, builds the services and binds the listeners (port 0
    /// picks a free port).
    pub async fn build(config: &Config, mode: Mode, clock: Arc<dyn Clock>) -> Result<Self, StartError> {
        let db = parley_storage::open(&config.database_url, config.storage_options()).await?;
        let listener = bind(config.listen)?;
        let local_addr = listener.local_addr().map_err(|source| StartError::Listen { addr: config.listen, source })?;
        let metrics_listener = match config.metrics_listen {
            Some(addr) => Some(bind(addr)?),
            None => None,
        };
        let public_url = config.public_base(local_addr);
        let demo = match mode {
            Mode::Serve => None,
            Mode::Demo => {
                let tenancy = Tenancy::new(db.clone(), Arc::clone(&clock));
                Some(sandbox::seed(&tenancy, config.mobile_token_ttl).await.map_err(StartError::Seed)?)
            }
        };

        // The demo's own webhook receiver lives on this machine.
        let allow_private = config.webhook_allow_private || mode == Mode::Demo;
        let instance: Arc<str> = config.instance.clone().unwrap_or_else(|| format!("{}:{}", host_name(), local_addr.port())).into();
        let metrics = Metrics::new(db.clone(), Arc::clone(&clock), &instance);
        let keys = ServerKeys::load(&db, &clock).await.map_err(StartError::Keys)?;
        let limits = Arc::new(RateLimits::new(&config.rate_limits));
        let files_url = match mode {
            Mode::Demo if !config.files.url_set => crate::config::DEMO_FILES_URL,
            _ => config.files.url.as_str(),
        };
        let files =
            parley_storage::files::open(files_url, config.files.credentials.clone()).map_err(|e| StartError::Files(e.to_string()))?;
        if db.kind() == "postgres" && !files.shared() {
            tracing::warn!(
                files = files.describe(),
                "attachments are kept in a folder of this machine: other instances sharing the database cannot serve them; \
                 set PARLEY_FILES_URL to an s3:// store to run several"
            );
        }
        let links = Links::new(&keys, &public_url, Arc::clone(&clock));
        let attachments = Arc::new(AttachmentService::new(db.clone(), files, links.clone(), config.files.limits, Arc::clone(&clock)));
        let erasure =
            Arc::new(ErasureService::new(db.clone(), Arc::clone(&clock), Arc::clone(&attachments), config.conversation_retention));
        let auth = AuthService::new(
            db.clone(),
            Arc::clone(&clock),
            config.mobile_token_ttl,
            config.session_ttl,
            &config.rate_limits,
            DeviceMarks::new(*keys.key(Purpose::DeviceMark)),
        );
        let widget = WidgetService::new(
            db.clone(),
            Arc::clone(&clock),
            Arc::clone(&limits),
            WidgetSettings { heartbeat_stale_after: config.heartbeat_stale_after },
        );
        let channels = channels(config, mode, &db, &clock)?;
        let mail_sender = channels.email.clone();
        let verification = VerificationService::new(
            db.clone(),
            Arc::clone(&clock),
            widget.clone(),
            channels,
            config.verification_limits.clone(),
            public_url.clone(),
        );
        let delivery = DeliverySettings {
            timeout: config.webhook_timeout,
            lease: config.webhook_lease,
            poll_interval: config.webhook_poll_interval,
            concurrency: config.webhook_concurrency,
            shutdown_grace: config.shutdown_timeout,
            extra_roots: extra_certificates(config),
            links: Some(links),
            ..DeliverySettings::new(config.webhook_retry_schedule.clone(), allow_private)
        };
        let webhook_worker = WebhookWorker::new(db.clone(), Arc::clone(&clock), delivery, metrics.clone())
            .map_err(|e| StartError::WebhookClient(e.to_string()))?;
        let vapid = load_vapid_key(&db, &clock).await.map_err(StartError::Keys)?;
        let push_settings = push_settings(config, allow_private, &public_url);
        let timing = push_settings.timing;
        let providers = Arc::new(Providers::new(push_settings, vapid).map_err(|e| StartError::Push(e.to_string()))?);
        let push_worker = PushWorker::new(db.clone(), Arc::clone(&clock), Arc::clone(&providers), timing, metrics.clone());
        let mail_settings = MailSettings {
            delay: config.continuity.email_delay,
            public_url: public_url.clone(),
            inbound_domain: config.continuity.inbound_domain.clone(),
            mail_enabled: mail_sender.is_some(),
        };
        let mail_tokens = MailTokens::new(&keys);
        let continuity = ContinuityService::new(
            db.clone(),
            Arc::clone(&clock),
            widget.clone(),
            Arc::clone(&limits),
            mail_tokens.clone(),
            mail_settings.clone(),
            metrics.clone(),
        );
        let mail_worker = Arc::new(MailWorker {
            db: db.clone(),
            clock: Arc::clone(&clock),
            sender: mail_sender.clone(),
            settings: mail_settings,
            tokens: mail_tokens,
            metrics: metrics.clone(),
            poll_interval: config.webhook_poll_interval,
            send_timeout: config.shutdown_timeout.saturating_sub(Duration::from_secs(2)).max(Duration::from_secs(5)),
        });
        let presence = Presence::new(db.clone(), Arc::clone(&clock), Arc::clone(&instance));
        let sweeper = Sweeper {
            db: db.clone(),
            automation: Automation::new(
                db.clone(),
                Arc::clone(&clock),
                AutomationSettings {
                    stale_after: config.heartbeat_stale_after,
                    auto_close_after: config.auto_close_after,
                    retention: config.event_retention,
                    delivery_give_up_after: give_up_after(&config.webhook_retry_schedule, config.webhook_lease),
                },
            ),
            limits: Arc::clone(&limits),
            auth: auth.clone(),
            verification: verification.clone(),
            metrics: metrics.clone(),
            every: config.sweep_interval,
            attachments: Arc::clone(&attachments),
            erasure: Arc::clone(&erasure),
        };
        let feed = FeedService::new(
            db.clone(),
            Arc::clone(&clock),
            Arc::new(Hub::default()),
            FeedSettings { retention: config.event_retention },
            CursorSeal::new(*keys.key(Purpose::VisitorCursor)),
        );
        let max_connections = crate::resources::fit_connection_cap(config.max_connections);
        let per_address = crate::resources::fit_streams_per_address(config.streams_per_address, max_connections);
        let total = crate::resources::streams_total(max_connections);
        let streams = Streams::new(StreamSettings { keepalive: config.stream_keepalive, per_address, total }, &metrics);
        let typing = parley_domain::typing::TypingService::new(db.clone(), widget.clone());
        let state = AppState::new(Services {
            typing,
            widget,
            streams: streams.clone(),
            verification,
            health: HealthService::new(
                db.clone(),
                Arc::clone(&clock),
                HealthSettings {
                    sweep_interval: config.sweep_interval,
                    queue_max_age: config.health_queue_max_age,
                    instance: Arc::clone(&instance),
                },
            ),
            auth,
            feed: feed.clone(),
            continuity,
            erasure,
            canned: parley_domain::canned::CannedService::new(db.clone(), Arc::clone(&clock)),
            audit: parley_domain::audit::AuditService::new(db.clone()),
            account: parley_domain::account::AccountService::new(db.clone(), Arc::clone(&clock), config.rate_limits.password_guesses),
            invitations: parley_domain::invitations::InvitationService::new(
                db.clone(),
                Arc::clone(&clock),
                mail_sender.clone(),
                public_url.clone(),
                config.rate_limits.password_links_per_tenant,
            ),
            attachments,
            presence: Arc::clone(&presence),
            inbound_token: config.continuity.inbound_token.clone(),
            inbox: InboxService::new(db.clone(), Arc::clone(&clock)),
            admin: AdminService::new(db.clone(), Arc::clone(&clock), public_url.clone()),
            webhooks: WebhookService::new(db.clone(), Arc::clone(&clock), allow_private, config.webhook_endpoints_per_tenant),
            devices: DevicesService::new(db.clone(), Arc::clone(&clock), allow_private),
            metrics: metrics.clone(),
            proxies: TrustedProxies::new(config.trusted_proxies.clone()),
            web_app: WebAppSettings {
                secure_cookies: public_url.starts_with("https://"),
                public_url: public_url.clone(),
                clock: Arc::clone(&clock),
                push_key: providers.web_push_key(),
            },
            sandbox: match &demo {
                Some(credentials) => {
                    // The worker reaches the receiver on this very listener.
                    let own = format!("http://127.0.0.1:{}", local_addr.port());
                    let receiver = sandbox::register_receiver(&db, &clock, credentials.tenant, &own).await.map_err(StartError::Seed)?;
                    let service = SandboxService::new(db.clone(), credentials.tenant, receiver);
                    Some(Arc::new(SandboxInfo { api_base: public_url.clone(), credentials: credentials.clone(), service }))
                }
                None => None,
            },
        });
        let metrics_access = match (&metrics_listener, &config.metrics_token) {
            (None, Some(token)) => MetricsAccess::Token(token.clone()),
            _ => MetricsAccess::Hidden,
        };
        let options = RouterOptions { metrics: metrics_access, body_timeout: config.request_read_timeout, public_url: public_url.clone() };
        let server = ServerSettings {
            header_timeout: config.request_header_timeout,
            idle_timeout: config.idle_timeout,
            write_timeout: config.response_write_timeout,
            max_connections,
            drain_timeout: config.shutdown_timeout,
        };
        let follower = FeedFollower { db: db.clone(), hub: Arc::clone(feed.hub()), clock: Arc::clone(&clock) };
        Ok(Self {
            follower,
            listener,
            router: parley_http::router(state, options),
            metrics_router: parley_http::metrics_router(metrics, config.metrics_token.clone()),
            metrics_listener,
            db,
            local_addr,
            public_url,
            webhook_worker,
            push_worker,
            mail_worker,
            presence,
            sweeper,
            streams,
            demo,
            server,
        })
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// The address of the separate metrics listener, when configured.
    pub fn metrics_addr(&self) -> Option<SocketAddr> {
        self.metrics_listener.as_ref().and_then(|l| l.local_addr().ok())
    }

    pub fn public_url(&self) -> &str {
        &self.public_url
    }

    pub fn demo_credentials(&self) -> Option<&DemoCredentials> {
        self.demo.as_ref()
    }

    pub fn database(&self) -> &Database {
        &self.db
    }

    /// Serves until `shutdown` is cancelled; then stops accepting, lets
    /// requests and webhook attempts in flight finish for at most the
    /// shutdown time (attempts still out then are abandoned to their
    /// leases), and closes the database after every accepted write is
    /// committed.
    pub async fn run(self, shutdown: CancellationToken) -> std::io::Result<()> {
        let tasks = TaskTracker::new();
        tasks.spawn(Arc::clone(&self.webhook_worker).run(shutdown.clone()));
        tasks.spawn(Arc::clone(&self.push_worker).run(shutdown.clone()));
        for _ in 0..parley_worker::mail::SENDERS {
            tasks.spawn(Arc::clone(&self.mail_worker).run(shutdown.clone()));
        }
        let stopping = shutdown.clone();
        tasks.spawn(Arc::clone(&self.presence).run(async move { stopping.cancelled().await }));
        self.sweeper.spawn(&tasks, shutdown.clone());
        tasks.spawn(self.follower.run(shutdown.clone()));
        // Live streams never finish on their own: they end when shutdown
        // begins, so the server's drain waits for requests, not for them.
        let (streams, stopping) = (self.streams.clone(), shutdown.clone());
        tasks.spawn(async move {
            stopping.cancelled().await;
            streams.close();
        });
        if let Some(listener) = self.metrics_listener {
            // A scraper or two: a handful of connections is plenty, and
            // they come out of the same open-file limit.
            let settings = ServerSettings { max_connections: METRICS_CONNECTIONS, ..self.server };
            tasks.spawn(parley_http::server::serve(listener, self.metrics_router, settings, shutdown.clone()));
        }
        parley_http::server::serve(self.listener, self.router, self.server, shutdown.clone()).await;
        shutdown.cancel();
        tasks.close();
        // Every task bounds its own drain by the shutdown time; this is the
        // backstop should one of them not.
        let backstop = self.server.drain_timeout + std::time::Duration::from_secs(1);
        if tokio::time::timeout(backstop, tasks.wait()).await.is_err() {
            tracing::warn!("background work did not stop within the shutdown time");
        }
        self.db.close().await;
        Ok(())
    }
}

/// The span of the retry schedule (with its jitter of up to 10 %) and a
/// lease: a delivery still pending after that is given up.
fn give_up_after(schedule: &[std::time::Duration], lease: std::time::Duration) -> std::time::Duration {
    schedule.iter().sum::<std::time::Duration>().mul_f64(1.1) + lease
}

/// Real channels where configured; under `parley demo` the others go to the
/// sandbox outbox; under `parley serve` they stay off (and their methods
/// are not offered).
fn channels(config: &Config, mode: Mode, db: &Database, clock: &Arc<dyn Clock>) -> Result<Channels, StartError> {
    let outbox = (mode == Mode::Demo).then(|| Arc::new(SandboxOutbox::new(db.clone(), Arc::clone(clock))));
    let email: Option<Arc<dyn EmailSender>> = match (&config.smtp_url, &config.mail_from) {
        (Some(url), Some(from)) => {
            Some(Arc::new(SmtpMailer::new(url, from, config.extra_roots.as_ref().map(|r| r.pem.as_slice())).map_err(StartError::Channel)?))
        }
        _ => outbox.clone().map(|o| o as Arc<dyn EmailSender>),
    };
    let sms: Option<Arc<dyn SmsSender>> = match &config.sms_gateway_url {
        Some(url) => Some(Arc::new(SmsGateway::new(url.clone(), config.sms_gateway_token.clone()).map_err(StartError::Channel)?)),
        None => outbox.map(|o| o as Arc<dyn SmsSender>),
    };
    Ok(Channels { email, sms })
}

/// The machine's name, for the default instance name.
fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "parley".to_owned())
}

/// The providers' settings from the configuration (which read and parsed
/// their credentials).
pub(crate) fn push_settings(config: &Config, allow_private: bool, public_url: &str) -> PushSettings {
    let c = &config.push;
    // RFC 8292: a push service may reach the sender through `sub`, a
    // mailto: or https: address (services refuse others). Without either
    // setting, the postmaster every mail domain must have (RFC 5321).
    let subject = match (&config.mail_from, public_url.starts_with("https://")) {
        (_, true) => public_url.to_owned(),
        (Some(from), false) => format!("mailto:{}", mail_address(from)),
        (None, false) => {
            let host = url::Url::parse(public_url).ok().and_then(|u| u.host_str().map(str::to_owned)).unwrap_or_else(|| "localhost".into());
            format!("mailto:postmaster@{host}")
        }
    };
    let mut s = PushSettings::new(c.content, subject);
    s.allow_private = allow_private;
    s.extra_roots = extra_certificates(config);
    s.timeout = config.webhook_timeout;
    s.timing.shutdown_grace = config.shutdown_timeout;
    s.timing.poll_interval = config.webhook_poll_interval;
    // An FCM push may take two requests (an access token, then the send):
    // the lease outlasts both, with room to record the outcome.
    s.timing.lease = config.webhook_lease.max(config.webhook_timeout * 3);
    s.apns = c.apns.clone();
    s.fcm = c.fcm.clone();
    s.relay = c.relay.clone();
    s
}

/// `PARLEY_EXTRA_CA_FILE`'s certificates, for an HTTP client.
fn extra_certificates(config: &Config) -> Vec<reqwest::Certificate> {
    config.extra_roots.as_ref().map(|r| r.certificates.clone()).unwrap_or_default()
}

/// The address in a `PARLEY_MAIL_FROM` such as `Parley <support@example.com>`.
fn mail_address(from: &str) -> &str {
    match (from.find('<'), from.rfind('>')) {
        (Some(start), Some(end)) if start < end => &from[start + 1..end],
        _ => from.trim(),
    }
}
