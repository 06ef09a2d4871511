//! `Services`: a fresh, migrated database of the backend under test, a
//! manual clock, the services built on them as start-up builds them, and
//! fixtures made through those services (a tenant with an admin and an
//! agent, both signed in through `AuthService::login`, a site and its
//! installation).

use std::net::{IpAddr, Ipv4Addr};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use parley_domain::admin::{AdminService, NewInstallationInput, NewOperatorInput};
use parley_domain::auth::{AuthService, DeviceMarks, LoginInput, LoginOutcome, SignIn};
use parley_domain::limits::{ClientKey, RateLimitSettings, RateLimits};
use parley_domain::model::{Installation, Operator, Role, Session, Site, Tenant, TenantId};
use parley_domain::tenancy::Tenancy;
use parley_domain::verification::channels::{Channels, Email, EmailSender, Provider, SendFuture, Sms, SmsSender};
use parley_domain::verification::limits::VerificationLimits;
use parley_domain::verification::service::VerificationService;
use parley_domain::webhooks::service::WebhookService;
use parley_domain::widget::{Caller, Origin, WidgetService, WidgetSettings};
use parley_domain::{Clock, Database, DomainError, ManualClock, Timestamp};
use parley_storage::testing::TestDatabase;
pub use parley_storage::testing::{PASSWORD, START, site_input, tenant_input};
use tempfile::TempDir;

/// `parley serve`'s public URL, as magic links and snippets would show it.
pub const PUBLIC_URL: &str = "https://chat.example.com";

/// Asserts that `$result` is an `Err` matching `$pattern`, showing what
/// came instead. Works for any `Ok` type, `Debug` or not.
macro_rules! assert_refused {
    ($result:expr, $pattern:pat $(if $guard:expr)? $(,)?) => {
        match $result {
            Err($pattern) $(if $guard)? => {}
            Err(other) => panic!("expected {}, got Err({other:?})", stringify!($pattern)),
            Ok(_) => panic!("expected {}, got Ok", stringify!($pattern)),
        }
    };
}
pub(crate) use assert_refused;

/// Whether `e` is a validation error naming `field`.
pub fn invalid_field(e: &DomainError, field: &str) -> bool {
    matches!(e, DomainError::Validation(f) if f.fields().contains_key(field))
}

/// What the services are built with; `Default` is `parley serve`'s
/// defaults.
#[derive(Clone, Debug)]
pub struct Settings {
    pub token_ttl: Duration,
    pub session_ttl: Duration,
    pub rate_limits: RateLimitSettings,
    pub allow_private: bool,
    pub max_endpoints: usize,
    pub verification_limits: VerificationLimits,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            token_ttl: Duration::from_secs(30 * 86_400),
            session_ttl: Duration::from_secs(7 * 86_400),
            rate_limits: RateLimitSettings::defaults(),
            allow_private: false,
            max_endpoints: 10,
            verification_limits: VerificationLimits::defaults(),
        }
    }
}

/// What the verification service would have sent, kept in memory: the
/// in-process channel of these tests, in the place of SMTP, the SMS
/// gateway or the demo's outbox (which lives in `parley-notify`).
#[derive(Default)]
pub struct Outbox {
    emails: Mutex<Vec<(TenantId, Email)>>,
    texts: Mutex<Vec<(TenantId, Sms)>>,
}

impl Outbox {
    /// Every email sent so far, oldest first.
    pub fn emails(&self) -> Vec<(TenantId, Email)> {
        self.emails.lock().expect("outbox").clone()
    }

    /// The six-digit code of the latest email sent to `to`.
    pub fn latest_code(&self, to: &str) -> String {
        let emails = self.emails();
        let (_, email) = emails.iter().rev().find(|(_, e)| e.to == to).unwrap_or_else(|| panic!("no email was sent to {to}"));
        let after = email.text.split("Your verification code is ").nth(1).expect("the email carries a code");
        let code: String = after.chars().take_while(char::is_ascii_digit).collect();
        assert_eq!(code.len(), 6, "a six-digit code in {:?}", email.text);
        code
    }
}

impl EmailSender for Outbox {
    fn send(&self, tenant: TenantId, email: Email) -> SendFuture<'_> {
        self.emails.lock().expect("outbox").push((tenant, email));
        Box::pin(async { Ok(()) })
    }

    fn provider(&self) -> Provider {
        Provider::SandboxOutbox
    }
}

impl SmsSender for Outbox {
    fn send(&self, tenant: TenantId, sms: Sms) -> SendFuture<'_> {
        self.texts.lock().expect("outbox").push((tenant, sms));
        Box::pin(async { Ok(()) })
    }

    fn provider(&self) -> Provider {
        Provider::SandboxOutbox
    }
}

pub struct Services {
    pub db: Database,
    pub clock: Arc<ManualClock>,
    pub settings: Settings,
    /// Where the database is, for a second handle on it (another instance).
    pub database_url: String,
    pub tenancy: Tenancy,
    pub auth: AuthService,
    pub admin: AdminService,
    pub webhooks: WebhookService,
    pub widget: WidgetService,
    pub verification: VerificationService,
    pub outbox: Arc<Outbox>,
    /// Hands each sign-in its own client address unless a test picks one.
    next_address: AtomicU32,
    _dir: TempDir,
    /// Dropped last: the PostgreSQL database, if the suite runs on one.
    _database: Option<TestDatabase>,
}

/// An operator signed in with the mobile API's bearer token.
#[derive(Clone, Debug)]
pub struct SignedIn {
    pub operator: Operator,
    pub email: String,
    pub token: String,
    pub session: Session,
}

/// A tenant with its first admin, an agent of its site, the site and one
/// installation of it.
#[derive(Clone, Debug)]
pub struct TenantFixture {
    pub tenant: Tenant,
    pub admin: SignedIn,
    pub agent: SignedIn,
    pub site: Site,
    pub installation: Installation,
}

impl Services {
    pub async fn new() -> Self {
        Self::with(Settings::default()).await
    }

    pub async fn with(settings: Settings) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let (url, database) = parley_storage::testing::fresh_database(dir.path(), "parley.sqlite3").await;
        let options = parley_storage::Options { pool: 4, ..Default::default() };
        let db = parley_storage::open(&url, options).await.expect("the database opens");
        let clock = ManualClock::new(START);
        let dyn_clock: Arc<dyn Clock> = clock.clone();
        let tenancy = Tenancy::new(db.clone(), Arc::clone(&dyn_clock));
        let auth = AuthService::new(
            db.clone(),
            Arc::clone(&dyn_clock),
            settings.token_ttl,
            settings.session_ttl,
            &settings.rate_limits,
            DeviceMarks::new([7; 32]),
        );
        let admin = AdminService::new(db.clone(), Arc::clone(&dyn_clock), PUBLIC_URL.into());
        let webhooks = WebhookService::new(db.clone(), Arc::clone(&dyn_clock), settings.allow_private, settings.max_endpoints);
        let widget = WidgetService::new(
            db.clone(),
            Arc::clone(&dyn_clock),
            Arc::new(RateLimits::new(&settings.rate_limits)),
            WidgetSettings { heartbeat_stale_after: Duration::from_secs(3600) },
        );
        let outbox = Arc::new(Outbox::default());
        let channels =
            Channels { email: Some(Arc::clone(&outbox) as Arc<dyn EmailSender>), sms: Some(Arc::clone(&outbox) as Arc<dyn SmsSender>) };
        let verification = VerificationService::new(
            db.clone(),
            Arc::clone(&dyn_clock),
            widget.clone(),
            channels,
            settings.verification_limits.clone(),
            PUBLIC_URL.into(),
        );
        Self {
            db,
            clock,
            settings,
            tenancy,
            auth,
            admin,
            webhooks,
            widget,
            verification,
            outbox,
            next_address: AtomicU32::new(1),
            database_url: url,
            _dir: dir,
            _database: database,
        }
    }

    /// The time on the test's clock.
    pub fn now(&self) -> Timestamp {
        self.clock.now()
    }

    /// A client address no other sign-in of this test has used.
    pub fn new_client(&self) -> ClientKey {
        let n = self.next_address.fetch_add(1, Ordering::Relaxed);
        IpAddr::V4(Ipv4Addr::from(0x0a00_0000 + n)).into()
    }

    /// A widget request from a page with no `Origin` restriction.
    pub fn caller(&self) -> Caller {
        Caller { ip: IpAddr::V4(Ipv4Addr::new(203, 0, 113, 7)), origin: Origin::Absent, try_page: None }
    }

    /// Signs in to the mobile API from `client`, with no device mark.
    pub async fn login_from(&self, client: ClientKey, email: &str, password: &str) -> Result<LoginOutcome, DomainError> {
        let input =
            LoginInput { email: email.into(), password: password.into(), device_name: Some("test phone".into()), device_mark: None };
        self.auth.login(client, input, SignIn::Mobile).await
    }

    /// Signs in to the mobile API from an address of its own.
    pub async fn login(&self, email: &str, password: &str) -> Result<LoginOutcome, DomainError> {
        self.login_from(self.new_client(), email, password).await
    }

    /// Signs in `operator` with `password` and keeps what a client keeps.
    pub async fn sign_in(&self, operator: &Operator, password: &str) -> SignedIn {
        let outcome = self.login(&operator.email, password).await.expect("the fixture operator signs in");
        SignedIn { operator: operator.clone(), email: operator.email.clone(), token: outcome.token, session: outcome.session }
    }

    /// A tenant `slug` with its admin (`admin@<slug>.example.com`), a
    /// site, an installation and an agent of that site
    /// (`agent@<slug>.example.com`), each made by the services.
    pub async fn tenant(&self, slug: &str) -> TenantFixture {
        let (tenant, first_admin) = self.tenancy.create_tenant(tenant_input(slug)).await.expect("tenant");
        let admin = self.sign_in(&first_admin, PASSWORD).await;
        let site = self
            .admin
            .create_site(&admin.session, site_input(&format!("{slug} site"), &[&format!("{slug}.example.com")]))
            .await
            .expect("site");
        let (installation, _) = self
            .admin
            .create_installation(
                &admin.session,
                site.id,
                NewInstallationInput { name: Some("Main website".into()), installation_type: None },
            )
            .await
            .expect("installation");
        let agent = self
            .admin
            .create_operator(
                &admin.session,
                NewOperatorInput {
                    email: format!("agent@{slug}.example.com"),
                    name: format!("{slug} agent"),
                    password: PASSWORD.into(),
                    role: Role::Agent,
                    site_ids: vec![site.id],
                },
            )
            .await
            .expect("agent");
        let agent = self.sign_in(&agent, PASSWORD).await;
        TenantFixture { tenant, admin, agent, site, installation }
    }

    /// Whether `token` (a bearer token) still signs its operator in.
    pub async fn authenticates(&self, token: &str) -> bool {
        match self.auth.authenticate(token, SignIn::Mobile).await {
            Ok(_) => true,
            Err(DomainError::Unauthenticated) => false,
            Err(e) => panic!("authenticating failed otherwise: {e:?}"),
        }
    }
}
