//! Device marks: what a browser or an app keeps after signing in, so that
//! a later sign-in from it is told apart from a stranger's.
//!
//! Failed sign-ins lock an email for a while; without marks that lock
//! could be aimed at someone (five wrong passwords for their email, from
//! anywhere, keep them out of their own browser). A mark lets a sign-in
//! be judged by the failures made with that mark alone. It is signed
//! (HMAC-SHA256 under a key derived from the installation's secret) and
//! bound to the email it signed in with and to the account's password as
//! it was then (its stored hash), so it cannot be made without a
//! successful sign-in, one taken from another account does nothing, and
//! a new password ends every mark made with the old one: whoever signed
//! in with a stolen password keeps no allowance of guesses after the
//! reset.
//!
//! A mark is `dm2.<id>.<issued>.<email tag>.<password tag>`: a random id
//! (what its failures are counted under), when it was issued (base 36
//! milliseconds), and two 128-bit HMAC tags, all URL-safe. The first binds
//! the mark to the email and is checked before anything is read, so a
//! made-up mark costs nothing and tells nothing (not even whether the
//! email exists); only the holder of a genuine mark for that email makes
//! the sign-in read the account before its reservation, to check the
//! second tag against the password hash. A mark is good for [`LIFETIME`]
//! and a new one is issued at every successful sign-in.

use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use sha2::Sha256;

use crate::clock::Timestamp;
use crate::error::DomainError;
use crate::ids::{parse_radix36, radix36};

/// How long a mark is honoured after its sign-in.
pub const LIFETIME: Duration = Duration::from_secs(365 * 86_400);

const VERSION: &str = "dm2";

/// Bytes of each tag: 128 bits, as a mark is a long-lived credential's
/// helper, not a credential.
const TAG: usize = 16;

#[derive(Clone)]
pub struct DeviceMarks {
    key: [u8; 32],
}

impl std::fmt::Debug for DeviceMarks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("DeviceMarks(..)")
    }
}

/// The device a valid mark names: its failures are counted under it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MarkedDevice(pub String);

/// A mark whose email tag holds: what remains is its password tag.
pub struct Claimed {
    id: String,
    email_tag: Vec<u8>,
    password_tag: Vec<u8>,
}

impl DeviceMarks {
    pub fn new(key: [u8; 32]) -> Self {
        Self { key }
    }

    fn mac(&self, parts: &[&[u8]]) -> Hmac<Sha256> {
        let mut mac = crate::keys::hmac(&self.key);
        for part in parts {
            mac.update(part);
            mac.update(b"\n");
        }
        mac
    }

    fn email_tag(&self, id: &str, issued: &str, email_key: &str) -> Hmac<Sha256> {
        self.mac(&[VERSION.as_bytes(), b"email", id.as_bytes(), issued.as_bytes(), email_key.as_bytes()])
    }

    fn password_tag(&self, email_tag: &[u8], password_hash: &str) -> Hmac<Sha256> {
        self.mac(&[VERSION.as_bytes(), b"password", email_tag, password_hash.as_bytes()])
    }

    /// A new mark for a device that has just signed in as `email_key`,
    /// whose password hash is now `password_hash`.
    pub fn issue(&self, email_key: &str, password_hash: &str, now: Timestamp) -> Result<String, DomainError> {
        let id = URL_SAFE_NO_PAD.encode(crate::ids::random_bytes::<16>()?);
        let issued = radix36(now.as_millis());
        let email_tag = self.email_tag(&id, &issued, email_key).finalize().into_bytes();
        let password_tag = self.password_tag(&email_tag[..TAG], password_hash).finalize().into_bytes();
        let (email_tag, password_tag) = (URL_SAFE_NO_PAD.encode(&email_tag[..TAG]), URL_SAFE_NO_PAD.encode(&password_tag[..TAG]));
        Ok(format!("{VERSION}.{id}.{issued}.{email_tag}.{password_tag}"))
    }

    /// The mark, if this service issued it for `email_key` less than
    /// [`LIFETIME`] ago: checked without reading anything. Anything else
    /// is no mark at all.
    pub fn claim(&self, mark: &str, email_key: &str, now: Timestamp) -> Option<Claimed> {
        let mut parts = mark.split('.');
        let (Some(VERSION), Some(id), Some(issued), Some(email_tag), Some(password_tag), None) =
            (parts.next(), parts.next(), parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return None;
        };
        let at = Timestamp::from_millis(parse_radix36(issued)?);
        if at > now.plus(Duration::from_secs(300)) || now.since(at) >= LIFETIME {
            return None;
        }
        let (email_tag, password_tag) = (URL_SAFE_NO_PAD.decode(email_tag).ok()?, URL_SAFE_NO_PAD.decode(password_tag).ok()?);
        if email_tag.len() != TAG || password_tag.len() != TAG {
            return None;
        }
        // Compared in constant time.
        self.email_tag(id, issued, email_key).verify_truncated_left(&email_tag).ok()?;
        Some(Claimed { id: id.to_owned(), email_tag, password_tag })
    }

    /// The device a claimed mark names, if the account's password is
    /// still the one it signed in with.
    pub fn confirm(&self, claimed: &Claimed, password_hash: &str) -> Option<MarkedDevice> {
        self.password_tag(&claimed.email_tag, password_hash).verify_truncated_left(&claimed.password_tag).ok()?;
        Some(MarkedDevice(claimed.id.clone()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: Timestamp = Timestamp::from_millis(1_767_225_600_000);
    const ANN: &str = "ann@example.com";
    const HASH: &str = "$argon2id$ann";

    fn marks() -> DeviceMarks {
        DeviceMarks::new([9; 32])
    }

    fn device(mark: &str, email: &str, hash: &str, now: Timestamp) -> Option<MarkedDevice> {
        marks().confirm(&marks().claim(mark, email, now)?, hash)
    }

    #[test]
    fn a_mark_names_its_device_for_its_account_only() {
        let mark = marks().issue(ANN, HASH, NOW).unwrap();
        assert!(crate::validate::token(&mark).is_ok(), "a client can send it back as a token: {mark}");
        let found = device(&mark, ANN, HASH, NOW).expect("valid");
        assert!(mark.contains(&found.0));
        assert!(marks().claim(&mark, "bob@example.com", NOW).is_none(), "another account's, refused before any read");
        assert_eq!(device(&mark, ANN, "$argon2id$new", NOW), None, "a new password ends the marks made with the old one");
        assert!(DeviceMarks::new([8; 32]).claim(&mark, ANN, NOW).is_none(), "another installation's");
        assert_ne!(marks().issue(ANN, HASH, NOW).unwrap(), mark, "each sign-in gets a new one");
    }

    #[test]
    fn a_mark_lasts_a_year() {
        let mark = marks().issue(ANN, HASH, NOW).unwrap();
        assert!(device(&mark, ANN, HASH, NOW.plus(LIFETIME - Duration::from_secs(1))).is_some());
        assert!(marks().claim(&mark, ANN, NOW.plus(LIFETIME)).is_none());
        assert!(marks().claim(&mark, ANN, NOW.minus(Duration::from_secs(3600))).is_none(), "not from the future");
    }

    #[test]
    fn altered_and_malformed_marks_are_no_marks() {
        let mark = marks().issue(ANN, HASH, NOW).unwrap();
        let p: Vec<&str> = mark.split('.').collect();
        let other = marks().issue(ANN, HASH, NOW).unwrap();
        let o: Vec<&str> = other.split('.').collect();
        for bad in [
            String::new(),
            "dm2".into(),
            format!("{mark}.x"),
            format!("dm1.{}.{}.{}.{}", p[1], p[2], p[3], p[4]),
            format!("dm2.{}.{}.{}.{}", o[1], p[2], p[3], p[4]),
            format!("dm2.{}.{}.{}.{}", p[1], radix36(NOW.as_millis() + 1), p[3], p[4]),
            format!("dm2.{}.{}.{}.{}", p[1], p[2], &p[3][1..], p[4]),
            format!("dm2.{}.-{}.{}.{}", p[1], p[2], p[3], p[4]),
        ] {
            assert!(marks().claim(&bad, ANN, NOW).is_none(), "{bad}");
        }
        for bad in [format!("dm2.{}.{}.{}.{}", p[1], p[2], p[3], o[4]), format!("dm2.{}.{}.{}.{}", p[1], p[2], p[3], &p[4][1..])] {
            assert_eq!(device(&bad, ANN, HASH, NOW), None, "{bad}");
        }
    }
}
