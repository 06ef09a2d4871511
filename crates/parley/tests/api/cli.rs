//! The `parley` binary as an operator runs it: start-up errors, the tenant
//! command, migrations, SIGTERM, and a kill during writes. The tests that
//! stop and restart a server keep its (demo) data on the backend the suite
//! runs on, so a kill and a SIGTERM are tried against PostgreSQL too.

use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::Mutex;

pub(crate) const BIN: &str = env!("CARGO_BIN_EXE_parley");

pub(crate) fn parley(dir: &Path) -> Command {
    command(BIN, dir)
}

/// `program` in `dir` with only the variables a test sets (and `PATH`).
pub(crate) fn command(program: &str, dir: &Path) -> Command {
    let mut cmd = Command::new(program);
    cmd.current_dir(dir)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("PARLEY_LISTEN", "127.0.0.1:0")
        .env("PARLEY_RATE_LIMITS", "off")
        .env("PARLEY_LOG", "warn")
        .stdin(Stdio::null())
        .kill_on_drop(true);
    cmd
}

pub(crate) async fn output(cmd: &mut Command) -> (i32, String, String) {
    let out = cmd.output().await.expect("run parley");
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

/// Starts a server process with `env` and returns it with its base URL.
pub(crate) async fn start_with(dir: &Path, command: &str, env: &[(&str, &str)]) -> (Child, String) {
    spawn_server(parley(dir).envs(env.iter().copied()).arg(command)).await
}

/// Spawns a command that runs a server and waits until it listens.
pub(crate) async fn spawn_server(cmd: &mut Command) -> (Child, String) {
    let mut child = cmd.stdout(Stdio::piped()).stderr(Stdio::null()).spawn().expect("spawn parley");
    let stdout = child.stdout.take().expect("stdout");
    let mut lines = BufReader::new(stdout).lines();
    let base = tokio::time::timeout(Duration::from_secs(30), async {
        while let Ok(Some(line)) = lines.next_line().await {
            if let Some(url) = line.strip_prefix("Parley listening on ") {
                return url.trim().to_owned();
            }
        }
        panic!("parley exited before listening")
    })
    .await
    .expect("parley starts within 30 s");
    // Keep draining stdout so the child never blocks on a full pipe.
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    (child, base)
}

#[tokio::test]
async fn a_bad_variable_stops_start_up_and_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.p8").display().to_string();
    for (var, value) in [
        ("PARLEY_LISTEN", "nowhere"),
        ("PARLEY_AUTO_CLOSE_AFTER", "3 days"),
        ("PARLEY_DATABASE_URL", "mysql://db"),
        // Push credentials that cannot be read stop the start too.
        ("PARLEY_APNS_KEY_FILE", missing.as_str()),
        ("PARLEY_FCM_SERVICE_ACCOUNT_FILE", missing.as_str()),
        ("PARLEY_EXTRA_CA_FILE", missing.as_str()),
    ] {
        let (code, _, stderr) = output(parley(dir.path()).env(var, value).arg("serve")).await;
        assert_eq!(code, 2, "{var}: {stderr}");
        assert!(stderr.contains(var), "{var} named in: {stderr}");
    }
}

#[tokio::test]
async fn tenant_create_bootstraps_a_tenant_once() {
    let dir = tempfile::tempdir().unwrap();
    let create = |slug: &str, email: &str, password: &str| {
        let mut cmd = parley(dir.path());
        cmd.args(["tenant", "create", "--slug", slug, "--name", "Acme", "--admin-email", email, "--admin-password", password]);
        cmd
    };
    let (code, stdout, stderr) = output(&mut create("acme", "ann@acme.example", "a long password")).await;
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("Created tenant acme"), "{stdout}");
    assert!(!stdout.contains("a long password") && !stderr.contains("a long password"), "the password is never printed");
    assert!(dir.path().join("parley-data/parley.sqlite3").exists(), "the default database lives under ./parley-data");

    let (code, _, stderr) = output(&mut create("acme", "bob@acme.example", "a long password")).await;
    assert_eq!(code, 1);
    assert!(stderr.contains("already exists"), "{stderr}");

    let (code, _, stderr) = output(&mut create("Bad Slug!", "not-an-email", "short")).await;
    assert_eq!(code, 2);
    for flag in ["--slug", "--admin-email", "--admin-password"] {
        assert!(stderr.contains(flag), "{flag} named in: {stderr}");
    }
}

#[tokio::test]
async fn migrate_applies_once() {
    let dir = tempfile::tempdir().unwrap();
    let (code, stdout, _) = output(parley(dir.path()).arg("migrate")).await;
    assert_eq!(code, 0);
    // `parley` here runs on its SQLite default: every one of its migrations.
    assert!(
        stdout.contains(
            "Applied migrations: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31]"
        ),
        "{stdout}"
    );
    let (_, stdout, _) = output(parley(dir.path()).arg("migrate")).await;
    assert!(stdout.contains("up to date"), "{stdout}");
}

/// A migration the database refuses, or a server that cannot be reached,
/// is reported with the database's own reason, which is what an operator
/// acts on.
#[tokio::test]
async fn a_failed_migration_names_the_databases_reason() {
    use crate::helpers::{fresh_database, run_sql};
    let dir = tempfile::tempdir().unwrap();
    let (url, _db) = fresh_database(dir.path(), "taken.sqlite3").await;
    // A PostgreSQL test database comes migrated; empty it first.
    let empty = if url.starts_with("postgres") { "DROP SCHEMA public CASCADE; CREATE SCHEMA public;" } else { "" };
    run_sql(&url, &format!("{empty} CREATE TABLE webhook_endpoints (x INTEGER)")).await;
    let (code, _, stderr) = output(parley(dir.path()).env("PARLEY_DATABASE_URL", &url).arg("migrate")).await;
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("failed: ") && stderr.contains("webhook_endpoints") && stderr.contains("already exists"), "{stderr}");
    assert!(!stderr.contains("CREATE TABLE"), "without the migration's text: {stderr}");

    let unreachable = "postgres://postgres@127.0.0.1:9/nowhere?sslmode=disable";
    let (code, _, stderr) = output(parley(dir.path()).env("PARLEY_DATABASE_URL", unreachable).arg("migrate")).await;
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("Connection refused"), "the cause is named: {stderr}");
}

/// Reads the demo widget token and opens a conversation with it.
pub(crate) async fn open_demo_conversation(client: &reqwest::Client, base: &str) -> (String, String) {
    let creds: Value = client.get(format!("{base}/sandbox/credentials")).send().await.unwrap().json().await.unwrap();
    let token = creds["widget_token"].as_str().unwrap().to_owned();
    let opened: Value = client
        .post(format!("{base}/api/widget/conversations"))
        .json(&json!({"token": token, "visitor_uuid": "v", "message": "start", "privacy_accepted": true}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let public_id = opened["conversation"]["public_id"].as_str().unwrap().to_owned();
    (token, public_id)
}

/// Posts messages from several tasks until told to stop; returns the
/// bodies the server acknowledged with 201.
fn spawn_writers(
    client: &reqwest::Client,
    base: &str,
    token: &str,
    public_id: &str,
    acked: &Arc<Mutex<Vec<String>>>,
) -> Vec<tokio::task::JoinHandle<()>> {
    (0..6)
        .map(|w| {
            let (client, acked) = (client.clone(), acked.clone());
            let url = format!("{base}/api/widget/conversations/{public_id}/messages");
            let token = token.to_owned();
            tokio::spawn(async move {
                for n in 0..10_000 {
                    let body = format!("writer {w} message {n}");
                    match client.post(&url).json(&json!({"token": token, "body": body})).send().await {
                        Ok(res) if res.status() == StatusCode::CREATED => acked.lock().await.push(body),
                        _ => return,
                    }
                }
            })
        })
        .collect()
}

async fn all_bodies(client: &reqwest::Client, base: &str, token: &str, public_id: &str) -> Vec<String> {
    let mut bodies = Vec::new();
    let mut after = 0;
    loop {
        let url = format!("{base}/api/widget/conversations/{public_id}/messages?token={token}&after_id={after}");
        let page: Value = client.get(url).send().await.unwrap().json().await.unwrap();
        let messages = page["messages"].as_array().unwrap();
        let Some(last) = messages.last() else {
            return bodies;
        };
        after = last["id"].as_i64().unwrap();
        bodies.extend(messages.iter().map(|m| m["body"].as_str().unwrap().to_owned()));
    }
}

async fn wait_for_acks(acked: &Arc<Mutex<Vec<String>>>, n: usize) {
    tokio::time::timeout(Duration::from_secs(60), async {
        while acked.lock().await.len() < n {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("writes are acknowledged");
}

/// SIGKILL in the middle of writes: after a restart every acknowledged
/// message is there.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn acknowledged_messages_survive_a_kill() {
    let dir = tempfile::tempdir().unwrap();
    let client = crate::helpers::http_client();
    let (url, _db) = crate::helpers::fresh_database(dir.path(), "demo.sqlite3").await;
    let env = [("PARLEY_DEMO_DATABASE_URL", url.as_str())];
    let (mut child, base) = start_with(dir.path(), "demo", &env).await;
    let (token, public_id) = open_demo_conversation(&client, &base).await;

    let acked = Arc::new(Mutex::new(Vec::new()));
    let writers = spawn_writers(&client, &base, &token, &public_id, &acked);
    wait_for_acks(&acked, 300).await;
    child.kill().await.expect("SIGKILL");
    for w in writers {
        let _ = w.await;
    }
    let acked = acked.lock().await.clone();

    let (_child, base) = start_with(dir.path(), "demo", &env).await;
    let stored = all_bodies(&client, &base, &token, &public_id).await;
    let missing: Vec<&String> = acked.iter().filter(|b| !stored.contains(b)).collect();
    assert!(missing.is_empty(), "{} of {} acknowledged messages lost: {:?}", missing.len(), acked.len(), &missing[..missing.len().min(5)]);
}

/// SIGTERM while requests are in flight: the process finishes them, exits
/// cleanly, and everything it acknowledged is stored.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sigterm_drains_and_exits_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let client = crate::helpers::http_client();
    let (url, _db) = crate::helpers::fresh_database(dir.path(), "demo.sqlite3").await;
    let env = [("PARLEY_DEMO_DATABASE_URL", url.as_str())];
    let (mut child, base) = start_with(dir.path(), "demo", &env).await;
    let (token, public_id) = open_demo_conversation(&client, &base).await;
    let acked = Arc::new(Mutex::new(Vec::new()));
    let writers = spawn_writers(&client, &base, &token, &public_id, &acked);
    wait_for_acks(&acked, 100).await;

    let pid = child.id().expect("pid").to_string();
    let killed = Command::new("kill").args(["-TERM", &pid]).status().await.unwrap();
    assert!(killed.success());
    let status = tokio::time::timeout(Duration::from_secs(30), child.wait()).await.expect("exits within 30 s").unwrap();
    assert!(status.success(), "clean exit: {status:?}");
    for w in writers {
        let _ = w.await;
    }
    let acked = acked.lock().await.clone();

    let (_child, base) = start_with(dir.path(), "demo", &env).await;
    let stored = all_bodies(&client, &base, &token, &public_id).await;
    assert!(acked.iter().all(|b| stored.contains(b)), "every acknowledged message is stored");
}

/// Settings that make a delivery stuck with a dead process due again soon.
fn short_leases(database_url: &str) -> [(&'static str, &str); 4] {
    [
        ("PARLEY_WEBHOOK_LEASE", "2s"),
        ("PARLEY_WEBHOOK_TIMEOUT", "1s"),
        ("PARLEY_WEBHOOK_POLL_INTERVAL", "50ms"),
        ("PARLEY_DEMO_DATABASE_URL", database_url),
    ]
}

/// The demo's admin bearer token.
async fn demo_admin(client: &reqwest::Client, base: &str) -> String {
    let creds: Value = client.get(format!("{base}/sandbox/credentials")).send().await.unwrap().json().await.unwrap();
    creds["mobile_token"].as_str().unwrap().to_owned()
}

/// Registers a webhook to `url` for `event`; returns the webhook's id.
async fn register_hook(client: &reqwest::Client, base: &str, admin: &str, url: &str, event: &str) -> Value {
    let res = client
        .post(format!("{base}/api/v1/admin/webhooks"))
        .bearer_auth(admin)
        .json(&json!({"url": url, "events": [event]}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::CREATED);
    let hook: Value = res.json().await.unwrap();
    hook["webhook"]["id"].clone()
}

/// The webhook's delivery log once its latest delivery is delivered.
async fn once_delivered(client: &reqwest::Client, base: &str, admin: &str, hook: &Value) -> Value {
    let url = format!("{base}/api/v1/admin/webhooks/{hook}/deliveries");
    crate::helpers::eventually(|| {
        let (client, url, admin) = (client.clone(), url.clone(), admin.to_owned());
        async move {
            let body: Value = client.get(&url).bearer_auth(&admin).send().await.ok()?.json().await.ok()?;
            (body["deliveries"][0]["status"] == "delivered").then_some(body)
        }
    })
    .await
}

/// A webhook delivery in flight when the process is killed is made again,
/// with the same event id, once its lease runs out after a restart.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_delivery_in_flight_when_the_process_dies_is_made_again() {
    let dir = tempfile::tempdir().unwrap();
    let client = crate::helpers::http_client();
    let (url, _db) = crate::helpers::fresh_database(dir.path(), "demo.sqlite3").await;
    let env = short_leases(&url);
    let receiver = crate::receiver::Receiver::start().await;
    receiver.reply(&[crate::receiver::Reply::Hang]);

    let (mut child, base) = start_with(dir.path(), "demo", &env).await;
    let hook = register_hook(&client, &base, &demo_admin(&client, &base).await, &receiver.url, "conversation.created").await;
    open_demo_conversation(&client, &base).await;
    let first = receiver.next().await;
    child.kill().await.expect("SIGKILL while the delivery hangs");

    let (_child, base) = start_with(dir.path(), "demo", &env).await;
    let again = receiver.next().await;
    assert_eq!(again.json()["event_id"], first.json()["event_id"]);
    assert_eq!(again.body, first.body);

    let deliveries = once_delivered(&client, &base, &demo_admin(&client, &base).await, &hook).await;
    assert_eq!(deliveries["meta"]["total"], 1, "one delivery, made again: none lost, none doubled");
}

/// Two instances on one PostgreSQL database: the one making a delivery is
/// killed mid-attempt, and the other makes it again once the lease runs
/// out, with the same event id: at least once, and still one delivery.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_delivery_in_flight_when_an_instance_dies_is_made_by_another() {
    if crate::helpers::backend() != "postgres" {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let client = crate::helpers::http_client();
    let (url, _db) = crate::helpers::fresh_database(dir.path(), "demo.sqlite3").await;
    let env = short_leases(&url);
    let receiver = crate::receiver::Receiver::start().await;
    receiver.reply(&[crate::receiver::Reply::Hang]);

    let (mut first_instance, first_base) = start_with(dir.path(), "demo", &env).await;
    let admin = demo_admin(&client, &first_base).await;
    let hook = register_hook(&client, &first_base, &admin, &receiver.url, "conversation.created").await;
    open_demo_conversation(&client, &first_base).await;
    // Only the first instance runs yet, so it is the one attempting.
    let first = receiver.next().await;
    let (_second_instance, second_base) = start_with(dir.path(), "demo", &env).await;
    first_instance.kill().await.expect("SIGKILL while the delivery hangs");

    let again = receiver.next().await;
    assert_eq!(again.json()["event_id"], first.json()["event_id"]);
    let deliveries = once_delivered(&client, &second_base, &admin, &hook).await;
    assert_eq!(deliveries["meta"]["total"], 1, "one delivery, made again by the other instance");
}

/// Many deliveries queued to an endpoint that accepts connections and never
/// answers: SIGTERM still ends the process within its shutdown time, the
/// attempts out are abandoned to their leases, and every acknowledged write
/// is stored.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn shutdown_is_bounded_when_an_endpoint_stops_answering() {
    let dir = tempfile::tempdir().unwrap();
    let client = crate::helpers::http_client();
    let black_hole = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let hole_url = format!("http://{}/hook", black_hole.local_addr().unwrap());
    let (accepted_tx, mut accepted) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = black_hole.accept().await {
            held.push(socket);
            let _ = accepted_tx.send(());
        }
    });

    let (database, _db) = crate::helpers::fresh_database(dir.path(), "demo.sqlite3").await;
    let env = [
        ("PARLEY_SHUTDOWN_TIMEOUT", "2s"),
        ("PARLEY_WEBHOOK_TIMEOUT", "30s"),
        ("PARLEY_WEBHOOK_LEASE", "60s"),
        ("PARLEY_DEMO_DATABASE_URL", database.as_str()),
    ];
    let (mut child, base) = start_with(dir.path(), "demo", &env).await;
    register_hook(&client, &base, &demo_admin(&client, &base).await, &hole_url, "message.created").await;
    let (token, public_id) = open_demo_conversation(&client, &base).await;
    let url = format!("{base}/api/widget/conversations/{public_id}/messages");
    for n in 0..40 {
        let res = client.post(&url).json(&json!({"token": token, "body": format!("queued {n}")})).send().await.unwrap();
        assert_eq!(res.status(), StatusCode::CREATED);
    }
    tokio::time::timeout(Duration::from_secs(10), accepted.recv()).await.expect("attempts are under way").unwrap();

    let pid = child.id().expect("pid").to_string();
    assert!(Command::new("kill").args(["-TERM", &pid]).status().await.unwrap().success());
    let status = tokio::time::timeout(Duration::from_secs(10), child.wait())
        .await
        .expect("exits within its 2 s shutdown time (and a margin), not after the 30 s attempts")
        .unwrap();
    assert!(status.success(), "clean exit: {status:?}");

    let (_child, base) = start_with(dir.path(), "demo", &env).await;
    let stored = all_bodies(&client, &base, &token, &public_id).await;
    assert!((0..40).all(|n| stored.contains(&format!("queued {n}"))), "every acknowledged message is stored");
}
