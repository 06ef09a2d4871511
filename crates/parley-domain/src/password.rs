//! Password hashing and bearer token digests.
//!
//! Passwords use Argon2id with the OWASP minimum (19 MiB, 2 passes, 1 lane).
//! Bearer tokens carry 256 random bits, so a plain SHA-256 digest is enough
//! to store them: there is nothing to brute-force.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use argon2::password_hash::{PasswordHasher, PasswordVerifier};
use argon2::{Algorithm, Argon2, Params, Version};
use sha2::{Digest, Sha256};
use tokio::sync::Semaphore;

use crate::error::DomainError;

fn hasher() -> Result<Argon2<'static>, DomainError> {
    let params = Params::new(19 * 1024, 2, 1, None).map_err(|_| DomainError::Unavailable("password hashing misconfigured"))?;
    Ok(Argon2::new(Algorithm::Argon2id, Version::V0x13, params))
}

/// Hashes a password into a PHC string. CPU-heavy: call it off the async
/// executor.
pub fn hash_password(password: &str) -> Result<String, DomainError> {
    let hash = hasher()?.hash_password(password.as_bytes()).map_err(|_| DomainError::Unavailable("password hashing failed"))?;
    Ok(hash.to_string())
}

/// Checks a password against a PHC string in constant time.
pub fn verify_password(password: &str, phc: &str) -> bool {
    match hasher() {
        Ok(h) => h.verify_password(password.as_bytes(), phc).is_ok(),
        Err(_) => false,
    }
}

/// How long a password check or hash waits for its turn before the
/// request answers 503.
const WAIT: Duration = Duration::from_secs(10);

/// Argon2id runs that may go at once in this process: each takes 19 MiB,
/// so unbounded parallel checks (logins, links, password changes) could
/// exhaust memory and the blocking threads. Every hash and check of a
/// password goes through here.
fn pool() -> &'static Arc<Semaphore> {
    static POOL: OnceLock<Arc<Semaphore>> = OnceLock::new();
    POOL.get_or_init(|| Arc::new(Semaphore::new(std::thread::available_parallelism().map_or(2, |n| n.get()).max(2))))
}

/// Runs `work` on the blocking pool once a turn is free.
async fn bounded<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> Result<T, DomainError> {
    let permit = tokio::time::timeout(WAIT, Arc::clone(pool()).acquire_owned())
        .await
        .map_err(|_| DomainError::Unavailable("too many password checks at once"))?
        .map_err(|_| DomainError::Unavailable("password checks stopped"))?;
    tokio::task::spawn_blocking(move || {
        let _permit = permit;
        work()
    })
    .await
    .map_err(|_| DomainError::Unavailable("password check failed"))
}

/// [`hash_password`] off the executor, a bounded number at a time.
pub async fn hash(password: String) -> Result<String, DomainError> {
    bounded(move || hash_password(&password)).await?
}

/// [`verify_password`] off the executor, a bounded number at a time.
pub async fn verify(password: String, phc: String) -> Result<bool, DomainError> {
    bounded(move || verify_password(&password, &phc)).await
}

pub fn token_digest(token: &str) -> Vec<u8> {
    Sha256::digest(token.as_bytes()).to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let h = hash_password("correct horse battery").unwrap();
        assert!(h.starts_with("$argon2id$v=19$m=19456,t=2,p=1$"));
        assert!(verify_password("correct horse battery", &h));
        assert!(!verify_password("wrong", &h));
    }
}
