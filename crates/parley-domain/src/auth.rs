//! Operator sign-in: login, bearer tokens, logout.
//!
//! Unknown email, wrong password and disabled operator all answer the same
//! `invalid_credentials`, after the same Argon2id work (a dummy hash stands
//! in for a missing operator), so neither the body nor the timing tells
//! whether an email is registered. Failures are counted per email and per
//! client address; past the limit every attempt is refused with a retry
//! time, whatever its password.

use std::net::IpAddr;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use crate::clock::Clock;
use crate::error::DomainError;
use crate::limits::{FailureWindow, RateLimitSettings};
use crate::model::Session;
use crate::password;
use crate::store::Database;
use crate::tenancy::Tenancy;

pub struct LoginInput {
    pub email: String,
    pub password: String,
    pub device_name: Option<String>,
}

pub struct LoginOutcome {
    /// The bearer token, shown this once.
    pub token: String,
    pub session: Session,
}

#[derive(Clone)]
pub struct AuthService {
    db: Database,
    clock: Arc<dyn Clock>,
    tenancy: Tenancy,
    token_ttl: Duration,
    by_email: Arc<FailureWindow<String>>,
    by_address: Arc<FailureWindow<IpAddr>>,
}

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
    pub fn new(db: Database, clock: Arc<dyn Clock>, token_ttl: Duration, limits: &RateLimitSettings) -> Self {
        let tenancy = Tenancy::new(db.clone(), Arc::clone(&clock));
        Self {
            db,
            clock,
            tenancy,
            token_ttl,
            by_email: Arc::new(FailureWindow::new(limits.login_failures_per_email)),
            by_address: Arc::new(FailureWindow::new(limits.login_failures_per_address)),
        }
    }

    pub async fn login(&self, client: IpAddr, input: LoginInput) -> Result<LoginOutcome, DomainError> {
        let now = self.clock.now();
        let email_key = input.email.to_lowercase();
        self.by_email.check(&email_key, now)?;
        self.by_address.check(&client, now)?;

        let email = input.email.clone();
        let found = self.db.read(move |r| Ok(r.login_operator(&email)?)).await?;
        let (operator, hash) = match found {
            Some((op, hash)) => (Some(op), hash),
            None => (None, dummy_hash().to_owned()),
        };
        let password = input.password;
        let matches = tokio::task::spawn_blocking(move || password::verify_password(&password, &hash))
            .await
            .map_err(|_| DomainError::Unavailable("password check failed"))?;
        let operator = match operator {
            Some(op) if matches && op.active => op,
            _ => {
                self.by_email.record(email_key, now);
                self.by_address.record(client, now);
                return Err(DomainError::InvalidCredentials);
            }
        };
        self.by_email.clear(&email_key);

        let token = self.tenancy.issue_operator_token(&operator, input.device_name, self.token_ttl).await?;
        let session = self.session(&token).await?;
        Ok(LoginOutcome { token, session })
    }

    /// Resolves a bearer token; anything but a live token of an active
    /// operator is `Unauthenticated`.
    pub async fn authenticate(&self, token: &str) -> Result<Session, DomainError> {
        if !token.starts_with("pat_") || token.len() > 128 {
            return Err(DomainError::Unauthenticated);
        }
        let session = self.session(token).await?;
        if session.expires_at <= self.clock.now() || !session.operator.active {
            return Err(DomainError::Unauthenticated);
        }
        Ok(session)
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

    /// Forgets failures that have left their window; called by the sweeper.
    pub fn shrink(&self) {
        let now = self.clock.now();
        self.by_email.shrink(now);
        self.by_address.shrink(now);
    }
}
