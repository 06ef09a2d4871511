//! The domain's one error type.
//!
//! Handlers never build error bodies themselves: they return a
//! [`DomainError`] and the HTTP layer maps it, once, to the JSON error body.
//! Variants carry only what may be shown to a client; internal details stay
//! in [`crate::store::StoreError`] and are logged, never sent.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::store::StoreError;

/// Per-field validation messages, keyed by the request field name.
#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize)]
pub struct FieldErrors(BTreeMap<String, Vec<String>>);

impl FieldErrors {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn single(field: &str, message: impl Into<String>) -> Self {
        let mut errors = Self::new();
        errors.add(field, message);
        errors
    }

    pub fn add(&mut self, field: &str, message: impl Into<String>) {
        self.0.entry(field.to_owned()).or_default().push(message.into());
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn fields(&self) -> &BTreeMap<String, Vec<String>> {
        &self.0
    }
}

#[derive(Debug, thiserror::Error)]
pub enum DomainError {
    /// Unknown, or belonging to another tenant or site: the two are
    /// deliberately indistinguishable.
    #[error("not found")]
    NotFound,
    #[error("validation failed")]
    Validation(FieldErrors),
    /// No valid bearer token: missing, malformed, expired or revoked.
    #[error("unauthenticated")]
    Unauthenticated,
    /// Unknown email or wrong password, deliberately indistinguishable.
    #[error("invalid credentials")]
    InvalidCredentials,
    #[error("{0}")]
    Forbidden(&'static str),
    #[error("origin not allowed")]
    OriginNotAllowed,
    #[error("{0}")]
    Conflict(&'static str),
    /// A wrong verification code.
    #[error("invalid code")]
    InvalidCode,
    /// A verification challenge that expired, was used, superseded, or
    /// spent by too many wrong codes.
    #[error("challenge expired")]
    ChallengeExpired,
    /// A feed cursor older than the retention, or naming no entry the
    /// feed holds: the client reloads and follows from a new cursor.
    #[error("cursor expired")]
    CursorExpired,
    /// A `user_hash` or identity token the installation's secrets do not
    /// sign (or an expired token): nothing is merged or changed.
    #[error("identity invalid")]
    IdentityInvalid,
    /// The installation takes identified visitors only.
    #[error("identity required")]
    IdentityRequired,
    #[error("rate limited")]
    RateLimited { retry_after_secs: u64 },
    /// An upload past the size limit (in bytes): nothing was kept.
    #[error("larger than {0} bytes")]
    TooLarge(u64),
    /// An upload that did not arrive within the request's read time.
    #[error("upload timed out")]
    UploadTimedOut,
    /// The tenant's files would take more than its quota.
    #[error("quota exceeded")]
    QuotaExceeded,
    #[error("{0}")]
    Unavailable(&'static str),
    /// A message the provider (SMTP server, SMS gateway) did not accept;
    /// the reason is logged where it happened, the sentence is for the
    /// client.
    #[error("{0}")]
    NotSent(&'static str),
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl DomainError {
    /// Refused by a limit; retry after `wait`, in whole seconds rounded up
    /// (at least one, so a client never retries at once).
    pub fn rate_limited(wait: std::time::Duration) -> Self {
        Self::RateLimited { retry_after_secs: (wait.as_secs() + u64::from(wait.subsec_nanos() > 0)).max(1) }
    }

    pub fn invalid(field: &str, message: impl Into<String>) -> Self {
        Self::Validation(FieldErrors::single(field, message))
    }
}
