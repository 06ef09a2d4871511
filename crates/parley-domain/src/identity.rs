//! Signed visitor identity: a site tells the widget who its signed-in
//! user is, signed with the installation's identity secret, and that user
//! is then one visitor on every device, with one history.
//!
//! Two ways to sign, both checked in constant time against the current
//! secret and, during its overlap, the previous one:
//! - `user_hash` = hex(HMAC-SHA256(secret, user_id)), what the site's
//!   server renders into the page beside the user id;
//! - `jwt`, an HS256 token with `sub` (the user id), `exp` (required, at
//!   most a day ahead) and optionally `email` and `name`, which the site
//!   thereby vouches for.

use std::collections::BTreeMap;
use std::time::Duration;

use hmac::{Hmac, KeyInit, Mac};
use serde_json::Value;
use sha2::Sha256;

use crate::clock::Timestamp;
use crate::error::DomainError;
use crate::error::FieldErrors;

/// How a new identity secret starts: the admin API shows it once.
pub const SECRET_PREFIX: &str = "idsec_";
/// How long a rotated-out secret keeps checking next to the new one, so
/// that pages rendered before a rotation keep identifying their users.
pub const ROTATION_OVERLAP: Duration = Duration::from_secs(24 * 3600);
/// How far ahead a token's `exp` may be: a leaked token is worth a day at
/// most.
pub const TOKEN_HORIZON: Duration = Duration::from_secs(24 * 3600);
/// Clocks of the site and of Parley may differ by this much.
const CLOCK_SKEW: i64 = 60;
pub const USER_ID_MAX: usize = 255;
pub const ATTRIBUTES_MAX: usize = 50;
pub const ATTRIBUTE_KEY_MAX: usize = 64;
pub const ATTRIBUTE_TEXT_MAX: usize = 1000;

/// An installation's identity settings.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct IdentitySettings {
    pub secret: Option<String>,
    pub previous_secret: Option<String>,
    pub previous_secret_expires_at: Option<Timestamp>,
    /// Visitors who are not identified are refused.
    pub required: bool,
}

impl IdentitySettings {
    /// The secrets that check a signature at `now`: the current one, then
    /// the previous one during its overlap.
    fn secrets(&self, now: Timestamp) -> impl Iterator<Item = &str> {
        let previous = match (&self.previous_secret, self.previous_secret_expires_at) {
            (Some(old), Some(until)) if now < until => Some(old.as_str()),
            _ => None,
        };
        self.secret.as_deref().into_iter().chain(previous)
    }
}

/// The secrets never reach a log, whatever prints the installation.
impl std::fmt::Debug for IdentitySettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IdentitySettings")
            .field("secret", &self.secret.as_ref().map(|_| "…"))
            .field("previous_secret", &self.previous_secret.as_ref().map(|_| "…"))
            .field("previous_secret_expires_at", &self.previous_secret_expires_at)
            .field("required", &self.required)
            .finish()
    }
}

/// What a page sent to identify its user.
#[derive(Clone, Default)]
pub struct Claim {
    pub user_id: Option<String>,
    pub user_hash: Option<String>,
    pub jwt: Option<String>,
}

/// A signature is a credential: it is not printed.
impl std::fmt::Debug for Claim {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Claim")
            .field("user_id", &self.user_id)
            .field("user_hash", &self.user_hash.as_ref().map(|_| "…"))
            .field("jwt", &self.jwt.as_ref().map(|_| "…"))
            .finish()
    }
}

impl Claim {
    pub fn is_empty(&self) -> bool {
        self.user_id.is_none() && self.user_hash.is_none() && self.jwt.is_none()
    }
}

/// A checked identity.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Identified {
    pub user_id: String,
    /// From a token only: what the site signed.
    pub email: Option<String>,
    pub name: Option<String>,
}

#[derive(serde::Deserialize)]
struct TokenClaims {
    sub: String,
    exp: i64,
    /// Not before: a token for later is not good yet.
    #[serde(default)]
    nbf: Option<i64>,
    #[serde(default)]
    email: Option<String>,
    #[serde(default)]
    name: Option<String>,
}

/// Checks a claim against the installation's secrets at `now`. Anything
/// short of a valid signature is [`DomainError::IdentityInvalid`], told
/// apart from nothing else, so a caller learns nothing about which part
/// failed.
pub fn check(settings: &IdentitySettings, claim: &Claim, now: Timestamp) -> Result<Identified, DomainError> {
    if let Some(user_id) = &claim.user_id {
        valid_user_id(user_id)?;
    }
    let identified = match (&claim.jwt, &claim.user_id, &claim.user_hash) {
        (Some(token), _, None) => settings.secrets(now).find_map(|secret| token_claims(secret, token, now)),
        (None, Some(user_id), Some(hash)) => {
            let hash = decode_hex(hash).ok_or(DomainError::IdentityInvalid)?;
            settings.secrets(now).any(|secret| hash_matches(secret, user_id, &hash)).then(|| Identified {
                user_id: user_id.clone(),
                email: None,
                name: None,
            })
        }
        _ => return Err(DomainError::invalid("user_hash", "give user_id with user_hash, or jwt alone")),
    };
    let identified = identified.ok_or(DomainError::IdentityInvalid)?;
    if claim.user_id.as_ref().is_some_and(|id| *id != identified.user_id) {
        return Err(DomainError::IdentityInvalid);
    }
    valid_user_id(&identified.user_id).map_err(|_| DomainError::IdentityInvalid)?;
    Ok(identified)
}

fn mac(secret: &str, user_id: &str) -> Hmac<Sha256> {
    // HMAC takes a key of any length.
    let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(secret.as_bytes()).unwrap_or_else(|_| unreachable!());
    mac.update(user_id.as_bytes());
    mac
}

fn hash_matches(secret: &str, user_id: &str, hash: &[u8]) -> bool {
    mac(secret, user_id).verify_slice(hash).is_ok()
}

fn token_claims(secret: &str, token: &str, now: Timestamp) -> Option<Identified> {
    use jsonwebtoken::{Algorithm, DecodingKey, Validation, decode};
    // A header naming extensions the token's reader must understand
    // (RFC 7515, `crit`) asks for what is not done here.
    if jsonwebtoken::decode_header(token).ok()?.crit.is_some() {
        return None;
    }
    let mut validation = Validation::new(Algorithm::HS256);
    validation.set_required_spec_claims(&["exp", "sub"]);
    // Time is checked against the service's clock below; an audience is
    // the site's own business.
    validation.validate_exp = false;
    validation.validate_nbf = false;
    validation.validate_aud = false;
    let data = decode::<TokenClaims>(token, &DecodingKey::from_secret(secret.as_bytes()), &validation).ok()?;
    let claims = data.claims;
    let now = now.unix_seconds();
    let horizon = i64::try_from(TOKEN_HORIZON.as_secs()).unwrap_or(i64::MAX);
    if claims.exp <= now - CLOCK_SKEW || claims.exp > now + horizon + CLOCK_SKEW || claims.nbf.is_some_and(|nbf| nbf > now + CLOCK_SKEW) {
        return None;
    }
    let email = claims.email.and_then(|e| crate::validate::email(&e).ok());
    let name = claims.name.and_then(|n| crate::validate::name(&n).ok().flatten());
    Some(Identified { user_id: claims.sub, email, name })
}

fn decode_hex(text: &str) -> Option<Vec<u8>> {
    if text.len() != 64 || !text.is_ascii() {
        return None;
    }
    (0..text.len()).step_by(2).map(|i| u8::from_str_radix(&text[i..i + 2], 16).ok()).collect()
}

/// The request's rule for a user id, applied to a token's `sub` too.
fn valid_user_id(user_id: &str) -> Result<(), DomainError> {
    crate::validate::USER_ID.check(user_id).map_err(|message| DomainError::invalid("user_id", message))
}

/// Custom facts about a visitor: text, numbers, booleans.
pub type Attributes = BTreeMap<String, Value>;

/// Applies `update` to `attributes`: a key set to null is removed.
/// Returns whether anything changed, or why the update is refused.
pub fn merge_attributes(attributes: &mut Attributes, update: &serde_json::Map<String, Value>) -> Result<bool, DomainError> {
    let mut errors = FieldErrors::new();
    let mut next = attributes.clone();
    for (key, value) in update {
        if key.is_empty() || key.chars().count() > ATTRIBUTE_KEY_MAX || key.chars().any(char::is_control) {
            errors.add("attributes", format!("keys are 1 to {ATTRIBUTE_KEY_MAX} characters: {}", key.chars().take(80).collect::<String>()));
            continue;
        }
        match value {
            Value::Null => {
                next.remove(key);
            }
            Value::String(text) if text.chars().count() > ATTRIBUTE_TEXT_MAX => {
                errors.add("attributes", format!("{key}: text of at most {ATTRIBUTE_TEXT_MAX} characters"));
            }
            Value::String(_) | Value::Number(_) | Value::Bool(_) => {
                next.insert(key.clone(), value.clone());
            }
            Value::Array(_) | Value::Object(_) => errors.add("attributes", format!("{key}: a text, a number, a boolean or null")),
        }
    }
    if next.len() > ATTRIBUTES_MAX {
        errors.add("attributes", format!("at most {ATTRIBUTES_MAX} attributes per visitor"));
    }
    if !errors.is_empty() {
        return Err(DomainError::Validation(errors));
    }
    let changed = next != *attributes;
    *attributes = next;
    Ok(changed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use jsonwebtoken::{EncodingKey, Header, encode};

    /// What the site's server computes for `user_id`.
    fn user_hash(secret: &str, user_id: &str) -> String {
        crate::ids::hex(&mac(secret, user_id).finalize().into_bytes())
    }

    const SECRET: &str = "idsec_current";
    const OLD: &str = "idsec_old";

    fn settings(now: Timestamp) -> IdentitySettings {
        IdentitySettings {
            secret: Some(SECRET.into()),
            previous_secret: Some(OLD.into()),
            previous_secret_expires_at: Some(now.plus(Duration::from_secs(60))),
            required: false,
        }
    }

    fn hashed(user_id: &str, hash: String) -> Claim {
        Claim { user_id: Some(user_id.into()), user_hash: Some(hash), jwt: None }
    }

    fn token(secret: &str, body: serde_json::Value) -> Claim {
        let jwt = encode(&Header::default(), &body, &EncodingKey::from_secret(secret.as_bytes())).unwrap();
        Claim { jwt: Some(jwt), ..Claim::default() }
    }

    #[test]
    fn a_user_hash_checks_with_the_current_and_the_previous_secret_during_its_overlap() {
        let now = Timestamp::from_millis(1_800_000_000_000);
        let s = settings(now);
        assert_eq!(check(&s, &hashed("u-1", user_hash(SECRET, "u-1")), now).unwrap().user_id, "u-1");
        assert_eq!(check(&s, &hashed("u-1", user_hash(OLD, "u-1").to_uppercase()), now).unwrap().user_id, "u-1");
        let later = now.plus(Duration::from_secs(61));
        assert!(matches!(check(&s, &hashed("u-1", user_hash(OLD, "u-1")), later), Err(DomainError::IdentityInvalid)));
        for bad in [user_hash(SECRET, "u-2"), user_hash("idsec_other", "u-1"), "zz".repeat(32), "ab".into()] {
            assert!(matches!(check(&s, &hashed("u-1", bad), now), Err(DomainError::IdentityInvalid)));
        }
        let none = IdentitySettings::default();
        assert!(matches!(check(&none, &hashed("u-1", user_hash(SECRET, "u-1")), now), Err(DomainError::IdentityInvalid)));
    }

    #[test]
    fn a_token_needs_the_secret_an_expiry_within_a_day_and_a_subject() {
        let now = Timestamp::from_millis(1_800_000_000_000);
        let s = settings(now);
        let exp = now.unix_seconds() + 3600;
        let good = token(SECRET, serde_json::json!({"sub": "u-7", "exp": exp, "email": "ada@example.com", "name": "Ada"}));
        assert_eq!(
            check(&s, &good, now).unwrap(),
            Identified { user_id: "u-7".into(), email: Some("ada@example.com".into()), name: Some("Ada".into()) }
        );
        let invalid = [
            token("idsec_other", serde_json::json!({"sub": "u-7", "exp": exp})),
            token(SECRET, serde_json::json!({"sub": "u-7"})),
            token(SECRET, serde_json::json!({"exp": exp})),
            token(SECRET, serde_json::json!({"sub": "u-7", "exp": now.unix_seconds() - 3600})),
            token(SECRET, serde_json::json!({"sub": "u-7", "exp": now.unix_seconds() + 2 * 86_400})),
            token(SECRET, serde_json::json!({"sub": "", "exp": exp})),
            Claim { jwt: Some("not.a.token".into()), ..Claim::default() },
            token(SECRET, serde_json::json!({"sub": "u-7", "exp": exp, "nbf": exp - 60})),
            {
                let header = Header { crit: Some(vec!["b64".into()]), ..Header::default() };
                let jwt =
                    encode(&header, &serde_json::json!({"sub": "u-7", "exp": exp}), &EncodingKey::from_secret(SECRET.as_bytes())).unwrap();
                Claim { jwt: Some(jwt), ..Claim::default() }
            },
        ];
        for claim in invalid {
            assert!(matches!(check(&s, &claim, now), Err(DomainError::IdentityInvalid)), "{claim:?}");
        }
        // An audience is the site's business, a past nbf is fine.
        let with_aud = token(SECRET, serde_json::json!({"sub": "u-7", "exp": exp, "aud": "shop", "nbf": now.unix_seconds() - 10}));
        assert_eq!(check(&s, &with_aud, now).unwrap().user_id, "u-7");
        // A token names its user: a user_id beside it must be the same.
        let mut other = good.clone();
        other.user_id = Some("u-8".into());
        assert!(matches!(check(&s, &other, now), Err(DomainError::IdentityInvalid)));
        // Another algorithm than HS256 is refused, whatever it signs.
        let hs512 = encode(
            &Header::new(jsonwebtoken::Algorithm::HS512),
            &serde_json::json!({"sub": "u-7", "exp": exp}),
            &EncodingKey::from_secret(SECRET.as_bytes()),
        )
        .unwrap();
        assert!(matches!(check(&s, &Claim { jwt: Some(hs512), ..Claim::default() }, now), Err(DomainError::IdentityInvalid)));
    }

    #[test]
    fn attributes_merge_and_refuse_what_they_cannot_hold() {
        let mut attributes = Attributes::new();
        let update = serde_json::json!({"plan": "pro", "seats": 12, "trial": false});
        assert!(merge_attributes(&mut attributes, update.as_object().unwrap()).unwrap());
        assert!(!merge_attributes(&mut attributes, update.as_object().unwrap()).unwrap());
        assert!(merge_attributes(&mut attributes, serde_json::json!({"trial": null}).as_object().unwrap()).unwrap());
        assert_eq!(attributes.len(), 2);
        for bad in [serde_json::json!({"list": [1]}), serde_json::json!({"": 1}), serde_json::json!({"t": "x".repeat(1001)})] {
            assert!(matches!(merge_attributes(&mut attributes, bad.as_object().unwrap()), Err(DomainError::Validation(_))));
        }
        assert_eq!(attributes.len(), 2, "a refused update changes nothing");
    }
}
