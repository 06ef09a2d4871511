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
//! A mark is `dm1.<id>.<issued>.<signature>`: a random id (what its
//! failures are counted under), when it was issued (base 36
//! milliseconds), and the signature, all URL-safe. It is good for
//! [`LIFETIME`] and a new one is issued at every successful sign-in.

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

/// What a mark is bound to: the account's email, as limits compare it,
/// and its stored password hash.
pub struct Account<'a> {
    pub email_key: &'a str,
    pub password_hash: &'a str,
}

/// The device a valid mark names: its failures are counted under it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MarkedDevice(pub String);

impl DeviceMarks {
    pub fn new(key: [u8; 32]) -> Self {
        Self { key }
    }

    /// The signature's input: the mark's own parts and what it is bound
    /// to (the account's email and its password hash as of the sign-in).
    fn mac(&self, id: &str, issued: &str, account: &Account<'_>) -> Hmac<Sha256> {
        let mut mac = crate::keys::hmac(&self.key);
        for part in [VERSION, id, issued, account.email_key, account.password_hash] {
            mac.update(part.as_bytes());
            mac.update(b"\n");
        }
        mac
    }

    /// A new mark for a device that has just signed in to `account`.
    pub fn issue(&self, account: &Account<'_>, now: Timestamp) -> Result<String, DomainError> {
        let id = URL_SAFE_NO_PAD.encode(crate::ids::random_bytes::<16>()?);
        let issued = radix36(now.as_millis());
        let signature = URL_SAFE_NO_PAD.encode(self.mac(&id, &issued, account).finalize().into_bytes());
        Ok(format!("{VERSION}.{id}.{issued}.{signature}"))
    }

    /// The device `mark` names, if this service issued it for `account`
    /// (as the account is now) less than [`LIFETIME`] ago; anything else
    /// is no mark at all.
    pub fn verify(&self, mark: &str, account: &Account<'_>, now: Timestamp) -> Option<MarkedDevice> {
        let mut parts = mark.split('.');
        let (Some(VERSION), Some(id), Some(issued), Some(signature), None) =
            (parts.next(), parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return None;
        };
        let at = parse_radix36(issued)?;
        let signature = URL_SAFE_NO_PAD.decode(signature).ok()?;
        // Compared in constant time.
        self.mac(id, issued, account).verify_slice(&signature).ok()?;
        let issued_at = Timestamp::from_millis(at);
        (issued_at <= now.plus(Duration::from_secs(300)) && now.since(issued_at) < LIFETIME).then(|| MarkedDevice(id.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: Timestamp = Timestamp::from_millis(1_767_225_600_000);

    fn marks() -> DeviceMarks {
        DeviceMarks::new([9; 32])
    }

    const ANN: Account<'static> = Account { email_key: "ann@example.com", password_hash: "$argon2id$ann" };

    #[test]
    fn a_mark_names_its_device_for_its_email_only() {
        let mark = marks().issue(&ANN, NOW).unwrap();
        assert!(crate::validate::token(&mark).is_ok(), "a client can send it back as a token: {mark}");
        let device = marks().verify(&mark, &ANN, NOW).expect("valid");
        assert!(mark.contains(&device.0));
        assert_eq!(marks().verify(&mark, &Account { email_key: "bob@example.com", ..ANN }, NOW), None, "another account's");
        let reset = Account { password_hash: "$argon2id$new", ..ANN };
        assert_eq!(marks().verify(&mark, &reset, NOW), None, "a new password ends the marks made with the old one");
        assert_eq!(DeviceMarks::new([8; 32]).verify(&mark, &ANN, NOW), None, "another installation's");
        assert_ne!(marks().issue(&ANN, NOW).unwrap(), mark, "each sign-in gets a new one");
    }

    #[test]
    fn a_mark_lasts_a_year() {
        let mark = marks().issue(&ANN, NOW).unwrap();
        assert!(marks().verify(&mark, &ANN, NOW.plus(LIFETIME - Duration::from_secs(1))).is_some());
        assert_eq!(marks().verify(&mark, &ANN, NOW.plus(LIFETIME)), None);
        assert_eq!(marks().verify(&mark, &ANN, NOW.minus(Duration::from_secs(3600))), None, "not from the future");
    }

    #[test]
    fn altered_and_malformed_marks_are_no_marks() {
        let mark = marks().issue(&ANN, NOW).unwrap();
        let parts: Vec<&str> = mark.split('.').collect();
        let other = marks().issue(&ANN, NOW).unwrap();
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
            assert_eq!(marks().verify(&bad, &ANN, NOW), None, "{bad}");
        }
    }
}
