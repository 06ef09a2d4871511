//! Web Push (RFC 8030): the payload encrypted for the browser (RFC 8291,
//! `aes128gcm` of RFC 8188) and the request signed with the
//! installation's VAPID key (RFC 8292).

use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use parley_domain::Timestamp;
use parley_domain::model::WebPushKeys;
use parley_domain::push::{Notification, PushOutcome};
use ring::aead::{AES_128_GCM, Aad, LessSafeKey, Nonce, UnboundKey};
use ring::agreement::{ECDH_P256, EphemeralPrivateKey, UnparsedPublicKey, agree_ephemeral};
use ring::hkdf::{HKDF_SHA256, KeyType, Salt};
use ring::rand::{SecureRandom, SystemRandom};
use serde_json::json;

use super::http::{self, Answer};
use super::jwt::EcKey;

/// How long a push service keeps a push for a browser that is offline:
/// an operator who opens the laptop an hour later still wants to know.
const TTL: Duration = Duration::from_secs(4 * 3600);
/// The record size written in the header: one record holds any payload.
const RECORD_SIZE: u32 = 4096;
/// How long a VAPID token is valid (RFC 8292 allows up to 24 hours); one
/// is signed for each push.
const VAPID_LIFETIME: Duration = Duration::from_secs(12 * 3600);

pub struct WebPush {
    client: reqwest::Client,
    key: EcKey,
    /// `sub` of the VAPID token: how a push service reaches the sender.
    subject: String,
}

impl WebPush {
    pub fn new(client: reqwest::Client, key: EcKey, subject: String) -> Self {
        Self { client, key, subject }
    }

    /// The public key browsers subscribe with (`applicationServerKey`),
    /// base64url.
    pub fn public_key(&self) -> String {
        URL_SAFE_NO_PAD.encode(self.key.public_key())
    }

    pub async fn send(&self, endpoint: &str, keys: Option<&WebPushKeys>, n: &Notification, now: Timestamp) -> PushOutcome {
        let Some(keys) = keys else { return PushOutcome::DeadToken { reason: "the subscription has no keys".into() } };
        let body = match encrypt(keys, n.data().to_string().as_bytes()) {
            Ok(body) => body,
            // A browser key that is not a point on the curve can never
            // be pushed to.
            Err(Unusable::Keys(e)) => return PushOutcome::DeadToken { reason: e },
            Err(Unusable::Here(e)) => return PushOutcome::Retry { after: None, reason: e },
        };
        let Some(audience) = origin(endpoint) else { return PushOutcome::DeadToken { reason: "the endpoint is not a URL".into() } };
        let exp = now.unix_seconds() + VAPID_LIFETIME.as_secs() as i64;
        let token = match self.key.sign(&json!({"typ": "JWT", "alg": "ES256"}), &json!({"aud": audience, "exp": exp, "sub": self.subject}))
        {
            Ok(t) => t,
            Err(e) => return PushOutcome::Retry { after: None, reason: e },
        };
        let request = self
            .client
            .post(endpoint)
            .header("TTL", TTL.as_secs().to_string())
            .header("Urgency", "high")
            .header("Topic", n.conversation_id.to_string())
            .header("Content-Encoding", "aes128gcm")
            .header("Content-Type", "application/octet-stream")
            .header("Authorization", format!("vapid t={token}, k={}", self.public_key()))
            .body(body);
        match http::send(request, now).await {
            Answer::Status { code: 200..=299, .. } => PushOutcome::Delivered,
            Answer::Status { code: code @ (404 | 410), .. } => PushOutcome::DeadToken { reason: format!("HTTP {code}") },
            answer => answer.otherwise(),
        }
    }
}

/// The scheme, host and port of `url`: a VAPID token's audience.
fn origin(url: &str) -> Option<String> {
    let url = url::Url::parse(url).ok()?;
    match url.origin() {
        o @ url::Origin::Tuple(..) => Some(o.ascii_serialization()),
        url::Origin::Opaque(_) => None,
    }
}

struct Len(usize);

impl KeyType for Len {
    fn len(&self) -> usize {
        self.0
    }
}

fn hkdf(salt: &[u8], ikm: &[u8], info: &[&[u8]], len: usize) -> Result<Vec<u8>, Unusable> {
    let prk = Salt::new(HKDF_SHA256, salt).extract(ikm);
    let mut out = vec![0; len];
    prk.expand(info, Len(len)).and_then(|okm| okm.fill(&mut out)).map_err(|_| here("key derivation failed"))?;
    Ok(out)
}

/// Why a payload could not be encrypted.
#[derive(Debug)]
pub enum Unusable {
    /// The subscription's keys: it can never be pushed to.
    Keys(String),
    /// Something here (randomness): worth another try.
    Here(String),
}

fn here(what: &str) -> Unusable {
    Unusable::Here(what.to_owned())
}

fn keys(what: &str) -> Unusable {
    Unusable::Keys(what.to_owned())
}

/// The request body for the browser with `keys`: the RFC 8188 header
/// (salt, record size, the sender's ephemeral public key) and one record.
pub fn encrypt(subscription: &WebPushKeys, plaintext: &[u8]) -> Result<Vec<u8>, Unusable> {
    let ua_public = URL_SAFE_NO_PAD.decode(subscription.p256dh.trim_end_matches('=')).map_err(|_| keys("p256dh is not base64url"))?;
    let auth = URL_SAFE_NO_PAD.decode(subscription.auth.trim_end_matches('=')).map_err(|_| keys("auth is not base64url"))?;
    let rng = SystemRandom::new();
    let mut salt = [0u8; 16];
    rng.fill(&mut salt).map_err(|_| here("no randomness"))?;
    let private = EphemeralPrivateKey::generate(&ECDH_P256, &rng).map_err(|_| here("no randomness"))?;
    let as_public = private.compute_public_key().map_err(|_| here("could not make a key"))?;
    let as_public = as_public.as_ref().to_vec();
    let ecdh_secret = agree_ephemeral(private, &UnparsedPublicKey::new(&ECDH_P256, &ua_public), |secret| secret.to_vec())
        .map_err(|_| keys("the browser's key is not a P-256 point"))?;
    // RFC 8291 section 3.4: the input keying material binds both keys and
    // the browser's secret.
    let ikm = hkdf(&auth, &ecdh_secret, &[b"WebPush: info\0", &ua_public, &as_public], 32)?;
    let cek = hkdf(&salt, &ikm, &[b"Content-Encoding: aes128gcm\0"], 16)?;
    let nonce = hkdf(&salt, &ikm, &[b"Content-Encoding: nonce\0"], 12)?;
    let key = LessSafeKey::new(UnboundKey::new(&AES_128_GCM, &cek).map_err(|_| here("bad content key"))?);
    let nonce = Nonce::try_assume_unique_for_key(&nonce).map_err(|_| here("bad nonce"))?;
    // One record, the last: the padding delimiter 0x02 and no padding.
    let mut record = plaintext.to_vec();
    record.push(2);
    key.seal_in_place_append_tag(nonce, Aad::empty(), &mut record).map_err(|_| here("encryption failed"))?;
    let mut body = Vec::with_capacity(16 + 4 + 1 + as_public.len() + record.len());
    body.extend_from_slice(&salt);
    body.extend_from_slice(&RECORD_SIZE.to_be_bytes());
    body.push(u8::try_from(as_public.len()).map_err(|_| here("key too long"))?);
    body.extend_from_slice(&as_public);
    body.extend_from_slice(&record);
    Ok(body)
}
