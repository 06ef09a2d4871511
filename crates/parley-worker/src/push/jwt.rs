//! Compact JWS (RFC 7515) as the push providers take it: ES256 for APNs
//! and VAPID, RS256 for Google's service-account assertion. Signed with
//! ring, which the TLS stack already builds.

use std::sync::Arc;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ring::rand::SystemRandom;
use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair, RSA_PKCS1_SHA256, RsaKeyPair};
use serde_json::Value;

/// A P-256 key: an APNs `.p8` key or the VAPID key. Shared, not copied:
/// the configuration reads it once and the sender uses that one.
#[derive(Clone)]
pub struct EcKey(Arc<EcdsaKeyPair>);

impl EcKey {
    /// From PKCS#8 DER (what a `.p8` file holds, base64 inside PEM).
    pub fn from_pkcs8(der: &[u8]) -> Result<Self, String> {
        EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, der, &SystemRandom::new())
            .map(|key| Self(Arc::new(key)))
            .map_err(|e| format!("is not a P-256 private key in PKCS#8 ({e})"))
    }

    /// A new key, as PKCS#8 DER to keep.
    pub fn generate() -> Result<Vec<u8>, String> {
        EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &SystemRandom::new())
            .map(|doc| doc.as_ref().to_vec())
            .map_err(|e| format!("could not make a P-256 key ({e})"))
    }

    /// The public key, uncompressed (65 bytes).
    pub fn public_key(&self) -> &[u8] {
        self.0.public_key().as_ref()
    }

    pub fn sign(&self, header: &Value, claims: &Value) -> Result<String, String> {
        let input = signing_input(header, claims);
        let sig = self.0.sign(&SystemRandom::new(), input.as_bytes()).map_err(|_| "could not sign a token".to_owned())?;
        Ok(format!("{input}.{}", URL_SAFE_NO_PAD.encode(sig.as_ref())))
    }
}

/// An RSA key: a service account's.
#[derive(Clone)]
pub struct RsaKey(Arc<RsaKeyPair>);

impl RsaKey {
    pub fn from_pkcs8(der: &[u8]) -> Result<Self, String> {
        RsaKeyPair::from_pkcs8(der).map(|key| Self(Arc::new(key))).map_err(|e| format!("is not an RSA private key in PKCS#8 ({e})"))
    }

    pub fn sign(&self, header: &Value, claims: &Value) -> Result<String, String> {
        let input = signing_input(header, claims);
        let mut sig = vec![0; self.0.public().modulus_len()];
        self.0
            .sign(&RSA_PKCS1_SHA256, &SystemRandom::new(), input.as_bytes(), &mut sig)
            .map_err(|_| "could not sign a token".to_owned())?;
        Ok(format!("{input}.{}", URL_SAFE_NO_PAD.encode(sig)))
    }
}

fn signing_input(header: &Value, claims: &Value) -> String {
    format!("{}.{}", URL_SAFE_NO_PAD.encode(header.to_string()), URL_SAFE_NO_PAD.encode(claims.to_string()))
}

/// The DER inside the first PEM block labelled `label`.
pub fn pem_block(text: &str, label: &str) -> Result<Vec<u8>, String> {
    let begin = format!("-----BEGIN {label}-----");
    let end = format!("-----END {label}-----");
    let start = text.find(&begin).ok_or_else(|| format!("holds no {begin} block"))? + begin.len();
    let stop = text[start..].find(&end).ok_or_else(|| format!("has no {end} line"))? + start;
    let body: String = text[start..stop].chars().filter(|c| !c.is_whitespace()).collect();
    base64::engine::general_purpose::STANDARD.decode(body).map_err(|_| "holds a PEM block that is not base64".into())
}
