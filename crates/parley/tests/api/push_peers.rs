//! Loopback peers of the push providers, checking what the real ones
//! check: one TLS server (HTTP/2 and HTTP/1.1, its certificate signed by
//! the test CA the server trusts through `PARLEY_EXTRA_CA_FILE`) that
//! answers as APNs (ES256 provider token, topic, push type), as Google's
//! OAuth2 token endpoint and FCM (a signed service-account assertion,
//! then the bearer it was given), as a browser's push service (VAPID,
//! and the payload decrypted with the subscription's private key), and
//! as a relay (the webhook signatures).
//!
//! Verification uses RustCrypto (p256, rsa, aes-gcm, hkdf); Parley signs
//! and encrypts with ring. The peers are first checked against tokens and
//! a body made by the reference libraries (`fixtures/push/vectors.json`,
//! made by PyJWT, pywebpush with http_ece, and py_vapid).

#![allow(dead_code)]

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use aes_gcm::aead::{Aead, KeyInit};
use aes_gcm::{Aes128Gcm, Nonce};
use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hkdf::Hkdf;
use p256::ecdsa::signature::Verifier;
use p256::pkcs8::DecodePrivateKey;
use parley_domain::ManualClock;
use rustls::pki_types::pem::PemObject;
use serde_json::{Value, json};
use sha2_010::Sha256;
use tokio::sync::Notify;

pub const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/push");
pub const KEY_ID: &str = "KEY1234567";
pub const TEAM_ID: &str = "TEAM123456";
pub const TOPIC: &str = "com.example.parley";
pub const PROJECT: &str = "parley-test";
pub const CLIENT_EMAIL: &str = "parley@parley-test.iam.gserviceaccount.com";
pub const RELAY_SECRET: &str = "whsec_cGFybGV5LXJlbGF5LXRlc3Qtc2VjcmV0";

pub fn fixture(name: &str) -> String {
    format!("{FIXTURES}/{name}")
}

fn b64(s: &str) -> Result<Vec<u8>, String> {
    URL_SAFE_NO_PAD.decode(s.trim_end_matches('=')).map_err(|_| format!("{s:?} is not base64url"))
}

/// A compact JWS: its header, claims, and the signed part and signature.
pub struct Jws {
    pub header: Value,
    pub claims: Value,
    signed: String,
    signature: Vec<u8>,
}

impl Jws {
    pub fn parse(token: &str) -> Result<Self, String> {
        let mut parts = token.split('.');
        let (Some(h), Some(c), Some(s), None) = (parts.next(), parts.next(), parts.next(), parts.next()) else {
            return Err("not a compact JWS".into());
        };
        let json = |p: &str| -> Result<Value, String> { serde_json::from_slice(&b64(p)?).map_err(|_| "a part is not JSON".to_owned()) };
        Ok(Self { header: json(h)?, claims: json(c)?, signed: format!("{h}.{c}"), signature: b64(s)? })
    }

    pub fn verify_es256(&self, key: &p256::ecdsa::VerifyingKey) -> Result<(), String> {
        if self.header["alg"] != "ES256" {
            return Err(format!("alg is {}", self.header["alg"]));
        }
        let sig = p256::ecdsa::Signature::from_slice(&self.signature).map_err(|_| "not an ES256 signature (r||s)".to_owned())?;
        key.verify(self.signed.as_bytes(), &sig).map_err(|_| "the ES256 signature does not verify".to_owned())
    }

    pub fn verify_rs256(&self, key: &rsa::RsaPublicKey) -> Result<(), String> {
        if self.header["alg"] != "RS256" {
            return Err(format!("alg is {}", self.header["alg"]));
        }
        let verifying = rsa::pkcs1v15::VerifyingKey::<Sha256>::new(key.clone());
        let sig = rsa::pkcs1v15::Signature::try_from(self.signature.as_slice()).map_err(|_| "not an RS256 signature".to_owned())?;
        verifying.verify(self.signed.as_bytes(), &sig).map_err(|_| "the RS256 signature does not verify".to_owned())
    }
}

pub fn apns_public_key() -> p256::ecdsa::VerifyingKey {
    let pem = std::fs::read_to_string(fixture("apns-key.p8")).expect("apns key");
    let secret = p256::SecretKey::from_pkcs8_pem(&pem).expect("a P-256 key");
    p256::ecdsa::VerifyingKey::from(secret.public_key())
}

pub fn fcm_public_key() -> rsa::RsaPublicKey {
    let pem = std::fs::read_to_string(fixture("fcm-key.pem")).expect("fcm key");
    rsa::RsaPrivateKey::from_pkcs8_pem(&pem).expect("an RSA key").to_public_key()
}

/// Checks an APNs provider token as Apple does: ES256 by the team's key
/// named in `kid`, issued by the team, issued within the last hour.
pub fn check_apns_token(token: &str, now_secs: i64) -> Result<Jws, String> {
    let jws = Jws::parse(token)?;
    jws.verify_es256(&apns_public_key())?;
    if jws.header["kid"] != KEY_ID {
        return Err(format!("kid is {}", jws.header["kid"]));
    }
    if jws.claims["iss"] != TEAM_ID {
        return Err(format!("iss is {}", jws.claims["iss"]));
    }
    let iat = jws.claims["iat"].as_i64().ok_or("no iat")?;
    if iat > now_secs + 60 || now_secs - iat > 3600 {
        return Err(format!("iat {iat} is not within the hour before {now_secs} (ExpiredProviderToken)"));
    }
    Ok(jws)
}

/// Checks a service account's assertion as Google's token endpoint does.
pub fn check_assertion(token: &str, token_uri: &str, now_secs: i64) -> Result<Jws, String> {
    let jws = Jws::parse(token)?;
    jws.verify_rs256(&fcm_public_key())?;
    let c = &jws.claims;
    if c["aud"] != token_uri {
        return Err(format!("aud is {}, not the token_uri", c["aud"]));
    }
    if c["scope"] != "https://www.googleapis.com/auth/firebase.messaging" {
        return Err(format!("scope is {}", c["scope"]));
    }
    let (iat, exp) = (c["iat"].as_i64().ok_or("no iat")?, c["exp"].as_i64().ok_or("no exp")?);
    if exp <= now_secs || iat > now_secs + 60 || exp - iat > 3600 {
        return Err(format!("iat {iat} / exp {exp} do not hold at {now_secs}"));
    }
    Ok(jws)
}

/// Checks a VAPID `Authorization` header (RFC 8292): the token signed
/// by the key `k` it names, for `audience`, not expired nor longer than a
/// day. Returns the key.
pub fn check_vapid(authorization: &str, audience: &str, now_secs: i64) -> Result<Vec<u8>, String> {
    let rest = authorization.strip_prefix("vapid ").ok_or("not the vapid scheme")?;
    let mut t = None;
    let mut k = None;
    for part in rest.split(',') {
        let part = part.trim();
        if let Some(v) = part.strip_prefix("t=") {
            t = Some(v);
        } else if let Some(v) = part.strip_prefix("k=") {
            k = Some(v);
        }
    }
    let (t, k) = (t.ok_or("no t=")?, k.ok_or("no k=")?);
    let key_bytes = b64(k)?;
    let key = p256::ecdsa::VerifyingKey::from_sec1_bytes(&key_bytes).map_err(|_| "k is not a P-256 public key")?;
    let jws = Jws::parse(t)?;
    jws.verify_es256(&key)?;
    if jws.claims["aud"] != audience {
        return Err(format!("aud is {}, not {audience}", jws.claims["aud"]));
    }
    let exp = jws.claims["exp"].as_i64().ok_or("no exp")?;
    if exp <= now_secs || exp - now_secs > 86_400 {
        return Err(format!("exp {exp} is not within a day of {now_secs}"));
    }
    let sub = jws.claims["sub"].as_str().unwrap_or_default();
    if !sub.starts_with("mailto:") && !sub.starts_with("https:") {
        return Err(format!("sub {sub:?} is not a contact"));
    }
    Ok(key_bytes)
}

/// A browser's subscription, as the push service and the browser hold it.
#[derive(Clone)]
pub struct Subscription {
    pub private: p256::SecretKey,
    pub auth: [u8; 16],
}

impl Subscription {
    pub fn new() -> Self {
        let mut seed = [0u8; 32];
        getrandom::fill(&mut seed).expect("random");
        let mut auth = [0u8; 16];
        getrandom::fill(&mut auth).expect("random");
        Self { private: p256::SecretKey::from_slice(&seed).expect("a key"), auth }
    }

    pub fn p256dh(&self) -> String {
        use p256::elliptic_curve::sec1::ToEncodedPoint;
        URL_SAFE_NO_PAD.encode(self.private.public_key().to_encoded_point(false).as_bytes())
    }

    /// Decrypts an `aes128gcm` body (RFC 8188 with RFC 8291's keys).
    pub fn decrypt(&self, body: &[u8]) -> Result<Vec<u8>, String> {
        use p256::elliptic_curve::sec1::ToEncodedPoint;
        if body.len() < 21 {
            return Err("shorter than the header".into());
        }
        let salt = &body[..16];
        let rs = u32::from_be_bytes([body[16], body[17], body[18], body[19]]);
        let idlen = usize::from(body[20]);
        let keyid = body.get(21..21 + idlen).ok_or("the key id runs past the body")?;
        let record = &body[21 + idlen..];
        if rs < 18 || record.len() > rs as usize {
            return Err(format!("record size {rs} does not hold the record"));
        }
        let sender = p256::PublicKey::from_sec1_bytes(keyid).map_err(|_| "the key id is not a P-256 public key")?;
        let shared = p256::ecdh::diffie_hellman(self.private.to_nonzero_scalar(), sender.as_affine());
        let ua_public = self.private.public_key().to_encoded_point(false);
        let mut info = b"WebPush: info\0".to_vec();
        info.extend_from_slice(ua_public.as_bytes());
        info.extend_from_slice(keyid);
        let mut ikm = [0u8; 32];
        Hkdf::<Sha256>::new(Some(&self.auth), shared.raw_secret_bytes()).expand(&info, &mut ikm).map_err(|_| "hkdf")?;
        let prk = Hkdf::<Sha256>::new(Some(salt), &ikm);
        let mut cek = [0u8; 16];
        let mut nonce = [0u8; 12];
        prk.expand(b"Content-Encoding: aes128gcm\0", &mut cek).map_err(|_| "hkdf")?;
        prk.expand(b"Content-Encoding: nonce\0", &mut nonce).map_err(|_| "hkdf")?;
        let cipher = Aes128Gcm::new_from_slice(&cek).map_err(|_| "key")?;
        let mut plain = cipher.decrypt(&Nonce::from(nonce), record).map_err(|_| "the record does not decrypt".to_owned())?;
        // The last record ends with the delimiter 2, then zero padding.
        while plain.last() == Some(&0) {
            plain.pop();
        }
        if plain.pop() != Some(2) {
            return Err("the record does not end with the last-record delimiter".into());
        }
        Ok(plain)
    }
}

/// One push a peer took, as its provider would deliver it.
#[derive(Clone, Debug)]
pub struct Delivered {
    pub provider: &'static str,
    /// The device token, registration token or subscription id.
    pub token: String,
    pub payload: Value,
    pub headers: HashMap<String, String>,
    /// `HTTP/2.0`, `HTTP/1.1`.
    pub version: String,
    pub at: Instant,
    /// The provider token or bearer the request carried.
    pub credential: String,
}

impl Delivered {
    pub fn header(&self, name: &str) -> &str {
        self.headers.get(name).map(String::as_str).unwrap_or("")
    }
}

#[derive(Default)]
struct PeerState {
    delivered: Vec<Delivered>,
    /// What a peer refused, and why: a test asserts there is none.
    refused: Vec<String>,
    /// Scripted answers by token, consumed in order (200 after).
    script: HashMap<String, VecDeque<(u16, Value)>>,
    /// The scripted refusals given, by token: a test sees its refusal
    /// was asked for.
    answered: Vec<(String, u16)>,
    subscriptions: HashMap<String, Subscription>,
    access_tokens: Vec<String>,
    token_requests: usize,
    /// The installation's VAPID key, once a push named it.
    vapid_keys: Vec<Vec<u8>>,
}

#[derive(Clone)]
pub struct Peer {
    pub base: String,
    state: Arc<Mutex<PeerState>>,
    arrived: Arc<Notify>,
    /// The server's clock, by which tokens' times are checked.
    clock: Arc<std::sync::OnceLock<Arc<ManualClock>>>,
}

fn headers_of(headers: &HeaderMap) -> HashMap<String, String> {
    headers.iter().map(|(k, v)| (k.as_str().to_owned(), v.to_str().unwrap_or("").to_owned())).collect()
}

impl Peer {
    /// Starts the peer on a loopback port.
    pub async fn start() -> Peer {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let peer = Peer {
            base: format!("https://localhost:{port}"),
            state: Arc::default(),
            arrived: Arc::new(Notify::new()),
            clock: Arc::default(),
        };
        let app = Router::new()
            .route("/3/device/{token}", post(apns))
            .route("/token", post(token_endpoint))
            .route("/v1/projects/{project}/messages:send", post(fcm_send))
            .route("/wp/{id}", post(web_push))
            .route("/relay", post(relay))
            .with_state(peer.clone());
        let _ = rustls::crypto::ring::default_provider().install_default();
        let certs = rustls::pki_types::CertificateDer::pem_file_iter(fixture("peer.pem"))
            .expect("peer.pem")
            .collect::<Result<Vec<_>, _>>()
            .expect("certs");
        let key = rustls::pki_types::PrivateKeyDer::from_pem_file(fixture("peer.key")).expect("peer.key");
        let mut tls = rustls::ServerConfig::builder().with_no_client_auth().with_single_cert(certs, key).expect("tls config");
        tls.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(tls));
        tokio::spawn(async move {
            loop {
                let Ok((tcp, _)) = listener.accept().await else { return };
                let (acceptor, app) = (acceptor.clone(), app.clone());
                tokio::spawn(async move {
                    let Ok(stream) = acceptor.accept(tcp).await else { return };
                    let service = hyper_util::service::TowerToHyperService::new(app);
                    let builder = hyper_util::server::conn::auto::Builder::new(hyper_util::rt::TokioExecutor::new());
                    let _ = builder.serve_connection(hyper_util::rt::TokioIo::new(stream), service).await;
                });
            }
        });
        peer
    }

    /// Checks tokens' times by the server's `clock` from now on.
    pub fn follow(&self, clock: Arc<ManualClock>) {
        let _ = self.clock.set(clock);
    }

    fn now_secs(&self) -> i64 {
        use parley_domain::Clock;
        match self.clock.get() {
            Some(clock) => clock.now().unix_seconds(),
            None => parley_domain::SystemClock.now().unix_seconds(),
        }
    }

    /// Answers the next pushes to `token` with these statuses and bodies.
    pub fn script(&self, token: &str, answers: &[(u16, Value)]) {
        self.state.lock().unwrap().script.entry(token.to_owned()).or_default().extend(answers.iter().cloned());
    }

    /// A new browser subscription whose endpoint is this peer, as the JSON
    /// a browser gives.
    pub fn subscribe(&self, id: &str) -> Value {
        let sub = Subscription::new();
        let json = json!({"endpoint": format!("{}/wp/{id}", self.base), "keys": {"p256dh": sub.p256dh(), "auth": URL_SAFE_NO_PAD.encode(sub.auth)}});
        self.state.lock().unwrap().subscriptions.insert(id.to_owned(), sub);
        json
    }

    pub fn delivered(&self) -> Vec<Delivered> {
        self.state.lock().unwrap().delivered.clone()
    }

    pub fn delivered_to(&self, token: &str) -> Vec<Delivered> {
        self.delivered().into_iter().filter(|d| d.token == token).collect()
    }

    /// The scripted refusals given to pushes for `token`.
    pub fn refusals_to(&self, token: &str) -> Vec<u16> {
        self.state.lock().unwrap().answered.iter().filter(|(t, _)| t == token).map(|(_, code)| *code).collect()
    }

    pub fn refused(&self) -> Vec<String> {
        self.state.lock().unwrap().refused.clone()
    }

    pub fn token_requests(&self) -> usize {
        self.state.lock().unwrap().token_requests
    }

    pub fn vapid_keys(&self) -> Vec<Vec<u8>> {
        self.state.lock().unwrap().vapid_keys.clone()
    }

    /// Waits until `count` pushes (in all) have arrived, for at most 10 s.
    pub async fn wait_for(&self, count: usize) -> Vec<Delivered> {
        let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            let notified = self.arrived.notified();
            let delivered = self.delivered();
            if delivered.len() >= count {
                return delivered;
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                panic!("{} pushes arrived, {count} expected; refused: {:?}", delivered.len(), self.refused());
            }
        }
    }

    fn refuse(&self, why: String) -> Response {
        self.state.lock().unwrap().refused.push(why.clone());
        (StatusCode::FORBIDDEN, Json(json!({"reason": why}))).into_response()
    }

    /// Records a push that passed the checks and answers as scripted.
    fn take(&self, d: Delivered) -> Response {
        let answer = {
            let mut s = self.state.lock().unwrap();
            let answer = s.script.get_mut(&d.token).and_then(|q| q.pop_front());
            match &answer {
                Some((code, _)) if *code >= 300 => s.answered.push((d.token.clone(), *code)),
                _ => s.delivered.push(d),
            }
            answer
        };
        self.arrived.notify_waiters();
        match answer {
            Some((code, body)) => (StatusCode::from_u16(code).unwrap(), Json(body)).into_response(),
            None => (StatusCode::OK, Json(json!({}))).into_response(),
        }
    }
}

use axum::Json;

async fn apns(State(p): State<Peer>, Path(token): Path<String>, version: axum::http::Version, headers: HeaderMap, body: Bytes) -> Response {
    if version != axum::http::Version::HTTP_2 {
        return p.refuse(format!("APNs takes HTTP/2 only, not {version:?}"));
    }
    let h = headers_of(&headers);
    let Some(jwt) = h.get("authorization").and_then(|a| a.strip_prefix("bearer ")) else {
        return p.refuse("APNs: no bearer provider token".into());
    };
    if let Err(e) = check_apns_token(jwt, p.now_secs()) {
        return p.refuse(format!("APNs: {e}"));
    }
    if h.get("apns-topic").map(String::as_str) != Some(TOPIC) {
        return p.refuse(format!("APNs: apns-topic is {:?}", h.get("apns-topic")));
    }
    if h.get("apns-push-type").map(String::as_str) != Some("alert") {
        return p.refuse("APNs: apns-push-type is not alert".into());
    }
    let Ok(payload) = serde_json::from_slice::<Value>(&body) else { return p.refuse("APNs: the payload is not JSON".into()) };
    if body.len() > 4096 || !payload["aps"].is_object() {
        return p.refuse("APNs: no aps dictionary, or over 4 KB".into());
    }
    let credential = jwt.to_owned();
    p.take(Delivered { provider: "apns", token, payload, headers: h, version: format!("{version:?}"), at: Instant::now(), credential })
}

async fn token_endpoint(State(p): State<Peer>, body: Bytes) -> Response {
    p.state.lock().unwrap().token_requests += 1;
    let form: HashMap<String, String> = url::form_urlencoded::parse(&body).into_owned().collect();
    if form.get("grant_type").map(String::as_str) != Some("urn:ietf:params:oauth:grant-type:jwt-bearer") {
        return p.refuse(format!("token endpoint: grant_type is {:?}", form.get("grant_type")));
    }
    let Some(assertion) = form.get("assertion") else { return p.refuse("token endpoint: no assertion".into()) };
    let token_uri = format!("{}/token", p.base);
    match check_assertion(assertion, &token_uri, p.now_secs()) {
        Ok(jws) if jws.claims["iss"] == CLIENT_EMAIL => {}
        Ok(jws) => return p.refuse(format!("token endpoint: iss is {}", jws.claims["iss"])),
        Err(e) => return p.refuse(format!("token endpoint: {e}")),
    }
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).expect("random");
    let access = format!("ya29.{}", URL_SAFE_NO_PAD.encode(bytes));
    p.state.lock().unwrap().access_tokens.push(access.clone());
    Json(json!({"access_token": access, "expires_in": 3599, "token_type": "Bearer"})).into_response()
}

async fn fcm_send(
    State(p): State<Peer>,
    Path(project): Path<String>,
    version: axum::http::Version,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let h = headers_of(&headers);
    let bearer = h.get("authorization").and_then(|a| a.strip_prefix("Bearer ")).unwrap_or_default().to_owned();
    if !p.state.lock().unwrap().access_tokens.contains(&bearer) {
        return (StatusCode::UNAUTHORIZED, Json(json!({"error": {"code": 401, "status": "UNAUTHENTICATED"}}))).into_response();
    }
    if project != PROJECT {
        return p.refuse(format!("FCM: project {project}"));
    }
    let Ok(payload) = serde_json::from_slice::<Value>(&body) else { return p.refuse("FCM: the body is not JSON".into()) };
    let message = &payload["message"];
    let Some(token) = message["token"].as_str() else { return p.refuse("FCM: no message.token".into()) };
    if message["data"].as_object().is_some_and(|d| d.values().any(|v| !v.is_string())) {
        return p.refuse("FCM: data values must be strings".into());
    }
    let token = token.to_owned();
    p.take(Delivered {
        provider: "fcm",
        token,
        payload: message.clone(),
        headers: h,
        version: format!("{version:?}"),
        at: Instant::now(),
        credential: bearer,
    })
}

async fn web_push(
    State(p): State<Peer>,
    Path(id): Path<String>,
    version: axum::http::Version,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let h = headers_of(&headers);
    let Some(sub) = p.state.lock().unwrap().subscriptions.get(&id).cloned() else {
        return (StatusCode::GONE, Json(json!({"reason": "no such subscription"}))).into_response();
    };
    let authorization = h.get("authorization").cloned().unwrap_or_default();
    let key = match check_vapid(&authorization, &p.base, p.now_secs()) {
        Ok(key) => key,
        Err(e) => return p.refuse(format!("Web Push: VAPID: {e}")),
    };
    if h.get("content-encoding").map(String::as_str) != Some("aes128gcm") {
        return p.refuse("Web Push: Content-Encoding is not aes128gcm".into());
    }
    if h.get("ttl").is_none_or(|t| t.parse::<u64>().is_err()) {
        return p.refuse("Web Push: no TTL".into());
    }
    let plain = match sub.decrypt(&body) {
        Ok(plain) => plain,
        Err(e) => return p.refuse(format!("Web Push: {e}")),
    };
    let Ok(payload) = serde_json::from_slice::<Value>(&plain) else { return p.refuse("Web Push: the payload is not JSON".into()) };
    {
        let mut s = p.state.lock().unwrap();
        if !s.vapid_keys.contains(&key) {
            s.vapid_keys.push(key.clone());
        }
    }
    p.take(Delivered {
        provider: "web",
        token: id,
        payload,
        headers: h,
        version: format!("{version:?}"),
        at: Instant::now(),
        credential: authorization,
    })
}

async fn relay(State(p): State<Peer>, version: axum::http::Version, headers: HeaderMap, body: Bytes) -> Response {
    use hmac::{Hmac, KeyInit, Mac};
    let h = headers_of(&headers);
    let (id, ts, sig) = (
        h.get("webhook-id").cloned().unwrap_or_default(),
        h.get("webhook-timestamp").cloned().unwrap_or_default(),
        h.get("webhook-signature").cloned().unwrap_or_default(),
    );
    let key = base64::engine::general_purpose::STANDARD.decode(RELAY_SECRET.trim_start_matches("whsec_")).expect("secret");
    let mut mac = Hmac::<sha2::Sha256>::new_from_slice(&key).expect("hmac");
    mac.update(format!("{id}.{ts}.").as_bytes());
    mac.update(&body);
    let expected = format!("v1,{}", base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes()));
    if !sig.split(' ').any(|s| s == expected) {
        return p.refuse("relay: the webhook signature does not verify".into());
    }
    let Ok(payload) = serde_json::from_slice::<Value>(&body) else { return p.refuse("relay: the body is not JSON".into()) };
    let token = payload["push_token"].as_str().unwrap_or_default().to_owned();
    p.take(Delivered {
        provider: "relay",
        token,
        payload,
        headers: h,
        version: format!("{version:?}"),
        at: Instant::now(),
        credential: sig,
    })
}
