//! Random identifiers and secrets.
//!
//! All of them come from the operating system's CSPRNG. Public identifiers
//! are capabilities (an installation token or a conversation `public_id` is
//! all a visitor needs), so each carries well over 128 random bits.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

use crate::error::DomainError;

/// A value in [-1, 1] to spread retries, so that attempts failing together
/// do not all come back together.
pub fn jitter() -> f64 {
    match random_bytes::<4>() {
        Ok(b) => f64::from(u32::from_le_bytes(b)) / f64::from(u32::MAX) * 2.0 - 1.0,
        Err(_) => 0.0,
    }
}

pub fn random_bytes<const N: usize>() -> Result<[u8; N], DomainError> {
    let mut buf = [0u8; N];
    getrandom::fill(&mut buf).map_err(|_| DomainError::Unavailable("random source unavailable"))?;
    Ok(buf)
}

/// `prefix` and `N` random bytes in URL-safe base64: the shape of every
/// token here.
pub fn prefixed<const N: usize>(prefix: &str) -> Result<String, DomainError> {
    Ok(format!("{prefix}{}", URL_SAFE_NO_PAD.encode(random_bytes::<N>()?)))
}

/// Public installation token: 144 random bits.
pub fn installation_token() -> Result<String, DomainError> {
    prefixed::<18>("inst_")
}

/// Conversation `public_id`: 144 random bits.
pub fn conversation_public_id() -> Result<String, DomainError> {
    prefixed::<18>("conv_")
}

/// Operator bearer token: 256 random bits. Only its hash is stored.
pub fn operator_token() -> Result<String, DomainError> {
    prefixed::<32>("pat_")
}

/// Web app session token, carried by the `parley_session` cookie: 256
/// random bits, only its hash stored. Its own prefix keeps it from ever
/// passing as a bearer token (and a bearer token as a session).
pub fn session_token() -> Result<String, DomainError> {
    prefixed::<32>("ses_")
}

/// A non-negative number in base 36 (lower case), as cursors and device
/// marks write their parts: short, and URL-safe.
pub(crate) fn radix36(mut n: i64) -> String {
    const DIGITS: &[u8; 36] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    if n <= 0 {
        return "0".into();
    }
    let mut out = Vec::new();
    while n > 0 {
        out.push(DIGITS[(n % 36) as usize]);
        n /= 36;
    }
    out.reverse();
    String::from_utf8(out).unwrap_or_default()
}

/// A number [`radix36`] wrote: 1 to 12 digits (36^12 is past any id,
/// transaction id or time in milliseconds, and below `i64::MAX`).
pub(crate) fn parse_radix36(s: &str) -> Option<i64> {
    let digits = !s.is_empty() && s.len() <= 12 && s.bytes().all(|b| b.is_ascii_digit() || b.is_ascii_lowercase());
    digits.then(|| i64::from_str_radix(s, 36).ok()).flatten()
}

/// Webhook event id, time-ordered so logs sort naturally.
pub fn event_id() -> String {
    format!("evt_{}", uuid::Uuid::now_v7().simple())
}

/// Lower-case hexadecimal.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The left part of an email's `Message-ID`: unique, and telling nothing
/// about the conversation. Without a random source (never in practice) it
/// falls back to the event id's time-ordered UUID.
pub fn message_token() -> String {
    match random_bytes::<16>() {
        Ok(b) => format!("parley.{}", hex(&b)),
        Err(_) => format!("parley.{}", event_id()),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn tokens_are_long_and_distinct() {
        let a = super::installation_token().unwrap();
        let b = super::installation_token().unwrap();
        assert_ne!(a, b);
        assert_eq!(a.len(), "inst_".len() + 24);
        assert_eq!(super::operator_token().unwrap().len(), "pat_".len() + 43);
    }
}
