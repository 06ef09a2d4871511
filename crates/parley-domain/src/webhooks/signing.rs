//! Webhook secrets and signatures.
//!
//! A secret is `whsec_` followed by standard, padded base64 of 32 random
//! bytes; the HMAC key is the decoded bytes. Each delivery is signed twice:
//!
//! - `X-Service-Signature: v1=<hex HMAC-SHA256(key, "{timestamp}.{body}")>`
//! - `webhook-signature: v1,<base64 HMAC-SHA256(key, "{id}.{timestamp}.{body}")>`
//!   (Standard Webhooks, so its libraries verify Parley's deliveries).
//!
//! During a rotation's overlap there is one signature per secret:
//! comma-separated `v1=` values, and space-separated `v1,` values.

use crate::ids::hex;
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

use crate::error::DomainError;
use crate::ids;

const PREFIX: &str = "whsec_";

/// A short name for a secret that tells it apart from the others and
/// reveals nothing of it: the first 64 bits of its SHA-256, in hex. A page
/// carries it to say which secret it showed.
pub fn fingerprint(secret: &str) -> String {
    use sha2::Digest;
    hex(&Sha256::digest(secret.as_bytes())[..8])
}

pub fn new_secret() -> Result<String, DomainError> {
    Ok(format!("{PREFIX}{}", STANDARD.encode(ids::random_bytes::<32>()?)))
}

/// The HMAC key of a secret; a secret without the prefix is used as raw
/// bytes, as Standard Webhooks libraries do.
fn key(secret: &str) -> Vec<u8> {
    match secret.strip_prefix(PREFIX) {
        Some(b64) => STANDARD.decode(b64).unwrap_or_else(|_| b64.as_bytes().to_vec()),
        None => secret.as_bytes().to_vec(),
    }
}

fn hmac(secret: &str, parts: &[&[u8]]) -> Vec<u8> {
    // HMAC accepts keys of any length, so this cannot fail.
    let mut mac = match <Hmac<Sha256> as KeyInit>::new_from_slice(&key(secret)) {
        Ok(m) => m,
        Err(_) => return Vec::new(),
    };
    for p in parts {
        mac.update(p);
    }
    mac.finalize().into_bytes().to_vec()
}

/// The value of `X-Service-Signature`.
pub fn service_signature(secrets: &[&str], timestamp: i64, body: &[u8]) -> String {
    let ts = timestamp.to_string();
    secrets.iter().map(|s| format!("v1={}", hex(&hmac(s, &[ts.as_bytes(), b".", body])))).collect::<Vec<_>>().join(",")
}

/// The value of `webhook-signature` (Standard Webhooks).
pub fn standard_signature(secrets: &[&str], id: &str, timestamp: i64, body: &[u8]) -> String {
    let ts = timestamp.to_string();
    secrets
        .iter()
        .map(|s| format!("v1,{}", STANDARD.encode(hmac(s, &[id.as_bytes(), b".", ts.as_bytes(), b".", body]))))
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fingerprint_tells_secrets_apart_and_shows_none() {
        let (a, b) = (new_secret().expect("secret"), new_secret().expect("secret"));
        let fa = fingerprint(&a);
        assert_eq!(fa.len(), 16);
        assert_eq!(fa, fingerprint(&a), "the same secret, the same name");
        assert_ne!(fa, fingerprint(&b));
        assert!(!a.contains(&fa));
    }

    /// The Standard Webhooks cross-check vector: key bytes `k`, id `msg_1`,
    /// timestamp `1`, body `{}`.
    #[test]
    fn standard_webhooks_vector() {
        let secret = format!("whsec_{}", STANDARD.encode(b"k"));
        assert_eq!(standard_signature(&[&secret], "msg_1", 1, b"{}"), "v1,WQBPtAsumRlBVd/XmmbysH53ixZ4wi6G/qvgzgt90z4=");
    }

    /// Golden vectors, computed independently (Python's hmac module) for
    /// key bytes 0..32, timestamp 1767225600 and a fixed body.
    #[test]
    fn golden_vectors() {
        let secret = "whsec_AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";
        let body = br#"{"event_id":"evt_golden","event":"message.created"}"#;
        assert_eq!(
            service_signature(&[secret], 1_767_225_600, body),
            "v1=1bac06447b4f9f942d07d2c5c8ba26ea389968c930c3b7a5d5aaacd6be5dda45"
        );
        assert_eq!(standard_signature(&[secret], "evt_golden", 1_767_225_600, body), "v1,WszIAw/vJ7qYskjgqv5BLfJyeVTx9L8PIEn0Bdy8txs=");
    }

    #[test]
    fn secrets_are_prefixed_padded_base64_of_32_bytes() {
        let s = new_secret().unwrap();
        let b64 = s.strip_prefix("whsec_").unwrap();
        assert_eq!(STANDARD.decode(b64).unwrap().len(), 32);
        assert!(b64.ends_with('='), "padded");
    }

    #[test]
    fn one_signature_per_secret() {
        let a = new_secret().unwrap();
        let b = new_secret().unwrap();
        let one = service_signature(&[&a], 1_700_000_000, b"{}");
        let two = service_signature(&[&a, &b], 1_700_000_000, b"{}");
        assert!(two.starts_with(&format!("{one},v1=")));
        assert_eq!(standard_signature(&[&a, &b], "evt", 1, b"{}").split(' ').count(), 2);
    }
}
