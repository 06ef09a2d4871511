//! `parley check`: what an installation is about to run with, and whether
//! each service it depends on answers, before it goes live.
//!
//! It prints every variable in effect, set or default (credentials
//! hidden, a URL's user information masked), what they amount to, then
//! one line per dependency with a live test of each, as each ends; a
//! dependency not set up is shown and is no failure. The exit code is
//! non-zero when any test failed. Nothing is changed: the database is
//! read, not migrated; no email, SMS or push is sent; a place not made
//! yet is only tried for writing; the file store gets one small file that
//! is removed again.

mod probes;

use std::fmt::Write as _;
use std::process::ExitCode;
use std::time::Duration;

use crate::config::Config;

/// How long one dependency may take to answer: beyond it, the check fails
/// (a firewall that drops packets would otherwise hold the command).
const PROBE_TIMEOUT: Duration = Duration::from_secs(20);

/// The outcome of one dependency's test.
pub enum Outcome {
    Ok(String),
    Failed(String),
    /// Not set up: nothing to test.
    Unused(String),
}

/// Runs the checks, prints the report to standard output and returns the
/// exit code.
pub async fn run(config: &Config) -> ExitCode {
    say(&settings(config));
    say("\nChecks:\n");
    let mut failed = 0;
    // Each line as its test ends: a dependency that does not answer takes
    // up to PROBE_TIMEOUT, and the ones before it are worth seeing meanwhile.
    probes::all(config, PROBE_TIMEOUT, &mut |name, outcome| {
        failed += usize::from(matches!(outcome, Outcome::Failed(_)));
        say(&line(name, outcome, &config.credential_values));
    })
    .await;
    match failed {
        0 => {
            say("\nEvery check passed.\n");
            ExitCode::SUCCESS
        }
        1 => {
            say("\n1 check failed.\n");
            ExitCode::FAILURE
        }
        n => {
            say(&format!("\n{n} checks failed.\n"));
            ExitCode::FAILURE
        }
    }
}

/// Writes to standard output; a reader that went away (`| head`) is no
/// reason to stop the checks, whose exit code still says how they went.
fn say(text: &str) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
}

/// Every variable and what the installation will do with them.
fn settings(config: &Config) -> String {
    let mut out = String::from("Configuration (every variable; those not set have their default):\n");
    let width = config.shown.iter().map(|s| s.name.len()).max().unwrap_or(0);
    for setting in &config.shown {
        let origin = if setting.set { "" } else { "  (default)" };
        let _ = writeln!(out, "  {:<width$}  {}{origin}", setting.name, setting.value);
    }
    out.push_str("\nIn effect:\n");
    let public = match config.public_url {
        Some(_) => shown_url(&config.public_base(config.listen)),
        None => format!("{} (PARLEY_PUBLIC_URL not set)", config.public_base(config.listen)),
    };
    let mail = match (&config.smtp_url, &config.mail_from) {
        (Some(url), Some(from)) => format!("{} as {from}", shown_url(url)),
        _ => "not set up: no email is sent (verification by email, visitors' emails)".into(),
    };
    let sms = config.sms_gateway_url.as_ref().map_or_else(|| "not set up: no SMS is sent".into(), |u| shown_url(u.as_str()));
    let mut push = Vec::new();
    if config.push.apns.is_some() {
        push.push("APNs");
    }
    if config.push.fcm.is_some() {
        push.push("FCM");
    }
    if config.push.relay.is_some() {
        push.push("relay");
    }
    push.push("Web Push");
    let proxies = if config.trusted_proxies.is_empty() {
        "none: X-Forwarded-For is ignored, the client address is the connection's".to_owned()
    } else {
        config.trusted_proxies.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ")
    };
    let database = match parley_storage::Location::parse(&config.database_url) {
        Ok(parley_storage::Location::Postgres(_)) => {
            format!("{} ({} connections)", shown_url(&config.database_url), config.database_pool)
        }
        _ => shown_url(&config.database_url),
    };
    let rows = [
        ("listening on", config.listen.to_string()),
        ("public address", public),
        ("database", database),
        ("files", shown_url(&config.files.url)),
        ("mail", mail),
        ("SMS", sms),
        ("push", push.join(", ")),
        ("trusted proxies", proxies),
    ];
    for (label, value) in rows {
        let _ = writeln!(out, "  {label:<17} {value}");
    }
    out
}

/// `url` with its credentials masked.
fn shown_url(url: &str) -> String {
    crate::config::without_password(url)
}

/// A dependency's line: `ok`, `FAIL` or `-`, its name, what was found,
/// with any credential's value masked.
fn line(name: &str, outcome: &Outcome, credentials: &[String]) -> String {
    let (mark, text) = match outcome {
        Outcome::Ok(text) => ("ok", text),
        Outcome::Failed(text) => ("FAIL", text),
        Outcome::Unused(text) => ("-", text),
    };
    format!("  {mark:<5} {name:<12} {}\n", masked(&one_line(text), credentials))
}

/// `text` with every credential's value replaced, longest first (one may
/// hold another). Values shorter than four characters are left: masking
/// every `p` would garble the text and hide nothing worth hiding.
fn masked(text: &str, credentials: &[String]) -> String {
    let mut by_length: Vec<&String> = credentials.iter().filter(|c| c.chars().count() >= 4).collect();
    by_length.sort_by_key(|c| std::cmp::Reverse(c.len()));
    by_length.into_iter().fold(text.to_owned(), |text, credential| text.replace(credential.as_str(), "****"))
}

/// A reason on one line: an error's own line breaks (a server's banner, a
/// chain of causes) would break the one-line-per-dependency report, and a
/// server's control characters could rewrite what the terminal shows.
fn one_line(text: &str) -> String {
    let printable: String = text.chars().map(|c| if c.is_control() { ' ' } else { c }).collect();
    printable.split_whitespace().collect::<Vec<_>>().join(" ")
}
