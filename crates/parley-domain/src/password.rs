//! Password hashing and bearer token digests.
//!
//! Passwords use Argon2id with the OWASP minimum (19 MiB, 2 passes, 1 lane).
//! Bearer tokens carry 256 random bits, so a plain SHA-256 digest is enough
//! to store them: there is nothing to brute-force.

use argon2::password_hash::{PasswordHasher, PasswordVerifier};
use argon2::{Algorithm, Argon2, Params, Version};
use sha2::{Digest, Sha256};

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
