//! Signed, expiring links to attachments.
//!
//! A link is the whole capability: whoever holds it may read that one
//! file (or its thumbnail) until it expires, without a token or a cookie,
//! so an `<img>` in the widget, an app's image view and a partner's
//! server can all fetch it. It names the attachment, the variant and the
//! expiry, signed with a key of the installation's own secret; changing
//! any of them breaks the signature, which is compared in constant time.
//!
//! Expiries are rounded up to the next [`ROUND`], so the links a client
//! gets in the same ten minutes are the same text and its cache holds.

use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::Mac;

use crate::clock::Clock;
use crate::keys::{Purpose, ServerKeys};

/// How long a link is valid at least.
pub const VALID_FOR: Duration = Duration::from_secs(3600);
/// Expiries are multiples of this (in seconds since the epoch).
pub const ROUND: i64 = 600;

/// Which of an attachment's files a link reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variant {
    Original,
    Thumbnail,
}

impl Variant {
    fn as_str(self) -> &'static str {
        match self {
            Variant::Original => "original",
            Variant::Thumbnail => "thumbnail",
        }
    }
}

/// Why a link does not open.
#[derive(Debug, PartialEq, Eq)]
pub enum LinkError {
    Expired,
    BadSignature,
}

/// Makes and checks links under the installation's key.
#[derive(Clone)]
pub struct Links {
    key: [u8; 32],
    /// The service's public address without a trailing slash.
    base: Arc<str>,
    clock: Arc<dyn Clock>,
}

impl std::fmt::Debug for Links {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Links").field("base", &self.base).finish_non_exhaustive()
    }
}

impl Links {
    pub fn new(keys: &ServerKeys, public_url: &str, clock: Arc<dyn Clock>) -> Self {
        Self { key: *keys.key(Purpose::FileLink), base: public_url.trim_end_matches('/').into(), clock }
    }

    /// The link to an attachment's `variant`, valid for at least
    /// [`VALID_FOR`] from now.
    pub fn url(&self, public_id: &str, variant: Variant) -> String {
        let at_least = self.clock.now().plus(VALID_FOR).unix_seconds();
        let expires = (at_least + ROUND - 1).div_euclid(ROUND) * ROUND;
        let sig = self.sign(public_id, variant, expires);
        let path = match variant {
            Variant::Original => format!("/api/v1/files/{public_id}"),
            Variant::Thumbnail => format!("/api/v1/files/{public_id}/thumbnail"),
        };
        format!("{}{path}?expires={expires}&sig={sig}", self.base)
    }

    /// Whether a link's `expires` and `sig` open `variant` of `public_id`
    /// now. The signature is checked first, so an expired link is only
    /// called expired when it is a real one.
    pub fn check(&self, public_id: &str, variant: Variant, expires: i64, sig: &str) -> Result<(), LinkError> {
        let given = URL_SAFE_NO_PAD.decode(sig).map_err(|_| LinkError::BadSignature)?;
        self.mac(public_id, variant, expires).verify_slice(&given).map_err(|_| LinkError::BadSignature)?;
        if expires <= self.clock.now().unix_seconds() {
            return Err(LinkError::Expired);
        }
        Ok(())
    }

    /// Now, in seconds since the epoch, by the clock links are checked
    /// against.
    pub fn now_seconds(&self) -> i64 {
        self.clock.now().unix_seconds()
    }

    /// The links of a message's attachments: `url`, and `thumbnail_url`
    /// for a picture shown inline.
    pub fn of(&self, a: &crate::model::AttachmentRef) -> (String, Option<String>) {
        (self.url(&a.id, Variant::Original), a.inline().then(|| self.url(&a.id, Variant::Thumbnail)))
    }

    /// A webhook envelope as it is sent now: the attachments of its
    /// message (`data.message.attachments`) get links valid from this
    /// attempt, since the envelope was recorded long before a retry.
    pub fn in_envelope<'a>(&self, payload: &'a str) -> std::borrow::Cow<'a, str> {
        if !payload.contains("\"attachments\":[{") {
            return payload.into();
        }
        let Ok(mut envelope) = serde_json::from_str::<serde_json::Value>(payload) else { return payload.into() };
        let Some(list) = envelope.pointer_mut("/data/message/attachments").and_then(serde_json::Value::as_array_mut) else {
            return payload.into();
        };
        for item in list {
            let Ok(a) = serde_json::from_value::<crate::model::AttachmentRef>(item.clone()) else { continue };
            let (url, thumbnail) = self.of(&a);
            if let Some(fields) = item.as_object_mut() {
                fields.insert("url".into(), url.into());
                if let Some(thumbnail) = thumbnail {
                    fields.insert("thumbnail_url".into(), thumbnail.into());
                }
            }
        }
        envelope.to_string().into()
    }

    fn mac(&self, public_id: &str, variant: Variant, expires: i64) -> hmac::Hmac<sha2::Sha256> {
        let mut mac = crate::keys::hmac(&self.key);
        mac.update(format!("parley file v1\n{public_id}\n{}\n{expires}", variant.as_str()).as_bytes());
        mac
    }

    fn sign(&self, public_id: &str, variant: Variant, expires: i64) -> String {
        URL_SAFE_NO_PAD.encode(self.mac(public_id, variant, expires).finalize().into_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::{ManualClock, Timestamp};

    fn links() -> (Links, Arc<ManualClock>) {
        let clock = ManualClock::new(Timestamp::from_millis(1_800_000_123_000));
        (Links::new(&ServerKeys::from_secret([3; 32]), "https://chat.example/", clock.clone()), clock)
    }

    fn parts(url: &str) -> (String, i64, String) {
        let u = url::Url::parse(url).expect("url");
        let q: std::collections::HashMap<_, _> = u.query_pairs().into_owned().collect();
        (
            u.path().rsplit('/').nth(usize::from(u.path().ends_with("thumbnail"))).unwrap_or_default().to_owned(),
            q["expires"].parse().expect("expires"),
            q["sig"].clone(),
        )
    }

    #[test]
    fn a_link_opens_its_file_until_it_expires() {
        let (links, clock) = links();
        let url = links.url("att_1", Variant::Original);
        assert!(url.starts_with("https://chat.example/api/v1/files/att_1?expires="), "{url}");
        let (id, expires, sig) = parts(&url);
        assert_eq!(id, "att_1");
        assert_eq!(expires % ROUND, 0);
        assert!(expires - clock.now().unix_seconds() >= 3600 && expires - clock.now().unix_seconds() < 3600 + ROUND);
        assert_eq!(links.check("att_1", Variant::Original, expires, &sig), Ok(()));
        clock.advance(Duration::from_secs(3600 + ROUND as u64));
        assert_eq!(links.check("att_1", Variant::Original, expires, &sig), Err(LinkError::Expired));
    }

    #[test]
    fn nothing_in_a_link_can_be_changed() {
        let (links, _) = links();
        let (_, expires, sig) = parts(&links.url("att_1", Variant::Original));
        assert_eq!(links.check("att_2", Variant::Original, expires, &sig), Err(LinkError::BadSignature));
        assert_eq!(links.check("att_1", Variant::Thumbnail, expires, &sig), Err(LinkError::BadSignature));
        assert_eq!(links.check("att_1", Variant::Original, expires + ROUND, &sig), Err(LinkError::BadSignature));
        assert_eq!(links.check("att_1", Variant::Original, expires, "not base64!"), Err(LinkError::BadSignature));
        assert_eq!(links.check("att_1", Variant::Original, expires, ""), Err(LinkError::BadSignature));
        let other = Links::new(&ServerKeys::from_secret([4; 32]), "https://chat.example", ManualClock::new(Timestamp::from_millis(0)));
        assert_eq!(other.check("att_1", Variant::Original, expires, &sig), Err(LinkError::BadSignature));
    }

    #[test]
    fn webhook_envelopes_get_links_for_their_attachments_only() {
        let (links, _) = links();
        let plain = r#"{"data":{"message":{"attachments":[]}}}"#;
        assert!(matches!(links.in_envelope(plain), std::borrow::Cow::Borrowed(_)));
        let with = r#"{"data":{"message":{"attachments":[{"id":"att_1","name":"a.png","content_type":"image/png","size":3,"width":1,"height":1},{"id":"att_2","name":"b.pdf","content_type":"application/pdf","size":9}]}}}"#;
        let sent: serde_json::Value = serde_json::from_str(&links.in_envelope(with)).expect("json");
        let list = sent["data"]["message"]["attachments"].as_array().expect("list");
        assert!(list[0]["url"].as_str().is_some_and(|u| u.contains("/files/att_1?")));
        assert!(list[0]["thumbnail_url"].as_str().is_some_and(|u| u.contains("/files/att_1/thumbnail?")));
        assert!(list[1]["url"].as_str().is_some_and(|u| u.contains("/files/att_2?")));
        assert!(list[1].get("thumbnail_url").is_none());
    }

    #[test]
    fn links_within_ten_minutes_are_the_same() {
        let (links, clock) = links();
        let first = links.url("att_1", Variant::Thumbnail);
        assert!(first.contains("/api/v1/files/att_1/thumbnail?"), "{first}");
        clock.advance(Duration::from_secs(1));
        assert_eq!(links.url("att_1", Variant::Thumbnail), first);
    }
}
