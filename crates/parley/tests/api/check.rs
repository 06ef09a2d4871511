//! `parley check` as a self-hoster runs it before going live: every
//! dependency tested live against real peers on loopback (an SMTP server,
//! an HTTP gateway, the push providers' peer, the suite's database), the
//! credentials never printed, nothing sent and nothing changed.

use serde_json::json;

use crate::cli::{output, parley};
use crate::push_peers::{KEY_ID, Peer, TEAM_ID, TOPIC, fixture};
use crate::receiver::{Receiver, Reply};
use crate::smtp_sink::SmtpSink;

const SMTP_PASSWORD: &str = "smtp-password-never-shown";
const GATEWAY_TOKEN: &str = "gateway-token-never-shown";
const METRICS_TOKEN: &str = "metrics-token-never-shown";
const GATEWAY_URL_PASSWORD: &str = "gateway-url-password-never-shown";

/// The line of the report about `name`.
fn line<'a>(stdout: &'a str, name: &str) -> &'a str {
    stdout
        .lines()
        .find(|l| l.trim_start().split_once(' ').is_some_and(|(_, rest)| rest.trim_start().starts_with(name)))
        .unwrap_or_else(|| panic!("no line about {name} in:\n{stdout}"))
}

fn passed(stdout: &str, name: &str) -> bool {
    line(stdout, name).trim_start().starts_with("ok ")
}

fn failed(stdout: &str, name: &str) -> bool {
    line(stdout, name).trim_start().starts_with("FAIL ")
}

/// `cmd` with APNs pointed at the peer (trusted through the test CA), for
/// the app `topic`.
fn with_apns<'a>(cmd: &'a mut tokio::process::Command, peer: &Peer, topic: &str) -> &'a mut tokio::process::Command {
    cmd.env("PARLEY_EXTRA_CA_FILE", fixture("ca.pem"))
        .env("PARLEY_APNS_KEY_FILE", fixture("apns-key.p8"))
        .env("PARLEY_APNS_KEY_ID", KEY_ID)
        .env("PARLEY_APNS_TEAM_ID", TEAM_ID)
        .env("PARLEY_APNS_TOPIC", topic)
        .env("PARLEY_APNS_URL", &peer.base)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_dependency_that_answers_passes_and_no_credential_is_printed() {
    let dir = tempfile::tempdir().unwrap();
    let (database_url, _db) = crate::helpers::fresh_database(dir.path(), "parley.sqlite3").await;
    let sink = SmtpSink::start_tls_with_login(Some(("parley", SMTP_PASSWORD))).await;
    let gateway = Receiver::start().await;
    gateway.reply(&[Reply::Status(405)]);
    let peer = Peer::start().await;
    // What Apple answers a device token no device has, once it took the
    // provider token.
    peer.script(&"0".repeat(64), &[(400, json!({"reason": "BadDeviceToken"}))]);
    let account = crate::push::service_account(dir.path(), &peer);
    let smtp_url = format!("smtps://parley:{SMTP_PASSWORD}@localhost:{}", sink.port);
    // An installation's folder, which its first start made.
    let files = dir.path().join("files");
    std::fs::create_dir(&files).unwrap();

    let (code, stdout, stderr) = output(
        with_apns(&mut parley(dir.path()), &peer, TOPIC)
            .arg("check")
            .env("PARLEY_DATABASE_URL", &database_url)
            .env("PARLEY_SMTP_URL", &smtp_url)
            .env("PARLEY_MAIL_FROM", "Parley <support@example.com>")
            .env("PARLEY_SMS_GATEWAY_URL", &gateway.url)
            .env("PARLEY_SMS_GATEWAY_TOKEN", GATEWAY_TOKEN)
            .env("PARLEY_METRICS_TOKEN", METRICS_TOKEN)
            .env("PARLEY_FILES_URL", format!("file://{}", files.display()))
            .env("PARLEY_FCM_SERVICE_ACCOUNT_FILE", &account)
            .env("PARLEY_FCM_URL", &peer.base)
            .env("PARLEY_PUSH_RELAY_URL", format!("{}/relay", peer.base))
            .env("PARLEY_PUSH_RELAY_SECRET", crate::push_peers::RELAY_SECRET)
            .env("PARLEY_TRUSTED_PROXIES", "10.0.0.0/8"),
    )
    .await;

    assert_eq!(code, 0, "stdout:\n{stdout}\nstderr:\n{stderr}");
    for name in ["database", "mail server", "SMS gateway", "file store", "push: APNs", "push: FCM", "push: relay"] {
        assert!(passed(&stdout, name), "{name} did not pass:\n{stdout}");
    }
    assert!(stdout.contains("Every check passed."));
    // The configuration in effect, credentials hidden.
    let setting = |name: &str| {
        let line = stdout.lines().find(|l| l.trim_start().starts_with(&format!("{name} "))).unwrap_or_else(|| panic!("{name}"));
        line.trim_start()[name.len()..].trim().to_owned()
    };
    assert_eq!(setting("PARLEY_TRUSTED_PROXIES"), "10.0.0.0/8");
    assert_eq!(setting("PARLEY_SMS_GATEWAY_TOKEN"), "(hidden)");
    assert_eq!(setting("PARLEY_STREAM_KEEPALIVE"), "15s  (default)", "defaults are shown too");
    assert!(stdout.contains("smtps://****@localhost"), "{stdout}");
    for secret in [SMTP_PASSWORD, GATEWAY_TOKEN, METRICS_TOKEN, crate::push_peers::RELAY_SECRET] {
        assert!(!stdout.contains(secret) && !stderr.contains(secret), "{secret} was printed");
    }
    // Tested, not used: nothing was sent, the probe file is gone.
    // The check has exited: what it sent has arrived.
    assert!(sink.drain().await.is_empty(), "no email is sent");
    let probe = gateway.next().await;
    assert_eq!(probe.body, "", "the gateway got a GET, not an SMS");
    assert_eq!(probe.header("authorization"), format!("Bearer {GATEWAY_TOKEN}"), "with its token");
    assert!(peer.refused().is_empty(), "the peer refused: {:?}", peer.refused());
    assert!(peer.delivered().is_empty(), "no push was delivered");
    assert_eq!(peer.token_requests(), 1, "FCM's token endpoint was asked once");
    assert_eq!(std::fs::read_dir(&files).unwrap().count(), 0, "the test file was removed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_failing_dependency_is_named_and_the_exit_code_says_so() {
    let dir = tempfile::tempdir().unwrap();
    // A port nothing listens on (bound, then let go).
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let gateway = Receiver::start().await;
    gateway.reply(&[Reply::Status(401)]);
    // Credentials in a URL, which a client library may quote in its error.
    let gateway_url = gateway.url.replace("http://", &format!("http://gateway:{GATEWAY_URL_PASSWORD}@"));
    let peer = Peer::start().await;
    let sink = SmtpSink::start_tls_with_login(Some(("parley", SMTP_PASSWORD))).await;
    // A file where the store's folder should be: it cannot be made.
    let blocked = dir.path().join("not-a-folder");
    std::fs::write(&blocked, "").unwrap();

    let (code, stdout, _) = output(
        // Not the app the key may push to: the peer refuses, as Apple does.
        with_apns(&mut parley(dir.path()), &peer, "com.example.other")
            .arg("check")
            // A password with characters a URL should have had encoded.
            .env("PARLEY_DATABASE_URL", format!("postgres://parley:se/cr#et@127.0.0.1:{closed}/parley"))
            .env("PARLEY_SMTP_URL", format!("smtps://parley:not-the-password@localhost:{}", sink.port))
            .env("PARLEY_MAIL_FROM", "support@example.com")
            .env("PARLEY_SMS_GATEWAY_URL", &gateway_url)
            .env("PARLEY_SMS_GATEWAY_TOKEN", GATEWAY_TOKEN)
            .env("PARLEY_FILES_URL", format!("file://{}", blocked.join("files").display())),
    )
    .await;

    assert_eq!(code, 1, "{stdout}");
    for name in ["database", "mail server", "SMS gateway", "file store", "push: APNs"] {
        assert!(failed(&stdout, name), "{name} did not fail:\n{stdout}");
    }
    assert!(line(&stdout, "mail server").contains("535"), "the server's refusal of the sign-in is shown:\n{stdout}");
    assert!(line(&stdout, "SMS gateway").contains("refused the token (HTTP 401)"), "{stdout}");
    assert!(line(&stdout, "push: APNs").contains("HTTP 403"), "{stdout}");
    assert!(stdout.contains("5 checks failed."), "{stdout}");
    for credential in [GATEWAY_URL_PASSWORD, GATEWAY_TOKEN, "not-the-password", "se/cr#et"] {
        assert!(!stdout.contains(credential), "{credential} was printed:\n{stdout}");
    }
}

/// A check of a first installation makes nothing: the SQLite file and the
/// files folder the first start makes are still not there afterwards
/// (their folder is only tried for writing); and a self-hoster without
/// mail, SMS or push sees them as not set up, which is no failure.
#[tokio::test]
async fn a_check_changes_nothing_and_what_is_not_set_up_is_no_failure() {
    let dir = tempfile::tempdir().unwrap();
    let (code, stdout, _) = output(parley(dir.path()).arg("check")).await;
    assert_eq!(code, 0, "{stdout}");
    assert!(passed(&stdout, "database") && line(&stdout, "database").contains("not made yet"), "{stdout}");
    assert!(passed(&stdout, "file store") && line(&stdout, "file store").contains("not made yet"), "{stdout}");
    for name in ["mail server", "SMS gateway", "push"] {
        assert!(line(&stdout, name).trim_start().starts_with("- "), "{name}:\n{stdout}");
    }
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "the check made something");
}

/// What the first start could not make fails the check: a database and
/// a files folder under a file, where no folder can be.
#[tokio::test]
async fn places_the_first_start_could_not_make_fail_the_check() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("blocker"), "").unwrap();
    let (code, stdout, _) = output(
        parley(dir.path())
            .arg("check")
            .env("PARLEY_DATABASE_URL", "sqlite://blocker/parley.sqlite3")
            .env("PARLEY_FILES_URL", "file://blocker/files"),
    )
    .await;
    assert_eq!(code, 1, "{stdout}");
    assert!(failed(&stdout, "database") && line(&stdout, "database").contains("not a folder"), "{stdout}");
    assert!(failed(&stdout, "file store") && line(&stdout, "file store").contains("not a folder"), "{stdout}");
}

/// A database migrated by a newer build is refused: running this one on
/// it would not know its schema.
#[tokio::test]
async fn a_database_newer_than_this_build_fails_the_check() {
    let dir = tempfile::tempdir().unwrap();
    let (url, _db) = crate::helpers::fresh_database(dir.path(), "parley.sqlite3").await;
    crate::helpers::run_sql(
        &url,
        if url.starts_with("postgres") { "INSERT INTO parley_migrations (version) VALUES (9999)" } else { "PRAGMA user_version = 9999" },
    )
    .await;
    let (code, stdout, _) = output(parley(dir.path()).arg("check").env("PARLEY_DATABASE_URL", &url)).await;
    assert_eq!(code, 1, "{stdout}");
    assert!(failed(&stdout, "database") && line(&stdout, "database").contains("newer than this build"), "{stdout}");
}

/// A gateway that answers with a redirect fails: a send does not follow
/// one, so every SMS would fail.
#[tokio::test]
async fn a_gateway_that_redirects_fails_the_check() {
    let dir = tempfile::tempdir().unwrap();
    let gateway = Receiver::start().await;
    gateway.reply(&[Reply::WithHeader(301, "location", "https://sms.example.com/v2/send")]);
    let (code, stdout, _) = output(parley(dir.path()).arg("check").env("PARLEY_SMS_GATEWAY_URL", &gateway.url)).await;
    assert_eq!(code, 1, "{stdout}");
    assert!(failed(&stdout, "SMS gateway") && line(&stdout, "SMS gateway").contains("redirects (HTTP 301)"), "{stdout}");
}

/// A line of the settings file that is not `NAME=value` stops the command,
/// naming the line: left out, its setting would silently be the default.
#[tokio::test]
async fn a_settings_line_that_is_not_a_setting_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("parley.env");
    std::fs::write(&file, "# settings\nPARLEY_PUBLIC_URL='https://chat.example.com'\nPARLEY_DATABASE_URL: postgres://db/parley\n").unwrap();
    let (code, _, stderr) = output(parley(dir.path()).arg("--config").arg(&file).arg("check")).await;
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("line 3 is not NAME=value"), "{stderr}");

    // Quoted values are taken as a shell or systemd takes them.
    std::fs::write(&file, "\u{feff}; as systemd takes it\nPARLEY_PUBLIC_URL='https://chat.example.com'\nexport PARLEY_INSTANCE=\"a\"\n")
        .unwrap();
    let (code, stdout, stderr) = output(parley(dir.path()).arg("--config").arg(&file).arg("check")).await;
    assert_eq!(code, 0, "{stdout}{stderr}");
    let public = stdout.lines().find(|l| l.trim_start().starts_with("PARLEY_PUBLIC_URL ")).expect("PARLEY_PUBLIC_URL");
    assert!(public.trim_end().ends_with(" https://chat.example.com"), "{public}");
    let instance = stdout.lines().find(|l| l.trim_start().starts_with("PARLEY_INSTANCE ")).expect("PARLEY_INSTANCE");
    assert!(instance.trim_end().ends_with(" a"), "{instance}");
}

/// On PostgreSQL, a role that could not apply the pending migrations (no
/// CREATE on its schema, PostgreSQL 15's default for a role that does not
/// own the database) fails the check before the first start would.
#[tokio::test]
async fn a_database_role_that_cannot_migrate_fails_the_check() {
    let dir = tempfile::tempdir().unwrap();
    let (url, _db) = crate::helpers::fresh_database(dir.path(), "parley.sqlite3").await;
    if !url.starts_with("postgres") {
        return;
    }
    let role = format!("parley_check_{}", std::process::id());
    crate::helpers::run_sql(
        &url,
        &format!(
            "DELETE FROM parley_migrations WHERE version = (SELECT MAX(version) FROM parley_migrations); \
             DROP ROLE IF EXISTS {role}; CREATE ROLE {role} LOGIN; GRANT SELECT ON parley_migrations TO {role}"
        ),
    )
    .await;
    let as_role = url.replacen("postgres://postgres@", &format!("postgres://{role}@"), 1);
    assert_ne!(as_role, url, "the suite's URL names its user: {url}");
    let check = || async { output(parley(dir.path()).arg("check").env("PARLEY_DATABASE_URL", &as_role)).await };
    let (code, without_create, _) = check().await;
    // With CREATE, the tables a migration changes are still another's.
    crate::helpers::run_sql(&url, &format!("GRANT CREATE ON SCHEMA public TO {role}")).await;
    let (code_with_create, with_create, _) = check().await;
    crate::helpers::run_sql(
        &url,
        &format!("REVOKE ALL ON SCHEMA public FROM {role}; REVOKE ALL ON parley_migrations FROM {role}; DROP ROLE {role}"),
    )
    .await;
    assert_eq!(code, 1, "{without_create}");
    assert!(line(&without_create, "database").contains("cannot create tables"), "{without_create}");
    assert_eq!(code_with_create, 1, "{with_create}");
    assert!(line(&with_create, "database").contains("belong to another role"), "{with_create}");
}

/// An empty file (`touch`) is a database the first start fills; a link to
/// a database in a folder that cannot be written fails, since SQLite
/// writes its journal beside the file the link names.
#[tokio::test]
async fn an_empty_database_file_passes_and_a_link_into_a_folder_that_cannot_be_written_fails() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("empty.sqlite3"), "").unwrap();
    let (code, stdout, _) = output(parley(dir.path()).arg("check").env("PARLEY_DATABASE_URL", "sqlite://empty.sqlite3")).await;
    assert_eq!(code, 0, "{stdout}");
    assert!(passed(&stdout, "database"), "{stdout}");
    // A folder that cannot be written: /proc's, through a link. (As root,
    // permissions would not stop the check, so the test uses a place no
    // one can write.)
    std::os::unix::fs::symlink("/proc/self/status", dir.path().join("linked.sqlite3")).unwrap();
    let (code, stdout, _) = output(parley(dir.path()).arg("check").env("PARLEY_DATABASE_URL", "sqlite://linked.sqlite3")).await;
    assert_eq!(code, 1, "{stdout}");
    assert!(failed(&stdout, "database"), "{stdout}");
}
