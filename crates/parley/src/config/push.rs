//! The push settings: providers are enabled by their variables, and a
//! credential file that is missing or unreadable stops the start like any
//! other bad value, naming the variable.

use parley_domain::push::PushContent;
use parley_worker::push::jwt::{EcKey, pem_block};
use parley_worker::push::{APNS_URL, ApnsSettings, FCM_URL, ServiceAccount};

use super::{ConfigError, Reader, http_url};

/// The providers' settings, their credentials read and parsed here once.
pub struct PushConfig {
    pub content: PushContent,
    pub apns: Option<ApnsSettings>,
    /// The service account and `PARLEY_FCM_URL`.
    pub fcm: Option<(ServiceAccount, String)>,
    /// `PARLEY_PUSH_RELAY_URL` and its secret.
    pub relay: Option<(String, String)>,
}

/// `PARLEY_EXTRA_CA_FILE`: PEM certificates trusted besides the system's
/// roots by every outbound TLS client (push providers, webhooks, SMTP).
pub struct ExtraRoots {
    /// The file's text, checked when read to hold certificates.
    pub pem: Vec<u8>,
    /// The same, parsed for the HTTP clients.
    pub certificates: Vec<reqwest::Certificate>,
}

pub(super) fn read_extra_roots(r: &mut Reader<'_>) -> Option<ExtraRoots> {
    r.get("PARLEY_EXTRA_CA_FILE", None, |path| {
        let pem = read_file(path)?;
        match reqwest::Certificate::from_pem_bundle(&pem) {
            Ok(certificates) if !certificates.is_empty() => Ok(Some(ExtraRoots { pem, certificates })),
            _ => Err(format!("{path} holds no PEM certificate")),
        }
    })
}

fn read_file(path: &str) -> Result<Vec<u8>, String> {
    std::fs::read(path).map_err(|e| format!("cannot read {path}: {e}"))
}

fn word(s: &str) -> Result<Option<String>, String> {
    if s.bytes().all(|b| b.is_ascii_graphic()) { Ok(Some(s.to_owned())) } else { Err("must be one word without spaces".into()) }
}

fn base_url(s: &str) -> Result<String, String> {
    http_url(s).map(|u| u.as_str().trim_end_matches('/').to_owned())
}

pub(super) fn read(r: &mut Reader<'_>) -> PushConfig {
    let content = r
        .get("PARLEY_PUSH_CONTENT", PushContent::Minimal, |s| PushContent::parse(s).ok_or_else(|| format!("{s:?} is not minimal or full")));
    let key = r.get("PARLEY_APNS_KEY_FILE", None, |path| {
        let text = String::from_utf8(read_file(path)?).map_err(|_| format!("{path} is not a PEM file"))?;
        let der = pem_block(&text, "PRIVATE KEY").map_err(|e| format!("{path} {e}"))?;
        EcKey::from_pkcs8(&der).map(Some).map_err(|e| format!("{path} {e}"))
    });
    let key_id = r.get("PARLEY_APNS_KEY_ID", None, word);
    let team_id = r.get("PARLEY_APNS_TEAM_ID", None, word);
    let topic = r.get("PARLEY_APNS_TOPIC", None, word);
    let apns_url = r.get("PARLEY_APNS_URL", APNS_URL.to_owned(), base_url);
    let apns = match (key, key_id, team_id, topic) {
        (Some(key), Some(key_id), Some(team_id), Some(topic)) => Some(ApnsSettings { key, key_id, team_id, topic, url: apns_url }),
        (None, None, None, None) => None,
        (key, key_id, team_id, topic) => {
            for (name, missing) in [
                ("PARLEY_APNS_KEY_FILE", key.is_none()),
                ("PARLEY_APNS_KEY_ID", key_id.is_none()),
                ("PARLEY_APNS_TEAM_ID", team_id.is_none()),
                ("PARLEY_APNS_TOPIC", topic.is_none()),
            ] {
                if missing && !r.errors.iter().any(|e| e.variable == name) {
                    r.errors.push(ConfigError { variable: name.into(), reason: "is required when any PARLEY_APNS_ setting is".into() });
                }
            }
            None
        }
    };
    let account = r.get("PARLEY_FCM_SERVICE_ACCOUNT_FILE", None, |path| {
        let text = String::from_utf8(read_file(path)?).map_err(|_| format!("{path} is not a JSON file"))?;
        ServiceAccount::from_json(&text).map(Some).map_err(|e| format!("{path} {e}"))
    });
    let fcm_url = r.get("PARLEY_FCM_URL", FCM_URL.to_owned(), base_url);
    let fcm = account.map(|account| (account, fcm_url));
    let relay_url = r.get("PARLEY_PUSH_RELAY_URL", None, |s| http_url(s).map(|u| Some(u.to_string())));
    let relay_secret = r.secret("PARLEY_PUSH_RELAY_SECRET", None, |s| {
        use base64::Engine;
        // As webhooks' secrets: base64 of at least 18 random bytes, which
        // Standard Webhooks libraries decode to verify.
        match s.strip_prefix("whsec_").map(|rest| base64::engine::general_purpose::STANDARD.decode(rest)) {
            Some(Ok(key)) if key.len() >= 18 => Ok(Some(s.to_owned())),
            _ => Err("must be whsec_ and the base64 of at least 18 random bytes, like a webhook's secret".into()),
        }
    });
    let relay = match (relay_url, relay_secret) {
        (Some(url), Some(secret)) => Some((url, secret)),
        (None, None) => None,
        (url, _) => {
            let (name, other) = if url.is_some() {
                ("PARLEY_PUSH_RELAY_SECRET", "PARLEY_PUSH_RELAY_URL")
            } else {
                ("PARLEY_PUSH_RELAY_URL", "PARLEY_PUSH_RELAY_SECRET")
            };
            if !r.errors.iter().any(|e| e.variable == name) {
                r.errors.push(ConfigError { variable: name.into(), reason: format!("is required when {other} is set") });
            }
            None
        }
    };
    PushConfig { content, apns, fcm, relay }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use crate::Config;

    fn problems(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        let vars: BTreeMap<String, String> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        match Config::from_vars(&vars) {
            Ok(_) => Vec::new(),
            Err(e) => e.0.into_iter().map(|e| (e.variable, e.reason)).collect(),
        }
    }

    fn named(pairs: &[(&str, &str)]) -> Vec<String> {
        problems(pairs).into_iter().map(|(v, _)| v).collect()
    }

    #[test]
    fn credentials_that_cannot_be_read_are_named() {
        let dir = tempfile::tempdir().expect("dir");
        let junk = dir.path().join("junk");
        std::fs::write(&junk, "not a key").expect("write");
        let junk = junk.display().to_string();
        let missing = dir.path().join("missing").display().to_string();
        for (var, value) in [
            ("PARLEY_APNS_KEY_FILE", missing.as_str()),
            ("PARLEY_APNS_KEY_FILE", junk.as_str()),
            ("PARLEY_FCM_SERVICE_ACCOUNT_FILE", missing.as_str()),
            ("PARLEY_FCM_SERVICE_ACCOUNT_FILE", junk.as_str()),
            ("PARLEY_EXTRA_CA_FILE", missing.as_str()),
            ("PARLEY_EXTRA_CA_FILE", junk.as_str()),
            ("PARLEY_PUSH_CONTENT", "everything"),
            ("PARLEY_APNS_URL", "ftp://apple"),
            ("PARLEY_PUSH_RELAY_SECRET", "short"),
        ] {
            assert!(named(&[(var, value)]).contains(&var.to_owned()), "{var}={value}: {:?}", problems(&[(var, value)]));
        }
    }

    #[test]
    fn a_provider_half_set_names_what_is_missing() {
        let key = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/push/apns-key.p8");
        let names = named(&[("PARLEY_APNS_KEY_FILE", key), ("PARLEY_APNS_KEY_ID", "KEY1234567")]);
        assert_eq!(names, ["PARLEY_APNS_TEAM_ID", "PARLEY_APNS_TOPIC"]);
        let names = named(&[("PARLEY_PUSH_RELAY_URL", "https://relay.example.com/push")]);
        assert_eq!(names, ["PARLEY_PUSH_RELAY_SECRET"]);
        let all =
            [("PARLEY_APNS_KEY_FILE", key), ("PARLEY_APNS_KEY_ID", "K"), ("PARLEY_APNS_TEAM_ID", "T"), ("PARLEY_APNS_TOPIC", "com.x")];
        assert!(named(&all).is_empty());
    }

    #[test]
    fn nothing_set_is_minimal_with_no_provider() {
        let (c, _) = Config::from_vars(&BTreeMap::new()).expect("defaults");
        assert_eq!(c.push.content, parley_domain::push::PushContent::Minimal);
        assert!(c.push.apns.is_none() && c.push.fcm.is_none() && c.push.relay.is_none() && c.extra_roots.is_none());
    }
}
