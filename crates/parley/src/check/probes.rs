//! The live test of each dependency, by the same clients `serve` uses.

use std::future::Future;
use std::time::Duration;

use futures::StreamExt;
use parley_domain::{Clock, SystemClock};
use parley_notify::{SmsGateway, SmtpMailer};
use parley_worker::push::Providers;
use parley_worker::push::jwt::EcKey;

use super::Outcome;
use crate::config::Config;

/// Every dependency's test, each handed to `done` as it ends. They run
/// one after the other: a report in order matters more than seconds here.
pub async fn all(config: &Config, timeout: Duration, done: &mut dyn FnMut(&'static str, &Outcome)) {
    done("database", &bounded(timeout, database(config)).await);
    done("mail server", &bounded(timeout, mail(config)).await);
    done("SMS gateway", &bounded(timeout, sms(config)).await);
    done("file store", &bounded(timeout, files(config)).await);
    let providers = match push_providers(config) {
        Ok(providers) => providers,
        Err(reason) => return done("push", &Outcome::Failed(reason)),
    };
    let probes = providers.probes(SystemClock.now());
    if probes.is_empty() {
        done("push", &Outcome::Unused("no mobile provider set up (APNs, FCM or a relay); browsers' Web Push needs none".into()));
    }
    for (name, probe) in probes {
        done(name, &bounded(timeout, async { probe.await.map_or_else(Outcome::Failed, Outcome::Ok) }).await);
    }
}

/// `probe`, failed when it takes longer than `timeout` or when a client
/// library panics on a value it was given: the other tests still run.
async fn bounded(timeout: Duration, probe: impl Future<Output = Outcome>) -> Outcome {
    use futures::FutureExt;
    match tokio::time::timeout(timeout, std::panic::AssertUnwindSafe(probe).catch_unwind()).await {
        Ok(Ok(outcome)) => outcome,
        Ok(Err(_)) => Outcome::Failed("the test failed on a value its client could not take (see the message above)".into()),
        Err(_) => Outcome::Failed(format!("no answer within {} seconds", timeout.as_secs())),
    }
}

async fn database(config: &Config) -> Outcome {
    let schema = match parley_storage::inspect(&config.database_url).await {
        Ok(schema) => schema,
        Err(e) => return Outcome::Failed(e.to_string()),
    };
    let (version, latest, server) = (schema.version, schema.latest, schema.server);
    if !schema.made {
        return Outcome::Ok(format!("{server}: not made yet; the first start makes it and applies the {latest} migrations"));
    }
    if version > latest {
        return Outcome::Failed(format!(
            "{server}: the schema is at migration {version}, newer than this build knows ({latest}): run the newer Parley"
        ));
    }
    if version == 0 {
        return Outcome::Ok(format!("{server}: reached; empty, the first start applies the {latest} migrations"));
    }
    if version < latest {
        return Outcome::Ok(format!(
            "{server}: reached; {} of {latest} migrations to apply (`parley migrate`, or the next start applies them)",
            latest - version
        ));
    }
    Outcome::Ok(format!("{server}: reached; the schema is up to date ({latest} migrations)"))
}

async fn mail(config: &Config) -> Outcome {
    let (Some(url), Some(from)) = (&config.smtp_url, &config.mail_from) else {
        return Outcome::Unused("not set up (PARLEY_SMTP_URL)".into());
    };
    let mailer = match SmtpMailer::new(url, from, config.extra_roots.as_ref().map(|r| r.pem.as_slice())) {
        Ok(mailer) => mailer,
        Err(e) => return Outcome::Failed(e),
    };
    match mailer.probe().await {
        Ok(()) => Outcome::Ok(format!("{}: connected, signed in where set, NOOP answered; nothing sent", super::shown_url(url))),
        Err(e) => Outcome::Failed(format!("{}: {e}", super::shown_url(url))),
    }
}

async fn sms(config: &Config) -> Outcome {
    let Some(url) = &config.sms_gateway_url else { return Outcome::Unused("not set up (PARLEY_SMS_GATEWAY_URL)".into()) };
    let gateway = match SmsGateway::new(url.clone(), config.sms_gateway_token.clone()) {
        Ok(gateway) => gateway,
        Err(e) => return Outcome::Failed(e),
    };
    match gateway.probe().await {
        Ok(found) => Outcome::Ok(format!("{}: {found}", super::shown_url(url.as_str()))),
        Err(e) => Outcome::Failed(format!("{}: {e}", super::shown_url(url.as_str()))),
    }
}

/// Writes a small file, reads it back and removes it; a folder that does
/// not exist yet is not made (the first start makes it).
async fn files(config: &Config) -> Outcome {
    if let Some(folder) = config.files.url.strip_prefix("file://").map(std::path::Path::new)
        && !folder.exists()
    {
        return match parley_storage::can_be_made(folder) {
            Ok(()) => Outcome::Ok(format!("{}: not made yet; the first start makes it", config.files.url)),
            Err(e) => Outcome::Failed(e),
        };
    }
    let store = match parley_storage::files::open(&config.files.url, config.files.credentials.clone()) {
        Ok(store) => store,
        Err(e) => return Outcome::Failed(e.to_string()),
    };
    let where_ = super::shown_url(&config.files.url);
    // Keys are flat words in every store; the prefix says whose it is if
    // a crash between writing and removing leaves it behind.
    let key = match parley_domain::ids::prefixed::<16>("parley-check-") {
        Ok(id) => id,
        Err(e) => return Outcome::Failed(e.to_string()),
    };
    const BODY: &[u8] = b"parley check";
    let body = futures::stream::once(async { Ok(bytes::Bytes::from_static(BODY)) }).boxed();
    if let Err(e) = store.put(&key, body, 1024).await {
        return Outcome::Failed(format!("{where_}: cannot write: {e}"));
    }
    let read = async {
        let (_, mut stream) = store.get(&key).await.map_err(|e| e.to_string())?;
        let mut back = Vec::new();
        while let Some(piece) = stream.next().await {
            back.extend_from_slice(&piece.map_err(|e| e.to_string())?);
        }
        Ok::<_, String>(back)
    }
    .await;
    let removed = store.delete(&key).await;
    match (read, removed) {
        (Ok(back), Ok(())) if back == BODY => Outcome::Ok(format!("{where_}: a test file was written, read back and removed")),
        (Ok(_), Ok(())) => Outcome::Failed(format!("{where_}: a test file read back differs from what was written")),
        (Err(e), _) => Outcome::Failed(format!("{where_}: cannot read back a test file: {e}")),
        (Ok(_), Err(e)) => Outcome::Failed(format!("{where_}: cannot remove a test file ({key}): {e}")),
    }
}

/// The push providers' clients, as `serve` sets them up.
fn push_providers(config: &Config) -> Result<Providers, String> {
    // The check's own key for Web Push, which it does not test: the
    // installation's is in the database, and a browser's push service
    // needs no setting.
    let vapid = EcKey::generate().and_then(|der| EcKey::from_pkcs8(&der))?;
    // The public address only names the installation to browsers' push
    // services (VAPID), which are not tested.
    let settings = crate::startup::push_settings(config, config.webhook_allow_private, "https://localhost");
    Providers::new(settings, vapid).map_err(|e| format!("cannot set up the push clients: {e}"))
}
