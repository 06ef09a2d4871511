//! Device marks: what a browser or an app keeps after signing in, so that
//! a later sign-in from it is told apart from a stranger's.
//!
//! Failed sign-ins lock an email for a while; without marks that lock
//! could be aimed at someone (five wrong passwords for their email, from
//! anywhere, keep them out of their own browser). A mark lets a sign-in
//! be judged by the failures made with that mark alone. It is signed
//! (HMAC-SHA256 under a key derived from the installation's secret) and
//! bound to the email it signed in with, so it cannot be made without a
//! successful sign-in, and one taken from another account does nothing.
//!
//! A mark is `dm1.<id>.<issued>.<signature>`: a random id (what its
//! failures are counted under), when it was issued (base 36
//! milliseconds), and the signature, all URL-safe. It is good for
//! [`LIFETIME`] and a new one is issued at every successful sign-in.

use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

use crate::clock::Timestamp;
use crate::error::DomainError;

/// How long a mark is honoured after its sign-in.
pub const LIFETIME: Duration = Duration::from_secs(365 * 86_400);

const VERSION: &str = "dm1";

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

impl DeviceMarks {
    pub fn new(key: [u8; 32]) -> Self {
        Self { key }
    }

    fn mac(&self, id: &str, issued: &str, email_key: &str) -> Hmac<Sha256> {
        // A 32-byte key is padded to HMAC-SHA256's block, never hashed.
        let mut block = [0u8; 64];
        block[..32].copy_from_slice(&self.key);
        let mut mac = <Hmac<Sha256> as KeyInit>::new(&block.into());
        for part in [VERSION, id, issued, email_key] {
            mac.update(part.as_bytes());
            mac.update(b"\n");
        }
        mac
    }

    /// A new mark for a device that has just signed in as `email_key`.
    pub fn issue(&self, email_key: &str, now: Timestamp) -> Result<String, DomainError> {
        let id = URL_SAFE_NO_PAD.encode(crate::ids::random_bytes::<16>()?);
        let issued = radix36(now.as_millis());
        let signature = URL_SAFE_NO_PAD.encode(self.mac(&id, &issued, email_key).finalize().into_bytes());
        Ok(format!("{VERSION}.{id}.{issued}.{signature}"))
    }

    /// The device `mark` names, if this service issued it for `email_key`
    /// less than [`LIFETIME`] ago; anything else is no mark at all.
    pub fn verify(&self, mark: &str, email_key: &str, now: Timestamp) -> Option<MarkedDevice> {
        let mut parts = mark.split('.');
        let (Some(VERSION), Some(id), Some(issued), Some(signature), None) =
            (parts.next(), parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return None;
        };
        let at = i64::from_str_radix(issued, 36).ok().filter(|_| issued.len() <= 12 && !issued.starts_with(['+', '-']))?;
        let signature = URL_SAFE_NO_PAD.decode(signature).ok()?;
        // Compared in constant time.
        self.mac(id, issued, email_key).verify_slice(&signature).ok()?;
        let issued_at = Timestamp::from_millis(at);
        (issued_at <= now.plus(Duration::from_secs(300)) && now.since(issued_at) < LIFETIME).then(|| MarkedDevice(id.to_owned()))
    }
}

fn radix36(mut n: i64) -> String {
    const DIGITS: &[u8; 36] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    let mut out = Vec::new();
    loop {
        out.push(DIGITS[(n.rem_euclid(36)) as usize]);
        n /= 36;
        if n <= 0 {
            break;
        }
    }
    out.reverse();
    String::from_utf8(out).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: Timestamp = Timestamp::from_millis(1_767_225_600_000);

    fn marks() -> DeviceMarks {
        DeviceMarks::new([9; 32])
    }

    #[test]
    fn a_mark_names_its_device_for_its_email_only() {
        let mark = marks().issue("ann@example.com", NOW).unwrap();
        assert!(crate::validate::token(&mark).is_ok(), "a client can send it back as a token: {mark}");
        let device = marks().verify(&mark, "ann@example.com", NOW).expect("valid");
        assert!(mark.contains(&device.0));
        assert_eq!(marks().verify(&mark, "bob@example.com", NOW), None, "another account's");
        assert_eq!(DeviceMarks::new([8; 32]).verify(&mark, "ann@example.com", NOW), None, "another installation's");
        assert_ne!(marks().issue("ann@example.com", NOW).unwrap(), mark, "each sign-in gets a new one");
    }

    #[test]
    fn a_mark_lasts_a_year() {
        let mark = marks().issue("ann@example.com", NOW).unwrap();
        assert!(marks().verify(&mark, "ann@example.com", NOW.plus(LIFETIME - Duration::from_secs(1))).is_some());
        assert_eq!(marks().verify(&mark, "ann@example.com", NOW.plus(LIFETIME)), None);
        assert_eq!(marks().verify(&mark, "ann@example.com", NOW.minus(Duration::from_secs(3600))), None, "not from the future");
    }

    #[test]
    fn altered_and_malformed_marks_are_no_marks() {
        let mark = marks().issue("ann@example.com", NOW).unwrap();
        let parts: Vec<&str> = mark.split('.').collect();
        let other = marks().issue("ann@example.com", NOW).unwrap();
        let other_parts: Vec<&str> = other.split('.').collect();
        for bad in [
            String::new(),
            "dm1".into(),
            format!("{mark}.x"),
            format!("dm2.{}.{}.{}", parts[1], parts[2], parts[3]),
            format!("dm1.{}.{}.{}", other_parts[1], parts[2], parts[3]),
            format!("dm1.{}.{}.{}", parts[1], radix36(NOW.as_millis() + 1), parts[3]),
            format!("dm1.{}.{}.{}", parts[1], parts[2], &parts[3][1..]),
            format!("dm1.{}.-{}.{}", parts[1], parts[2], parts[3]),
        ] {
            assert_eq!(marks().verify(&bad, "ann@example.com", NOW), None, "{bad}");
        }
    }
}
