//! Generating, hashing and checking codes.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::error::DomainError;
use crate::ids::random_bytes;

/// Six decimal digits, uniformly distributed (rejection sampling avoids the
/// bias of a plain modulo).
pub fn otp() -> Result<String, DomainError> {
    const LIMIT: u32 = u32::MAX - (u32::MAX % 1_000_000);
    loop {
        let n = u32::from_le_bytes(random_bytes::<4>()?);
        if n < LIMIT {
            return Ok(format!("{:06}", n % 1_000_000));
        }
    }
}

/// The long single-use code of a magic link: 256 random bits.
pub fn link_code() -> Result<String, DomainError> {
    Ok(URL_SAFE_NO_PAD.encode(random_bytes::<32>()?))
}

pub fn salt() -> Result<Vec<u8>, DomainError> {
    Ok(random_bytes::<16>()?.to_vec())
}

pub fn digest(salt: &[u8], code: &str) -> Vec<u8> {
    let mut h = Sha256::new();
    h.update(salt);
    h.update(code.trim().as_bytes());
    h.finalize().to_vec()
}

/// Whether `code` matches the stored digest, in constant time.
pub fn matches(salt: &[u8], stored: &[u8], code: &str) -> bool {
    digest(salt, code).ct_eq(stored).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn otps_are_six_digits() {
        for _ in 0..200 {
            let c = otp().unwrap();
            assert_eq!(c.len(), 6);
            assert!(c.bytes().all(|b| b.is_ascii_digit()));
        }
        assert_eq!(link_code().unwrap().len(), 43);
    }

    #[test]
    fn matching_is_by_digest() {
        let s = salt().unwrap();
        let d = digest(&s, "123456");
        assert!(matches(&s, &d, "123456"));
        assert!(matches(&s, &d, " 123456 "), "surrounding spaces from copy and paste are ignored");
        assert!(!matches(&s, &d, "123457"));
        assert!(!matches(&salt().unwrap(), &d, "123456"), "the salt is part of it");
    }
}
