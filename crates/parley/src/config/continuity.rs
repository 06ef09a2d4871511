//! The settings of visitors who leave: when an unread answer is emailed,
//! and where replies come back.

use std::time::Duration;

use super::{ConfigError, Reader};

pub struct ContinuityConfig {
    /// `PARLEY_VISITOR_EMAIL_DELAY`.
    pub email_delay: Duration,
    /// `PARLEY_INBOUND_DOMAIN`: the domain of the reply addresses.
    pub inbound_domain: Option<String>,
    /// `PARLEY_INBOUND_TOKEN`: what posts to `inbound/email` must carry.
    pub inbound_token: Option<String>,
}

pub(super) fn read(r: &mut Reader<'_>) -> ContinuityConfig {
    let email_delay = r.duration("PARLEY_VISITOR_EMAIL_DELAY", Duration::from_secs(120));
    let inbound_domain = r.get("PARLEY_INBOUND_DOMAIN", None, |s| {
        let s = s.trim().to_ascii_lowercase();
        let label = |l: &str| {
            !l.is_empty()
                && l.len() <= 63
                && !l.starts_with('-')
                && !l.ends_with('-')
                && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
        };
        if s.len() <= 253 && s.contains('.') && s.split('.').all(label) {
            Ok(Some(s))
        } else {
            Err("must be a domain name such as reply.example.com".into())
        }
    });
    let inbound_token = r.secret("PARLEY_INBOUND_TOKEN", None, |s| {
        if s.len() >= 16 && s.bytes().all(|b| b.is_ascii_graphic()) {
            Ok(Some(s.to_owned()))
        } else {
            Err("must be at least 16 printable characters without spaces".into())
        }
    });
    // A reply address nobody can post to, or a route no address leads to.
    match (&inbound_domain, &inbound_token) {
        (Some(_), None) => r.errors.push(ConfigError {
            variable: "PARLEY_INBOUND_TOKEN".into(),
            reason: "is required with PARLEY_INBOUND_DOMAIN (replies to its addresses are posted with it)".into(),
        }),
        (None, Some(_)) => r.errors.push(ConfigError {
            variable: "PARLEY_INBOUND_DOMAIN".into(),
            reason: "is required with PARLEY_INBOUND_TOKEN (emails carry reply addresses of it)".into(),
        }),
        _ => {}
    }
    ContinuityConfig { email_delay, inbound_domain, inbound_token }
}
