//! Operator pushes: a worker that claims queued pushes with a lease (one
//! instance sends each), shares its slots fairly between tenants, and
//! hands each push to the provider of its device's platform: APNs, FCM,
//! Web Push, or a relay that holds the store credentials.

mod apns;
mod fcm;
mod http;
pub mod jwt;
mod relay;
mod webpush;
mod worker;

use std::sync::Arc;
use std::time::Duration;

use parley_domain::model::Platform;
use parley_domain::push::{ClaimedPush, Notification, PushContent, PushOutcome};
use parley_domain::store::StoreError;
use parley_domain::{Clock, Database, DomainError, Timestamp};

pub use apns::ApnsSettings;
pub use fcm::ServiceAccount;
pub use webpush::encrypt as web_push_encrypt;
pub use worker::PushWorker;

use self::jwt::EcKey;
use crate::outbound;

/// Apple's production host.
pub const APNS_URL: &str = "https://api.push.apple.com";
/// Google's host for FCM HTTP v1.
pub const FCM_URL: &str = "https://fcm.googleapis.com";

/// What the `PARLEY_APNS_*`, `PARLEY_FCM_*`, `PARLEY_PUSH_*` and
/// `PARLEY_EXTRA_CA_FILE` settings give.
pub struct PushSettings {
    pub content: PushContent,
    pub apns: Option<ApnsSettings>,
    /// The service account and `PARLEY_FCM_URL`.
    pub fcm: Option<(ServiceAccount, String)>,
    /// `PARLEY_PUSH_RELAY_URL` and `PARLEY_PUSH_RELAY_SECRET`.
    pub relay: Option<(String, String)>,
    /// Trusted besides the system's roots.
    pub extra_roots: Vec<reqwest::Certificate>,
    /// `PARLEY_WEBHOOK_ALLOW_PRIVATE`: browsers' endpoints may be inside
    /// the network.
    pub allow_private: bool,
    /// The VAPID `sub`: where a push service can reach the installation.
    pub vapid_subject: String,
    /// A request without a complete answer by then has failed.
    pub timeout: Duration,
    pub timing: PushTiming,
}

/// How the worker paces itself.
#[derive(Clone, Copy, Debug)]
pub struct PushTiming {
    /// How long a claimed push stays with its worker.
    pub lease: Duration,
    /// How often the worker looks for due retries when nothing wakes it.
    pub poll_interval: Duration,
    /// Pushes in flight at once.
    pub concurrency: usize,
    /// How long pushes in flight may finish once shutdown begins.
    pub shutdown_grace: Duration,
}

impl PushSettings {
    pub fn new(content: PushContent, vapid_subject: String) -> Self {
        Self {
            content,
            apns: None,
            fcm: None,
            relay: None,
            extra_roots: Vec::new(),
            allow_private: false,
            vapid_subject,
            timeout: Duration::from_secs(10),
            timing: PushTiming {
                lease: Duration::from_secs(60),
                poll_interval: Duration::from_secs(1),
                concurrency: 64,
                shutdown_grace: Duration::from_secs(15),
            },
        }
    }
}

/// The providers this installation is set up for.
pub struct Providers {
    content: PushContent,
    apns: Option<apns::Apns>,
    fcm: Option<fcm::Fcm>,
    web: webpush::WebPush,
    relay: Option<relay::Relay>,
    allow_private: bool,
}

/// The name the VAPID key is kept under.
const VAPID_KEY: &str = "vapid";

/// The installation's VAPID key: made by the first instance to start and
/// kept in the database, so every instance signs with it and browsers'
/// subscriptions survive restarts.
pub async fn load_vapid_key(db: &Database, clock: &Arc<dyn Clock>) -> Result<EcKey, DomainError> {
    let fresh = EcKey::generate().map_err(StoreError::Internal)?;
    let kept = parley_domain::keys::keep(db, clock, VAPID_KEY, fresh).await?;
    Ok(EcKey::from_pkcs8(&kept).map_err(StoreError::Internal)?)
}

impl Providers {
    pub fn new(settings: PushSettings, vapid: EcKey) -> Result<Self, reqwest::Error> {
        const AGENT: &str = concat!("Parley-Push/", env!("CARGO_PKG_VERSION"));
        // Provider addresses are the installation operator's to choose;
        // browsers' endpoints are not, and pass the webhook rules.
        let client = |guarded| outbound::client(settings.timeout, &settings.extra_roots, AGENT, guarded);
        let trusted = client(false).build()?;
        let apns = match settings.apns {
            Some(a) => Some(apns::Apns::new(client(false).http2_prior_knowledge().build()?, a)),
            None => None,
        };
        Ok(Self {
            content: settings.content,
            apns,
            fcm: settings.fcm.map(|(account, url)| fcm::Fcm::new(trusted.clone(), account, url)),
            web: webpush::WebPush::new(client(!settings.allow_private).build()?, vapid, settings.vapid_subject),
            relay: settings.relay.map(|(url, secret)| relay::Relay::new(trusted.clone(), url, secret)),
            allow_private: settings.allow_private,
        })
    }

    /// One live test per provider set up, by name, for `parley check` to
    /// run and bound in time. Browsers' push services need no setting, so
    /// have none.
    pub fn probes(&self, now: Timestamp) -> Vec<(&'static str, futures::future::BoxFuture<'_, Result<String, String>>)> {
        use futures::FutureExt;
        let mut probes = Vec::new();
        if let Some(apns) = &self.apns {
            probes.push(("push: APNs", apns.probe(now).boxed()));
        }
        if let Some(fcm) = &self.fcm {
            probes.push(("push: FCM", fcm.probe(now).boxed()));
        }
        if let Some(relay) = &self.relay {
            probes.push(("push: relay", relay.probe(now).boxed()));
        }
        probes
    }

    /// The key browsers subscribe with (`GET /app/push/key`).
    pub fn web_push_key(&self) -> String {
        self.web.public_key()
    }

    /// Sends one push to its device's provider.
    pub async fn send(&self, push: &ClaimedPush, now: Timestamp) -> PushOutcome {
        let n = Notification::of(push, self.content);
        let t = &push.target;
        match (t.platform, &self.apns, &self.fcm) {
            (Platform::Web, ..) => {
                if !self.allow_private && outbound::ip_literal_forbidden(&t.token) {
                    return PushOutcome::DeadToken { reason: "the endpoint address is not allowed".into() };
                }
                self.web.send(&t.token, t.web_keys.as_ref(), &n, now).await
            }
            (Platform::Ios, Some(apns), _) => apns.send(&t.token, t.pushed_before, &n, now).await,
            (Platform::Android, _, Some(fcm)) => fcm.send(&t.token, &n, now).await,
            (Platform::Ios | Platform::Android, ..) => match &self.relay {
                // The relay gets the minimal payload, whatever the setting.
                Some(relay) => {
                    let id = format!("push_{}_{}", push.id.0, push.revision);
                    relay.send(&id, t, &Notification::of(push, PushContent::Minimal), now).await
                }
                None => PushOutcome::Rejected {
                    reason: format!("no provider is set up for {} devices (see docs/notifications.md)", t.platform.as_str()),
                },
            },
        }
    }
}
