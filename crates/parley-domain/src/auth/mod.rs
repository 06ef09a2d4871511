//! Operator sign-in: login, bearer tokens (the mobile API), web app
//! sessions (a cookie), logout.
//!
//! Unknown email, wrong password and disabled operator all answer the same
//! `invalid_credentials`, after the same Argon2id work (a dummy hash stands
//! in for a missing operator), so neither the body nor the timing tells
//! whether an email is registered. Failures are counted per email and per
//! client address, in the database so that they hold across instances
//! (`failures`); past the limit every attempt is refused with a retry
//! time, whatever its password, except from a browser or app that has
//! signed in to that account before (its device mark, `device`), which is
//! judged by its own failures only. Every attempt costs a password check, so
//! attempts are also limited per address whatever their outcome, and an
//! address gets one check at a time: those two protect this instance's
//! CPU and memory, so each instance keeps them itself.

mod device;
mod failures;
mod guard;
mod personal;

pub use device::{DeviceMarks, LIFETIME as DEVICE_MARK_LIFETIME};
pub use guard::SessionGuard;
pub use personal::{MAX_DAYS as MAX_PERSONAL_TOKEN_DAYS, NewPersonalToken};

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use crate::clock::Clock;
use crate::error::DomainError;
use crate::limits::{ClientKey, PerKeyLimit, RateLimitSettings, SlidingWindow};
use crate::model::{Operator, Session};
use crate::password;
use crate::store::Database;
use crate::tenancy::Tenancy;
use failures::LoginFailures;

pub struct LoginInput {
    pub email: String,
    pub password: String,
    pub device_name: Option<String>,
    /// The mark an earlier successful sign-in left on this device.
    pub device_mark: Option<String>,
}

pub struct LoginOutcome {
    /// The bearer token or session token, shown this once.
    pub token: String,
    pub session: Session,
    /// The device's new mark, to send with its next sign-in.
    pub device_mark: String,
}

/// What a sign-in gives: both go through the same checks and limits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SignIn {
    /// A bearer token for the mobile API (`PARLEY_MOBILE_TOKEN_TTL`).
    Mobile,
    /// A web app session (`PARLEY_SESSION_TTL`).
    Web,
}

impl SignIn {
    fn prefix(self) -> &'static str {
        match self {
            SignIn::Mobile => "pat_",
            SignIn::Web => "ses_",
        }
    }
}

#[derive(Clone)]
pub struct AuthService {
    db: Database,
    clock: Arc<dyn Clock>,
    tenancy: Tenancy,
    token_ttl: Duration,
    session_ttl: Duration,
    failures: LoginFailures,
    marks: DeviceMarks,
    /// Every attempt per address, successful ones included.
    attempts_by_address: Arc<SlidingWindow<ClientKey>>,
    /// One password check at a time per address.
    checking: Arc<PerKeyLimit<ClientKey>>,
}

/// How often a token's last use is written down.
const USE_RECORDED_EVERY: Duration = Duration::from_secs(60);

/// A hash of a random password nobody knows, verified when the email is
/// unknown so that such a login costs what a wrong password costs.
fn dummy_hash() -> &'static str {
    static DUMMY: OnceLock<String> = OnceLock::new();
    DUMMY.get_or_init(|| {
        let secret = crate::ids::random_bytes::<16>().map(|b| format!("{b:?}")).unwrap_or_default();
        password::hash_password(&secret).unwrap_or_default()
    })
}

impl AuthService {
    pub fn new(
        db: Database,
        clock: Arc<dyn Clock>,
        token_ttl: Duration,
        session_ttl: Duration,
        limits: &RateLimitSettings,
        marks: DeviceMarks,
    ) -> Self {
        let tenancy = Tenancy::new(db.clone(), Arc::clone(&clock));
        Self {
            db: db.clone(),
            clock,
            tenancy,
            token_ttl,
            session_ttl,
            failures: LoginFailures::new(db.clone(), limits.login_failures_per_email, limits.login_failures_per_address),
            marks,
            attempts_by_address: Arc::new(SlidingWindow::new(limits.logins_per_address)),
            // One check at a time per client; the next may come a second later.
            checking: Arc::new(PerKeyLimit::new(1, 1)),
        }
    }

    /// How long a web app session lives (`PARLEY_SESSION_TTL`), which its
    /// cookie's lifetime follows.
    pub fn session_ttl(&self) -> Duration {
        self.session_ttl
    }

    pub async fn login(&self, client: ClientKey, input: LoginInput, kind: SignIn) -> Result<LoginOutcome, DomainError> {
        let now = self.clock.now();
        let _turn = self.checking.take(&client)?;
        self.attempts_by_address.reserve(&client, now)?;
        let email_key = crate::validate::email_key(&input.email);
        // A mark bound to this email (checked without a read) is checked
        // against the account's password as it is now, which takes a read
        // before the reservation; without one, nothing is read before it,
        // so neither a flood of refused attempts nor a made-up mark reaches
        // the database, or tells whether the email exists.
        let mut found = None;
        let mut device = None;
        if let Some(claimed) = input.device_mark.as_deref().and_then(|mark| self.marks.claim(mark, &email_key, now)) {
            let account = self.lookup(&input.email).await?;
            device = account.as_ref().and_then(|(_, hash)| self.marks.confirm(&claimed, hash));
            found = Some(account);
        }
        let attempt = self.failures.attempt(&email_key, client, device.as_ref());
        let reserved = self.failures.reserve(attempt, now).await?;
        let result = match found {
            Some(account) => Ok(account),
            None => self.lookup(&input.email).await,
        };
        let result = match result {
            Ok(account) => self.check_password(account, input.password).await,
            Err(e) => Err(e),
        };
        let (operator, password_hash) = match result {
            Ok(Some(found)) => found,
            // A wrong password keeps every reservation as a failure.
            Ok(None) => return Err(DomainError::InvalidCredentials),
            Err(e) => {
                if let Err(undone) = self.failures.abandoned(reserved).await {
                    tracing::warn!(error = %undone, "could not take back a sign-in's reserved failures");
                }
                return Err(e);
            }
        };
        // The password was right: a failure to take the reservations back
        // costs the account a counted failure, not this sign-in.
        if let Err(e) = self.failures.succeeded(reserved).await {
            tracing::warn!(error = %e, "could not clear a sign-in's failures");
        }

        let token = match kind {
            SignIn::Mobile => self.tenancy.issue_operator_token(&operator, input.device_name, self.token_ttl).await?,
            SignIn::Web => self.tenancy.issue_session(&operator, self.session_ttl).await?,
        };
        let session = self.session(&token).await?;
        let device_mark = self.marks.issue(&email_key, &password_hash, now)?;
        Ok(LoginOutcome { token, session, device_mark })
    }

    /// The operator signing in with `email`, and its password hash.
    async fn lookup(&self, email: &str) -> Result<Option<(Operator, String)>, DomainError> {
        let email = email.to_owned();
        self.db.read(move |r| Ok(r.login_operator(&email)?)).await
    }

    /// The operator and its hash if the password is right and it is
    /// active. Argon2id runs a bounded number at a time (`password::verify`).
    /// An unknown email, or an invited operator without a password yet,
    /// costs the same check against a dummy hash.
    async fn check_password(&self, found: Option<(Operator, String)>, password: String) -> Result<Option<(Operator, String)>, DomainError> {
        let hash = found.as_ref().map(|(_, hash)| hash.clone()).filter(|h| h != crate::invitations::NO_PASSWORD);
        let against = hash.clone().unwrap_or_else(|| dummy_hash().to_owned());
        let matches = password::verify(password, against).await? && hash.is_some();
        Ok(found.filter(|(op, _)| matches && op.active))
    }

    /// Resolves a bearer token (`Mobile`) or a session cookie (`Web`);
    /// anything but a live token of that kind, of an active operator, is
    /// `Unauthenticated`.
    pub async fn authenticate(&self, token: &str, kind: SignIn) -> Result<Session, DomainError> {
        if !token.starts_with(kind.prefix()) || token.len() > 128 {
            return Err(DomainError::Unauthenticated);
        }
        let session = self.session(token).await?;
        let now = self.clock.now();
        if session.expires_at <= now || !session.operator.active {
            return Err(DomainError::Unauthenticated);
        }
        self.note_use(&session, now).await;
        Ok(session)
    }

    /// Records the token's use for its listing, at most once a minute
    /// (the statement itself skips a use recorded less than a minute
    /// before, whichever instance did). A failure costs only the figure.
    async fn note_use(&self, session: &Session, now: crate::clock::Timestamp) {
        if session.last_used_at.is_some_and(|at| now.since(at) < USE_RECORDED_EVERY) {
            return;
        }
        let (tenant, token) = (session.tenant.id, session.token_id);
        if let Err(e) = self.db.write(move |tx| Ok(tx.touch_token(tenant, token, now)?)).await {
            tracing::debug!(error = %e, "could not record a token's use");
        }
    }

    async fn session(&self, token: &str) -> Result<Session, DomainError> {
        let digest = password::token_digest(token);
        self.db.read(move |r| r.session(&digest)?.ok_or(DomainError::Unauthenticated)).await
    }

    /// Revokes the token in use.
    pub async fn logout(&self, session: &Session) -> Result<(), DomainError> {
        let (tenant, token_id, now) = (session.tenant.id, session.token_id, self.clock.now());
        self.db.write(move |tx| Ok(tx.revoke_token(tenant, token_id, now)?)).await
    }

    /// Forgets attempts that have left their window; called by the
    /// sweeper in every instance.
    pub fn shrink(&self) {
        let now = self.clock.now();
        self.attempts_by_address.shrink(now);
        self.failures.shrink(now);
    }

    /// Removes stored failures that have left every window; called by the
    /// sweeper in the instance that sweeps. Returns how many went.
    pub async fn prune_failures(&self) -> Result<usize, DomainError> {
        self.failures.prune(self.clock.now()).await
    }
}
