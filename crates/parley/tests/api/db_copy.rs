//! `parley db copy` as an operator runs it: the demo installation, with
//! some traffic, copied from SQLite to PostgreSQL and back (and SQLite to
//! SQLite), compared row by row, and served again from the copy; and the
//! copies it must refuse or undo.

use std::collections::BTreeMap;
use std::path::Path;

use reqwest::{Method, StatusCode};
use serde_json::json;

use crate::cli::{output, parley};
use crate::helpers::*;

/// The demo installation in an SQLite file, after some traffic, with what
/// a test needs to use it again after a copy.
struct Demo {
    url: String,
    widget_token: String,
    mobile_token: String,
    /// An operator's email and password.
    operator: (String, String),
    public_id: String,
}

async fn demo(dir: &Path) -> Demo {
    let url = format!("sqlite://{}/demo.sqlite3", dir.display());
    // Limits on, so a failed sign-in is counted in the database.
    let app = TestApp::with().demo().var("PARLEY_DATABASE_URL", &url).var("PARLEY_RATE_LIMITS", "true").start().await;
    let (_, creds) = app.get("/sandbox/credentials").await;
    let widget_token = creds["widget_token"].as_str().expect("widget token").to_owned();
    let mobile_token = creds["mobile_token"].as_str().expect("mobile token").to_owned();
    let operator = &creds["operators"][1];
    let operator = (operator["email"].as_str().expect("email").to_owned(), operator["password"].as_str().expect("password").to_owned());
    let (status, _) = app.post("/api/mobile/login", json!({"email": operator.0, "password": "not the password"})).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let mut public_id = String::new();
    for v in 0..3 {
        public_id = app.open_conversation("/api", &widget_token, &format!("visitor-{v}"), "hello, with ünïcode ✓").await;
        for n in 0..4 {
            let (status, _) = app.post_message("/api", &widget_token, &public_id, &format!("message {n}")).await;
            assert_eq!(status, StatusCode::CREATED);
        }
    }
    let (_, list) = app.authed(Method::GET, "/api/mobile/conversations", &mobile_token, None).await;
    let id = list["conversations"][0]["id"].as_i64().expect("a conversation");
    let (status, _) =
        app.authed(Method::POST, &format!("/api/mobile/conversations/{id}/messages"), &mobile_token, Some(json!({"body": "hi"}))).await;
    assert_eq!(status, StatusCode::OK);
    // A file, sent by the operator (its object stays where it is: the
    // copy moves rows, and says so).
    let boundary = "copyBoundary";
    let mut form = format!(
        "--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"notes.txt\"\r\n\r\nsome notes\r\n--{boundary}--\r\n"
    );
    let response = app
        .client
        .post(app.url(&format!("/api/mobile/conversations/{id}/attachments")))
        .bearer_auth(&mobile_token)
        .header("content-type", format!("multipart/form-data; boundary={boundary}"))
        .body(std::mem::take(&mut form))
        .send()
        .await
        .expect("upload");
    assert_eq!(response.status(), StatusCode::CREATED);
    let uploaded: serde_json::Value = response.json().await.expect("json");
    let reply = json!({"body": "the notes", "attachment_ids": [uploaded["attachment"]["id"]]});
    let (status, _) = app.authed(Method::POST, &format!("/api/mobile/conversations/{id}/messages"), &mobile_token, Some(reply)).await;
    assert_eq!(status, StatusCode::OK);
    let canned = json!({"shortcut": "thanks", "body": "Thank you"});
    assert_eq!(app.authed(Method::POST, "/api/admin/canned-responses", &mobile_token, Some(canned)).await.0, StatusCode::CREATED);
    // An invited operator: its set-password link.
    let invited = json!({"email": "invited@example.com", "name": "Invited", "role": "admin"});
    assert_eq!(app.authed(Method::POST, "/api/admin/operators/invite", &mobile_token, Some(invited)).await.0, StatusCode::CREATED);
    // A read marker and a device (its push key is bytes).
    let (_, messages) = app.authed(Method::GET, &format!("/api/mobile/conversations/{id}/messages"), &mobile_token, None).await;
    let first = messages["messages"][0]["id"].clone();
    let (status, _) =
        app.authed(Method::POST, &format!("/api/mobile/conversations/{id}/read"), &mobile_token, Some(json!({"message_id": first}))).await;
    assert_eq!(status, StatusCode::OK);
    let device = json!({"platform": "ios", "push_token": "740f4707bebcf74f9b7c25d48e3358945f6aa01da5ddb387462c7eaf61bb78ad"});
    let (status, _) = app.authed(Method::POST, "/api/mobile/devices", &mobile_token, Some(device)).await;
    assert_eq!(status, StatusCode::CREATED);
    // A push for that device (the demo has no provider: it is dropped, and
    // its row kept for the spacing).
    let (status, _) = app.post_message("/api", &widget_token, &public_id, "one for the phone").await;
    assert_eq!(status, StatusCode::CREATED);
    app.authed(Method::POST, &format!("/api/mobile/conversations/{id}/close"), &mobile_token, None).await;
    let path = format!("/api/widget/conversations/{public_id}/verification/start");
    let (status, _) = app.post(&path, json!({"token": widget_token, "method": "email_otp", "target": "me@example.com"})).await;
    assert_eq!(status, StatusCode::ACCEPTED);
    let test = json!({"channel": "sms", "to": "+14155550123"});
    let (status, _) = app.authed(Method::POST, "/api/admin/verification/test", &mobile_token, Some(test)).await;
    assert_eq!(status, StatusCode::OK);
    // A visitor with an address: an answer waiting to be emailed, a
    // transcript's thread, and a widget stream's presence.
    let visitor = json!({"token": widget_token, "uuid": "visitor-mail", "email": "mail@example.com"});
    assert_eq!(app.post("/api/widget/visitors", visitor).await.0, StatusCode::CREATED);
    let mailed = app.open_conversation("/api", &widget_token, "visitor-mail", "write to me").await;
    let (_, list) = app.authed(Method::GET, "/api/mobile/conversations", &mobile_token, None).await;
    let mail_id = list["conversations"][0]["id"].as_i64().expect("a conversation");
    let path = format!("/api/mobile/conversations/{mail_id}/messages");
    assert_eq!(app.authed(Method::POST, &path, &mobile_token, Some(json!({"body": "an answer"}))).await.0, StatusCode::OK);
    // The transcript goes to a proven address: the code from the demo's outbox.
    let path = format!("/api/widget/conversations/{mailed}/verification/start");
    let (status, started) = app.post(&path, json!({"token": widget_token, "method": "email_otp"})).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{started}");
    let (_, outbox) = app.get("/sandbox/outbox").await;
    let body = outbox["messages"].as_array().expect("outbox").iter().find(|m| m["to"] == "mail@example.com").expect("the code")["body"]
        .as_str()
        .expect("body")
        .to_owned();
    let at = body.find("code is ").expect("a code") + 8;
    let confirm = json!({"token": widget_token, "challenge_id": started["challenge"]["id"], "code": &body[at..at + 6]});
    let path = format!("/api/widget/conversations/{mailed}/verification/confirm");
    assert_eq!(app.post(&path, confirm).await.0, StatusCode::OK);
    let path = format!("/api/widget/conversations/{mailed}/transcript");
    assert_eq!(app.post(&path, json!({"token": widget_token})).await.0, StatusCode::ACCEPTED);
    let stream = crate::sse::open_ok(&app, &format!("/api/widget/conversations/{mailed}/events?token={widget_token}"), &[]).await;
    drop(stream);
    // Webhook deliveries to the demo's own receiver, and their attempts.
    eventually(|| async {
        let (_, body) = app.get("/sandbox/deliveries").await;
        body["deliveries"].as_array().is_some_and(|d| d.iter().any(|d| d["status"] == "delivered")).then_some(())
    })
    .await;
    let db = app.db.clone();
    app.stop().await;
    db.close().await;
    // A file whose removal the store refused: the queue is copied too.
    run_sql(&url, "INSERT INTO file_removals (tenant_id, storage_key, created_at, next_attempt_at) SELECT id, 'refused-key', 0, 0 FROM tenants LIMIT 1").await;
    let empty: Vec<String> = dump(&url).into_iter().filter(|(_, rows)| rows.is_empty()).map(|(t, _)| t).collect();
    assert!(empty.is_empty(), "every table has rows to copy, but not {empty:?}");
    Demo { url, widget_token, mobile_token, operator, public_id }
}

async fn copy(dir: &Path, from: &str, to: &str) -> (i32, String, String) {
    output(parley(dir).args(["db", "copy", "--from", from, "--to", to])).await
}

/// The inbox's totals as `conversation_counts` holds them: each database
/// records them as rows of +1 and -1 that its sweeper folds, so the rows
/// differ between a source and its copy, and their sums per group do not.
const COUNT_GROUPS: &str = "SELECT tenant_id, site_id, status, assignee_id, SUM(n) AS n FROM conversation_counts
     GROUP BY tenant_id, site_id, status, assignee_id HAVING SUM(n) <> 0";

/// Every table of an SQLite file (its sequences too), each row's values
/// by column name, rows sorted: two files compare equal when they hold
/// the same data, whatever order the rows were written in.
fn dump(url: &str) -> BTreeMap<String, Vec<BTreeMap<String, String>>> {
    let path = url.strip_prefix("sqlite://").expect("an SQLite URL");
    let conn = rusqlite::Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY).expect("open");
    // The search index is each database's own (FTS5 here), built from the
    // messages: not data to copy.
    let mut tables = conn
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'messages_fts%' AND name NOT LIKE 'visitors_fts%'")
        .unwrap();
    let names: Vec<String> = tables.query_map([], |r| r.get(0)).unwrap().collect::<Result<_, _>>().unwrap();
    names
        .into_iter()
        .map(|table| {
            let sql = if table == "conversation_counts" { COUNT_GROUPS.to_owned() } else { format!("SELECT * FROM \"{table}\"") };
            let mut stmt = conn.prepare(&sql).unwrap();
            let columns: Vec<String> = stmt.column_names().map(str::to_owned).collect();
            let mut rows: Vec<BTreeMap<String, String>> = stmt
                .query_map([], |r| {
                    Ok(columns
                        .iter()
                        .enumerate()
                        .map(|(i, c)| (c.clone(), format!("{:?}", r.get::<_, rusqlite::types::Value>(i).unwrap())))
                        .collect())
                })
                .unwrap()
                .collect::<Result<_, _>>()
                .unwrap();
            rows.sort();
            (table, rows)
        })
        .collect()
}

/// Rows per table (bookkeeping aside) of the database at `url`.
async fn counts(url: &str) -> BTreeMap<String, i64> {
    if url.starts_with("sqlite://") {
        return dump(url).into_iter().filter(|(t, _)| t != "sqlite_sequence").map(|(t, rows)| (t, rows.len() as i64)).collect();
    }
    let url = url.to_owned();
    tokio::task::spawn_blocking(move || {
        let mut client = postgres::Client::connect(&url, postgres::NoTls).expect("connect");
        let tables: Vec<String> = client
            .query("SELECT table_name::text FROM information_schema.tables WHERE table_schema = 'public' AND table_name <> 'parley_migrations'", &[])
            .unwrap()
            .iter()
            .map(|r| r.get(0))
            .collect();
        tables
            .into_iter()
            .map(|t| {
                let rows = if t == "conversation_counts" { format!("({COUNT_GROUPS}) AS g") } else { format!("\"{t}\"") };
                (t, client.query_one(&format!("SELECT COUNT(*) FROM {rows}"), &[]).unwrap().get(0))
            })
            .collect()
    })
    .await
    .expect("counted")
}

fn largest_message_id(url: &str) -> i64 {
    let path = url.strip_prefix("sqlite://").expect("an SQLite URL");
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.query_row("SELECT MAX(id) FROM messages", [], |r| r.get(0)).unwrap()
}

/// Serves the copy at `url`: the demo's operator logs in, its bearer token
/// still works, and a new message gets an id past every copied one.
async fn serve_the_copy(url: &str, demo: &Demo, largest_id: i64) {
    let app = TestApp::with().var("PARLEY_DATABASE_URL", url).start().await;
    let (email, password) = &demo.operator;
    let (status, body) = app.post("/api/v1/mobile/login", json!({"email": email, "password": password})).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, _) = app.authed(Method::GET, "/api/v1/mobile/conversations", &demo.mobile_token, None).await;
    assert_eq!(status, StatusCode::OK);
    let (status, body) = app.post_message("/api", &demo.widget_token, &demo.public_id, "after the copy").await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert!(body["message"]["id"].as_i64().expect("id") > largest_id, "{body} after {largest_id}");
    app.stop().await;
}

/// SQLite to PostgreSQL to SQLite: the last file holds exactly the first
/// one's rows, and PostgreSQL serves the installation. Runs when the
/// suite runs on PostgreSQL.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_to_postgres_and_back_keeps_every_row() {
    let Some(server) = parley_storage::testing::postgres_url() else { return };
    let dir = tempfile::tempdir().unwrap();
    let demo = demo(dir.path()).await;
    let pg = tokio::task::spawn_blocking(move || parley_storage::testing::fresh_postgres(&server)).await.unwrap().expect("database");
    let (code, stdout, stderr) = copy(dir.path(), &demo.url, &pg.url).await;
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("Copied") && stdout.contains("messages"), "{stdout}");
    assert!(stdout.contains("attachments' rows were copied, not their files"), "says how to copy the files: {stdout}");

    let back = format!("sqlite://{}/back/parley.sqlite3", dir.path().display());
    let (code, _, stderr) = copy(dir.path(), &pg.url, &back).await;
    assert_eq!(code, 0, "{stderr}");
    let original = dump(&demo.url);
    assert_eq!(original, dump(&back));
    assert_eq!(counts(&pg.url).await, counts(&demo.url).await);

    serve_the_copy(&pg.url, &demo, largest_message_id(&demo.url)).await;
}

/// SQLite to SQLite, on both passes of the suite.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_to_sqlite_keeps_every_row() {
    let dir = tempfile::tempdir().unwrap();
    let demo = demo(dir.path()).await;
    let target = format!("sqlite://{}/copy.sqlite3", dir.path().display());
    let (code, stdout, stderr) = copy(dir.path(), &demo.url, &target).await;
    assert_eq!(code, 0, "{stderr}");
    // The inbox's totals are the target's own (see `COUNT_GROUPS`).
    let total: i64 = counts(&demo.url).await.into_iter().filter(|(t, _)| t != "conversation_counts").map(|(_, n)| n).sum();
    assert!(stdout.contains(&format!("Copied {total} rows")), "{stdout}");
    assert_eq!(dump(&demo.url), dump(&target));
    serve_the_copy(&target, &demo, largest_message_id(&demo.url)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_target_with_rows_a_missing_source_and_bad_urls_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let demo = demo(dir.path()).await;
    let (target, _db) = fresh_database(dir.path(), "target.sqlite3").await;
    let (code, _, stderr) = copy(dir.path(), &demo.url, &target).await;
    assert_eq!(code, 0, "{stderr}");
    let before = counts(&target).await;
    let (code, _, stderr) = copy(dir.path(), &demo.url, &target).await;
    assert_eq!(code, 1);
    assert!(stderr.contains("the target database is not empty: table"), "{stderr}");
    assert_eq!(counts(&target).await, before, "the target is unchanged");

    let new = dir.path().join("new.sqlite3");
    let to = format!("sqlite://{}", new.display());
    let missing = format!("sqlite://{}/missing.sqlite3", dir.path().display());
    let (code, _, stderr) = copy(dir.path(), &missing, &to).await;
    assert_eq!(code, 1);
    assert!(stderr.contains("the source database") && stderr.contains("does not exist"), "{stderr}");
    let (code, _, stderr) = copy(dir.path(), "postgres://parley:secret@127.0.0.1:9/nowhere?sslmode=disable", &to).await;
    assert_eq!(code, 1);
    assert!(stderr.contains("the source database cannot be used"), "{stderr}");
    assert!(!stderr.contains("secret"), "the password is never shown: {stderr}");
    assert!(!new.exists(), "no target file is left behind");

    for (from, to, side) in [("mysql://root:secret@db/x", to.as_str(), "source"), (demo.url.as_str(), "http://example.com/db", "target")] {
        let (code, _, stderr) = copy(dir.path(), from, to).await;
        assert_eq!(code, 2, "{stderr}");
        assert!(stderr.contains(&format!("the {side} URL")) && !stderr.contains("secret"), "{stderr}");
    }
    assert!(!new.exists());
}

/// A target that fails part-way (a trigger on a table written late)
/// keeps nothing of the copy; nor does one when the source holds a value
/// the target cannot take, and a new SQLite file is removed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failure_part_way_leaves_nothing_written() {
    let dir = tempfile::tempdir().unwrap();
    let demo = demo(dir.path()).await;
    let (target, _db) = fresh_database(dir.path(), "target.sqlite3").await;
    parley_storage::migrate(&target).await.expect("migrated");
    add_failing_trigger(&target).await;
    let (code, _, stderr) = copy(dir.path(), &demo.url, &target).await;
    assert_eq!(code, 1);
    assert!(stderr.contains("the target database failed") && stderr.contains("injected failure"), "{stderr}");
    let kept = counts(&target).await;
    assert!(kept.len() > 10 && kept.values().all(|n| *n == 0), "nothing was kept: {kept:?}");

    let path = demo.url.strip_prefix("sqlite://").unwrap();
    rusqlite::Connection::open(path)
        .unwrap()
        .execute_batch("UPDATE messages SET internal = 'maybe' WHERE id = (SELECT MAX(id) FROM messages)")
        .unwrap();
    let new = dir.path().join("new.sqlite3");
    let (code, _, stderr) = copy(dir.path(), &demo.url, &format!("sqlite://{}", new.display())).await;
    assert_eq!(code, 1);
    assert!(stderr.contains("table messages, column internal"), "{stderr}");
    for file in ["new.sqlite3", "new.sqlite3-wal", "new.sqlite3-shm"] {
        assert!(!dir.path().join(file).exists(), "{file} is removed");
    }
    // The same failure, which PostgreSQL never sees, rolls it back too.
    if let Some(server) = parley_storage::testing::postgres_url() {
        let pg = tokio::task::spawn_blocking(move || parley_storage::testing::fresh_postgres(&server)).await.unwrap().expect("database");
        let (code, _, stderr) = copy(dir.path(), &demo.url, &pg.url).await;
        assert_eq!(code, 1, "{stderr}");
        assert!(stderr.contains("table messages, column internal"), "{stderr}");
        let kept = counts(&pg.url).await;
        assert!(kept.len() > 10 && kept.values().all(|n| *n == 0), "nothing was kept: {kept:?}");
    }
}

async fn add_failing_trigger(url: &str) {
    let sql = if url.starts_with("sqlite://") {
        "CREATE TRIGGER fail_copy BEFORE INSERT ON messages BEGIN SELECT RAISE(ABORT, 'injected failure'); END;"
    } else {
        "CREATE FUNCTION fail_copy() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'injected failure'; END $$;
         CREATE TRIGGER fail_copy BEFORE INSERT ON messages FOR EACH ROW EXECUTE FUNCTION fail_copy();"
    };
    run_sql(url, sql).await;
}
