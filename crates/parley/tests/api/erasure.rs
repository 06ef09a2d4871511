//! Erasing conversations: an admin's `DELETE admin/conversations/{id}`
//! and `PARLEY_CONVERSATION_RETENTION` remove a conversation with every
//! row that records it and the files it carried; a visitor goes with
//! their last conversation; nobody else can erase, and a refusal changes
//! nothing; objects the store refuses to remove stay queued until it
//! takes them.

use std::time::Duration;

use parley_domain::model::Role;
use reqwest::{Method, StatusCode};
use serde_json::json;

use crate::attachments::{conversation_id, fetch, operator_upload, png, stored_files, visitor_upload};
use crate::helpers::*;
use crate::smtp_sink::SmtpSink;

/// One number the database answers, read the way an administrator would.
async fn scalar(app: &TestApp, sql: &str) -> i64 {
    let (url, sql) = (app.database_url.clone(), sql.to_owned());
    tokio::task::spawn_blocking(move || match url.strip_prefix("sqlite://") {
        Some(path) => rusqlite::Connection::open(path).unwrap().query_row(&sql, [], |r| r.get(0)).unwrap(),
        None => postgres::Client::connect(&url, postgres::NoTls).unwrap().query_one(&sql, &[]).unwrap().get(0),
    })
    .await
    .unwrap()
}

/// Every table with a `conversation_id` column, from the catalog: a table
/// added later is checked without a change here.
async fn tables_naming_conversations(app: &TestApp) -> Vec<String> {
    let url = app.database_url.clone();
    tokio::task::spawn_blocking(move || match url.strip_prefix("sqlite://") {
        Some(path) => {
            let db = rusqlite::Connection::open(path).unwrap();
            let mut q = db
                .prepare(
                    "SELECT m.name FROM sqlite_master m, pragma_table_info(m.name) p
                     WHERE m.type = 'table' AND p.name = 'conversation_id' ORDER BY m.name",
                )
                .unwrap();
            q.query_map([], |r| r.get(0)).unwrap().map(Result::unwrap).collect()
        }
        None => postgres::Client::connect(&url, postgres::NoTls)
            .unwrap()
            .query(
                "SELECT table_name::text FROM information_schema.columns
                 WHERE column_name = 'conversation_id' AND table_schema = current_schema() ORDER BY 1",
                &[],
            )
            .unwrap()
            .iter()
            .map(|r| r.get(0))
            .collect(),
    })
    .await
    .unwrap()
}

/// The rows that still record conversation `id`, table by table (only
/// tables with some).
async fn rows_recording(app: &TestApp, id: i64) -> Vec<(String, i64)> {
    let mut found = Vec::new();
    for table in tables_naming_conversations(app).await {
        let n = scalar(app, &format!("SELECT COUNT(*) FROM {table} WHERE conversation_id = {id}")).await;
        if n > 0 {
            found.push((table, n));
        }
    }
    let n = scalar(app, &format!("SELECT COUNT(*) FROM conversations WHERE id = {id}")).await;
    if n > 0 {
        found.push(("conversations".into(), n));
    }
    found
}

async fn visitors_named(app: &TestApp, uuid: &str) -> i64 {
    scalar(app, &format!("SELECT COUNT(*) FROM visitors WHERE uuid = '{uuid}'")).await
}

/// A conversation with something in every table that can record one: a
/// picture from the visitor, a PDF from the operator, an upload not sent,
/// a read marker, webhook deliveries; returns its id and its file links.
async fn a_full_conversation(app: &TestApp, f: &Fixture, admin: &str, visitor: &str) -> (i64, String, Vec<String>) {
    let public_id = app.open_conversation("/api/v1", &f.token, visitor, "please forget me afterwards").await;
    let id = conversation_id(app, admin, &public_id).await;
    let (_, picture) = visitor_upload(app, "/api/v1", &f.token, &public_id, "me.png", &png(80, 60)).await;
    let path = format!("/api/v1/widget/conversations/{public_id}/messages");
    let (status, _) = app.post(&path, json!({"token": f.token, "attachment_ids": [picture["attachment"]["id"]]})).await;
    assert_eq!(status, StatusCode::CREATED);
    visitor_upload(app, "/api/v1", &f.token, &public_id, "unsent.txt", b"not sent").await;
    let (_, pdf) = operator_upload(app, admin, id, "guide.pdf", b"%PDF-1.4\n%%EOF\n").await;
    let reply = json!({"body": "here", "attachment_ids": [pdf["attachment"]["id"]]});
    let (status, body) = app.authed(Method::POST, &format!("/api/v1/mobile/conversations/{id}/messages"), admin, Some(reply)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (_, messages) = app.authed(Method::GET, &format!("/api/v1/mobile/conversations/{id}/messages"), admin, None).await;
    let messages = messages["messages"].as_array().unwrap().clone();
    let last = messages.last().unwrap()["id"].clone();
    let (status, _) =
        app.authed(Method::POST, &format!("/api/v1/mobile/conversations/{id}/read"), admin, Some(json!({"message_id": last}))).await;
    assert_eq!(status, StatusCode::OK);
    let links = messages
        .iter()
        .flat_map(|m| m["attachments"].as_array().cloned().unwrap_or_default())
        .flat_map(|a| [a["url"].as_str().map(str::to_owned), a["thumbnail_url"].as_str().map(str::to_owned)])
        .flatten()
        .collect();
    (id, public_id, links)
}

/// The tables that hold rows of conversation `id`.
async fn tables_recording(app: &TestApp, id: i64) -> Vec<String> {
    rows_recording(app, id).await.into_iter().map(|(table, _)| table).collect()
}

#[tokio::test]
async fn an_erased_conversation_leaves_no_row_no_file_and_no_delivery_behind() {
    // A partner that cannot be reached: every delivery stays pending.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
    let smtp = SmtpSink::start().await;
    let app = TestApp::with()
        .var("PARLEY_WEBHOOK_ALLOW_PRIVATE", "true")
        .var("PARLEY_WEBHOOK_POLL_INTERVAL", "20ms")
        .var("PARLEY_WEBHOOK_RETRY_SCHEDULE", "1m")
        .var("PARLEY_SMTP_URL", &smtp.url())
        .var("PARLEY_MAIL_FROM", "Parley <noreply@parley.test>")
        .start()
        .await;
    let f = app.fixture("acme", &[]).await;
    let admin = app.login("admin@acme.example.com").await;
    let (hook, _) = crate::webhooks::register(&app, &admin, &format!("http://{closed}/hook"), None).await;
    let (_, list) = app.authed(Method::GET, "/api/mobile/conversations", &admin, None).await;
    let start = list["meta"]["cursor"].as_str().expect("a cursor").to_owned();
    // A visitor who gave an address, proved it, was emailed an answer,
    // and has the widget open while another waits to be emailed.
    let visitor = json!({"token": f.token, "uuid": "v-gone", "name": "Renée", "email": "renee@example.com"});
    assert_eq!(app.post("/api/v1/widget/visitors", visitor).await.0, StatusCode::CREATED);
    let (id, public_id, links) = a_full_conversation(&app, &f, &admin, "v-gone").await;
    assert_eq!(links.len(), 3, "a picture, its thumbnail and a PDF: {links:?}");
    let kept = app.open_conversation("/api/v1", &f.token, "v-kept", "keep me").await;
    let (_, kept_file) = visitor_upload(&app, "/api/v1", &f.token, &kept, "kept.txt", b"kept").await;
    let path = format!("/api/v1/widget/conversations/{kept}/messages");
    let (status, _) = app.post(&path, json!({"token": f.token, "attachment_ids": [kept_file["attachment"]["id"]]})).await;
    assert_eq!(status, StatusCode::CREATED);

    crate::continuity_mail::verify(&app, &smtp, &f.token, &public_id).await;
    app.clock.advance(Duration::from_secs(180));
    let emailed = smtp.next().await;
    assert!(emailed.data.contains("here"), "the answer was emailed");
    eventually(|| async { tables_recording(&app, id).await.contains(&"mail_threads".to_owned()).then_some(()) }).await;
    let stream = crate::sse::open_ok(&app, &format!("/api/widget/conversations/{public_id}/events?token={}", f.token), &[]).await;
    eventually(|| async { tables_recording(&app, id).await.contains(&"widget_presence".to_owned()).then_some(()) }).await;
    let (status, _) =
        app.authed(Method::POST, &format!("/api/mobile/conversations/{id}/messages"), &admin, Some(json!({"body": "one more"}))).await;
    assert_eq!(status, StatusCode::OK);
    // Its deliveries have been tried and wait for their retry.
    let tried_for = |conversation: i64| {
        format!(
            "SELECT COUNT(*) FROM webhook_attempts a JOIN webhook_deliveries d ON d.id = a.delivery_id
             JOIN events e ON e.id = d.event_id WHERE e.conversation_id = {conversation}"
        )
    };
    eventually(|| async { (scalar(&app, &tried_for(id)).await > 0).then_some(()) }).await;
    let mut holding = tables_recording(&app, id).await;
    holding.sort();
    // Pushes need a provider this instance has not; the rest is here.
    let expected = [
        "attachments",
        "conversations",
        "events",
        "mail_threads",
        "messages",
        "read_markers",
        "verification_challenges",
        "visitor_mail",
        "widget_presence",
    ];
    assert_eq!(holding, expected);
    let files_before = stored_files(&app).len();

    let (status, body) = app.authed(Method::DELETE, &format!("/api/admin/conversations/{id}"), &admin, None).await;
    assert_eq!(status, StatusCode::NO_CONTENT, "{body}");
    drop(stream);

    assert_eq!(rows_recording(&app, id).await, vec![], "no table records it");
    assert_eq!(visitors_named(&app, "v-gone").await, 0, "the visitor went with their only conversation");
    assert_eq!(visitors_named(&app, "v-kept").await, 1);
    let text = scalar(&app, "SELECT COUNT(*) FROM events WHERE payload LIKE '%Renée%' OR payload LIKE '%forget me%'").await;
    assert_eq!(text, 0, "no feed entry keeps what was said");
    assert_eq!(scalar(&app, "SELECT COUNT(*) FROM file_removals").await, 0, "every object was removed at once");
    assert_eq!(stored_files(&app).len(), files_before - 4, "the picture, its thumbnail, the PDF and the unsent upload");
    for link in &links {
        let (status, _, _) = fetch(&app, link).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{link}");
    }
    for path in [format!("/api/mobile/conversations/{id}"), format!("/api/v1/mobile/conversations/{id}/messages")] {
        let (status, body) = app.authed(Method::GET, &path, &admin, None).await;
        assert_error(status, &body, StatusCode::NOT_FOUND, "not_found");
    }
    let (status, body) = app.get(&format!("/api/widget/conversations/{public_id}/messages?token={}", f.token)).await;
    assert_error(status, &body, StatusCode::NOT_FOUND, "not_found");
    let (_, list) = app.authed(Method::GET, "/api/mobile/conversations", &admin, None).await;
    let ids: Vec<i64> = list["conversations"].as_array().unwrap().iter().map(|c| c["id"].as_i64().unwrap()).collect();
    assert!(!ids.contains(&id) && ids.len() == 1, "{ids:?}");
    // The feed reads on past its tombstones, from before and from within.
    let (status, events) = app.authed(Method::GET, &format!("/api/mobile/events?after={start}"), &admin, None).await;
    assert_eq!(status, StatusCode::OK, "{events}");
    let entries = events["events"].as_array().unwrap();
    assert!(!entries.is_empty() && entries.iter().all(|e| e["data"]["conversation"]["id"] != id), "{events}");

    // Its deliveries and their attempts are gone with it: the log shows
    // the other conversation's alone, and only those wait to be sent.
    let log = crate::webhooks::deliveries(&app, &admin, hook).await;
    let mut events: Vec<String> = log["deliveries"].as_array().unwrap().iter().map(|d| d["event"].as_str().unwrap().to_owned()).collect();
    events.sort();
    assert_eq!(events, ["conversation.created", "message.created", "message.created"], "{log}");
    let kept_id = conversation_id(&app, &admin, &kept).await;
    let attempts = scalar(&app, "SELECT COUNT(*) FROM webhook_attempts").await;
    assert_eq!(scalar(&app, &tried_for(kept_id)).await, attempts, "only the other conversation's attempts are left");

    // The other conversation is whole, its file served.
    let (_, poll) = app.get(&format!("/api/v1/widget/conversations/{kept}/messages?token={}", f.token)).await;
    assert_eq!(poll["messages"][0]["body"], "keep me");
    let url = poll["messages"][1]["attachments"][0]["url"].as_str().expect("the kept file's link");
    assert_eq!(fetch(&app, url).await.0, StatusCode::OK);
    // Erasing twice finds nothing, under both prefixes.
    for prefix in ["/api", "/api/v1"] {
        let (status, body) = app.authed(Method::DELETE, &format!("{prefix}/admin/conversations/{id}"), &admin, None).await;
        assert_error(status, &body, StatusCode::NOT_FOUND, "not_found");
    }
    app.stop().await;
}

#[tokio::test]
async fn a_visitor_with_another_conversation_is_kept() {
    let app = TestApp::spawn().await;
    let f = app.fixture("acme", &[]).await;
    let admin = app.login("admin@acme.example.com").await;
    let first = app.open_conversation("/api", &f.token, "v1", "first").await;
    let first_id = conversation_id(&app, &admin, &first).await;
    let (status, _) = app.authed(Method::POST, &format!("/api/mobile/conversations/{first_id}/close"), &admin, None).await;
    assert_eq!(status, StatusCode::OK);
    let second = app.open_conversation("/api", &f.token, "v1", "second").await;
    assert_ne!(first, second, "a second conversation of the same visitor");

    let (status, _) = app.authed(Method::DELETE, &format!("/api/v1/admin/conversations/{first_id}"), &admin, None).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    assert_eq!(visitors_named(&app, "v1").await, 1, "kept for their other conversation");
    let (status, poll) = app.get(&format!("/api/widget/conversations/{second}/messages?token={}", f.token)).await;
    assert_eq!((status, &poll["messages"][0]["body"]), (StatusCode::OK, &json!("second")));
    app.stop().await;
}

#[tokio::test]
async fn only_an_admin_of_the_tenant_erases_and_a_refusal_changes_nothing() {
    let app = TestApp::spawn().await;
    let f = app.fixture("acme", &[]).await;
    let second_site = app.site("acme-docs", f.scope.tenant, &[]).await;
    app.fixture("globex", &[]).await;
    app.operator(&f, "agent@acme.example.com", Role::Agent, &[f.scope.site]).await;
    app.operator(&f, "elsewhere@acme.example.com", Role::Agent, &[second_site.scope.site]).await;
    let admin = app.login("admin@acme.example.com").await;
    let (_, personal) = app.authed(Method::POST, "/api/admin/tokens", &admin, Some(json!({"name": "try", "expires_in_days": 1}))).await;
    let personal = personal["token"]["access_token"].as_str().unwrap().to_owned();
    let (id, public_id, links) = a_full_conversation(&app, &f, &admin, "v1").await;
    let rows = rows_recording(&app, id).await;
    let files = stored_files(&app).len();

    let path = format!("/api/admin/conversations/{id}");
    let globex = app.login("admin@globex.example.com").await;
    let (status, body) = app.authed(Method::DELETE, &path, &globex, None).await;
    assert_error(status, &body, StatusCode::NOT_FOUND, "not_found");
    for (who, token) in [
        ("an agent of the site", app.login("agent@acme.example.com").await),
        ("an agent without the site", app.login("elsewhere@acme.example.com").await),
        ("an admin's personal token", personal),
    ] {
        let (status, body) = app.authed(Method::DELETE, &path, &token, None).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{who}: {body}");
        assert_eq!(body["error"]["code"], "forbidden", "{who}");
    }
    let (status, body) = app.send(Method::DELETE, &path, None, &[]).await;
    assert_error(status, &body, StatusCode::UNAUTHORIZED, "unauthenticated");
    let (status, body) = app.authed(Method::DELETE, &path, "not-a-token", None).await;
    assert_error(status, &body, StatusCode::UNAUTHORIZED, "unauthenticated");
    for bad in ["0", "-1", "abc", "1.5", "99999999999999999999", &(id + 1000).to_string()] {
        let (status, body) = app.authed(Method::DELETE, &format!("/api/admin/conversations/{bad}"), &admin, None).await;
        assert_error(status, &body, StatusCode::NOT_FOUND, "not_found");
    }

    assert_eq!(rows_recording(&app, id).await, rows, "nothing changed");
    assert_eq!(stored_files(&app).len(), files);
    for link in &links {
        let (status, _, _) = fetch(&app, link).await;
        assert_eq!(status, StatusCode::OK, "{link}");
    }
    let (status, _) = app.get(&format!("/api/widget/conversations/{public_id}/messages?token={}", f.token)).await;
    assert_eq!(status, StatusCode::OK);
    app.stop().await;
}

#[tokio::test]
async fn conversations_past_the_retention_are_erased_with_their_files() {
    let app = TestApp::with().var("PARLEY_CONVERSATION_RETENTION", "2d").var("PARLEY_SWEEP_INTERVAL", "20ms").start().await;
    let f = app.fixture("acme", &[]).await;
    let admin = app.login("admin@acme.example.com").await;
    let (old, _, _) = a_full_conversation(&app, &f, &admin, "v-old").await;
    app.clock.advance(Duration::from_secs(86_400));
    let admin = app.login("admin@acme.example.com").await;
    let fresh = app.open_conversation("/api", &f.token, "v-fresh", "still here").await;
    let (_, file) = visitor_upload(&app, "/api", &f.token, &fresh, "f.txt", b"fresh").await;
    let path = format!("/api/widget/conversations/{fresh}/messages");
    let (status, _) = app.post(&path, json!({"token": f.token, "attachment_ids": [file["attachment"]["id"]]})).await;
    assert_eq!(status, StatusCode::CREATED);
    let fresh_id = conversation_id(&app, &admin, &fresh).await;

    app.clock.advance(Duration::from_secs(86_400 + 60));
    eventually(|| async { rows_recording(&app, old).await.is_empty().then_some(()) }).await;
    assert_eq!(visitors_named(&app, "v-old").await, 0);
    eventually(|| async { (stored_files(&app).len() == 1).then_some(()) }).await;
    assert!(!rows_recording(&app, fresh_id).await.is_empty(), "a day old: kept");
    let (_, poll) = app.get(&format!("/api/widget/conversations/{fresh}/messages?token={}", f.token)).await;
    let url = poll["messages"][1]["attachments"][0]["url"].as_str().expect("the fresh file's link");
    assert_eq!(fetch(&app, url).await.0, StatusCode::OK, "the file left is the fresh conversation's");
    let (_, log) = app.authed(Method::GET, "/api/v1/admin/audit", &admin, None).await;
    let entry = &log["entries"][0];
    assert_eq!((entry["action"].as_str(), entry["target_id"].as_i64()), (Some("conversation.erased"), Some(old)), "{log}");
    assert_eq!(entry["actor"], json!({"operator_id": null, "name": "retention", "client_address": null}));
    assert_eq!(entry["details"], json!({"retention_days": 2}));
    app.stop().await;
}

/// Makes the store unable to remove `file`: a folder with something in
/// it stands where the file was.
fn jam(file: &std::path::Path) {
    std::fs::remove_file(file).unwrap();
    std::fs::create_dir(file).unwrap();
    std::fs::write(file.join("inside"), b"x").unwrap();
}

fn unjam(file: &std::path::Path) {
    std::fs::remove_dir_all(file).unwrap();
    std::fs::write(file, b"a file").unwrap();
}

async fn queued(app: &TestApp) -> i64 {
    scalar(app, "SELECT COUNT(*) FROM file_removals").await
}

#[tokio::test]
async fn an_object_the_store_refuses_to_remove_waits_without_holding_up_the_others() {
    let app = TestApp::with().var("PARLEY_SWEEP_INTERVAL", "20ms").start().await;
    let f = app.fixture("acme", &[]).await;
    let admin = app.login("admin@acme.example.com").await;
    let mut conversations = Vec::new();
    for visitor in ["v1", "v2", "v3"] {
        let public_id = app.open_conversation("/api", &f.token, visitor, "hello").await;
        let before = stored_files(&app);
        let (_, up) = visitor_upload(&app, "/api", &f.token, &public_id, "a.txt", b"a file").await;
        let path = format!("/api/widget/conversations/{public_id}/messages");
        let (status, _) = app.post(&path, json!({"token": f.token, "attachment_ids": [up["attachment"]["id"]]})).await;
        assert_eq!(status, StatusCode::CREATED);
        let file = stored_files(&app).into_iter().find(|p| !before.contains(p)).expect("its file");
        conversations.push((conversation_id(&app, &admin, &public_id).await, file));
    }
    let [(first, first_file), (second, second_file), (third, third_file)] = conversations.try_into().unwrap();
    jam(&first_file);
    jam(&second_file);

    for id in [first, second, third] {
        let (status, _) = app.authed(Method::DELETE, &format!("/api/admin/conversations/{id}"), &admin, None).await;
        assert_eq!(status, StatusCode::NO_CONTENT, "the erasure does not depend on the store");
        assert_eq!(rows_recording(&app, id).await, vec![]);
    }
    assert!(!third_file.exists(), "removed at once, though two before it were refused");
    assert_eq!(queued(&app).await, 2, "the refused ones wait");

    // The second is taken at its next try, while the first is still refused.
    unjam(&second_file);
    app.clock.advance(Duration::from_secs(61));
    eventually(|| async { (queued(&app).await == 1).then_some(()) }).await;
    assert!(!second_file.exists() && first_file.exists());
    unjam(&first_file);
    // Each refusal doubles the wait: two minutes after its second.
    app.clock.advance(Duration::from_secs(121));
    eventually(|| async { (queued(&app).await == 0).then_some(()) }).await;
    assert_eq!(stored_files(&app), Vec::<std::path::PathBuf>::new(), "removed by the sweep");
    app.stop().await;
}

#[tokio::test]
async fn an_erased_conversations_ids_are_never_given_again_and_its_widget_stream_ends() {
    let app = TestApp::with().var("PARLEY_STREAM_KEEPALIVE", "100ms").start().await;
    let f = app.fixture("acme", &[]).await;
    let admin = app.login("admin@acme.example.com").await;
    let erased = app.open_conversation("/api", &f.token, "v1", "the newest").await;
    let id = conversation_id(&app, &admin, &erased).await;
    let visitor = scalar(&app, "SELECT id FROM visitors WHERE uuid = 'v1'").await;
    let mut stream = crate::sse::open_ok(&app, &format!("/api/widget/conversations/{erased}/events?token={}", f.token), &[]).await;

    let (status, _) = app.authed(Method::DELETE, &format!("/api/admin/conversations/{id}"), &admin, None).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    // The widget's stream ends; reconnecting finds nothing.
    while stream.frame().await.is_some() {}
    let (status, body) = app.get(&format!("/api/widget/conversations/{erased}/events?token={}", f.token)).await;
    assert_error(status, &body, StatusCode::NOT_FOUND, "not_found");

    let next = app.open_conversation("/api", &f.token, "v2", "a stranger").await;
    assert!(conversation_id(&app, &admin, &next).await > id, "a new id, not the erased one's");
    assert!(scalar(&app, "SELECT id FROM visitors WHERE uuid = 'v2'").await > visitor);
    app.stop().await;
}

/// Starts an upload of a text file into `public_id` and sends half of it;
/// `send_rest` sends the rest and reads the answer's status line.
async fn half_an_upload(app: &TestApp, token: &str, public_id: &str) -> impl std::future::Future<Output = String> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let (content_type, body) = crate::attachments::form("file", "notes.txt", &vec![b'a'; 3000]);
    let mut socket = tokio::net::TcpStream::connect(app.base.trim_start_matches("http://")).await.unwrap();
    let head = format!(
        "POST /api/v1/widget/conversations/{public_id}/attachments?token={token} HTTP/1.1\r\nHost: x\r\n\
         Content-Type: {content_type}\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    socket.write_all(head.as_bytes()).await.unwrap();
    socket.write_all(&body[..body.len() / 2]).await.unwrap();
    async move {
        socket.write_all(&body[body.len() / 2..]).await.unwrap();
        let mut answer = vec![0u8; 4096];
        let n = tokio::time::timeout(Duration::from_secs(10), socket.read(&mut answer)).await.unwrap().unwrap();
        String::from_utf8_lossy(&answer[..n]).lines().next().unwrap_or_default().to_owned()
    }
}

/// An upload under way when its conversation is erased: the uploader is
/// told it is gone, and what was stored of it is removed all the same.
#[tokio::test]
async fn an_upload_cut_by_an_erasure_is_answered_404_and_leaves_no_file() {
    let app = TestApp::spawn().await;
    let f = app.fixture("acme", &[]).await;
    let admin = app.login("admin@acme.example.com").await;
    let public_id = app.open_conversation("/api", &f.token, "v1", "hello").await;
    let id = conversation_id(&app, &admin, &public_id).await;
    let rest = half_an_upload(&app, &f.token, &public_id).await;
    eventually(|| async { (scalar(&app, "SELECT COUNT(*) FROM attachments").await == 1).then_some(()) }).await;
    let (status, _) = app.authed(Method::DELETE, &format!("/api/admin/conversations/{id}"), &admin, None).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let answer = rest.await;
    assert!(answer.contains(" 404 "), "{answer}");
    eventually(|| async { (stored_files(&app).is_empty() && queued(&app).await == 0).then_some(()) }).await;
    app.stop().await;
}

#[tokio::test]
async fn on_s3_an_upload_cut_by_an_erasure_leaves_no_object() {
    let Some(peer) = crate::s3_peer::S3Peer::start().await else { return };
    let app = peer.serve(TestApp::with(), "erasure").start().await;
    let f = app.fixture("acme", &[]).await;
    let admin = app.login("admin@acme.example.com").await;
    let public_id = app.open_conversation("/api", &f.token, "v1", "hello").await;
    let id = conversation_id(&app, &admin, &public_id).await;
    let rest = half_an_upload(&app, &f.token, &public_id).await;
    // The row is made and the multipart upload is open.
    eventually(|| async { (peer.contents().await.1 == 1).then_some(()) }).await;
    let (status, _) = app.authed(Method::DELETE, &format!("/api/admin/conversations/{id}"), &admin, None).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let answer = rest.await;
    assert!(answer.contains(" 404 "), "{answer}");
    eventually(|| async { (peer.contents().await == (vec![], 0)).then_some(()) }).await;
    assert_eq!(queued(&app).await, 0);
    app.stop().await;
}

/// On PostgreSQL units run side by side: a visitor opening a conversation
/// while their only one is erased either keeps their record or starts
/// afresh, and neither side fails.
#[tokio::test]
async fn erasing_while_the_visitor_opens_another_conversation_fails_neither() {
    let app = TestApp::spawn().await;
    let f = app.fixture("acme", &[]).await;
    let admin = app.login("admin@acme.example.com").await;
    for round in 0..30 {
        let visitor = format!("v{round}");
        let first = app.open_conversation("/api", &f.token, &visitor, "first").await;
        let id = conversation_id(&app, &admin, &first).await;
        let erase_path = format!("/api/admin/conversations/{id}");
        let erase = app.authed(Method::DELETE, &erase_path, &admin, None);
        let open = app.post(
            "/api/widget/conversations",
            json!({"token": f.token, "visitor_uuid": visitor, "message": "again", "privacy_accepted": true}),
        );
        let ((erased, erase_body), (opened, open_body)) = tokio::join!(erase, open);
        assert_eq!(erased, StatusCode::NO_CONTENT, "round {round}: {erase_body}");
        assert_eq!(opened, StatusCode::CREATED, "round {round}: {open_body}");
        assert_eq!(visitors_named(&app, &visitor).await, 1, "round {round}: the new conversation's visitor");
    }
    app.stop().await;
}

/// Admins erase from the web app, after a page that asks again; agents
/// see no link and are refused the page and its form.
#[tokio::test]
async fn admins_erase_from_the_web_app_after_being_asked_again() {
    let app = TestApp::spawn().await;
    let f = app.fixture("acme", &[]).await;
    app.operator(&f, "agent@acme.example.com", Role::Agent, &[f.scope.site]).await;
    let admin_token = app.login("admin@acme.example.com").await;
    let public_id = app.open_conversation("/api", &f.token, "v1", "please forget me").await;
    let id = conversation_id(&app, &admin_token, &public_id).await;
    let path = format!("/app/conversations/{id}/erase");

    let mut agent = crate::web_browser::Browser::signed_in(&app, "agent@acme.example.com").await;
    let page = agent.conversation(id).await;
    assert!(!page.html.contains(&path), "no link for an agent");
    assert_eq!(agent.get(&path).await.status, StatusCode::FORBIDDEN);
    let csrf = page.field("csrf");
    assert_eq!(agent.post(&path, &[("csrf", &csrf)]).await.status, StatusCode::FORBIDDEN);

    let mut admin = crate::web_browser::Browser::signed_in(&app, "admin@acme.example.com").await;
    assert!(admin.conversation(id).await.html.contains(&path), "the admin's page links to it");
    let ask = admin.get(&path).await;
    assert_eq!(ask.status, StatusCode::OK);
    assert!(ask.html.contains("cannot be undone"), "{}", ask.html);
    assert!(!rows_recording(&app, id).await.is_empty(), "asking changes nothing");
    assert_eq!(admin.post(&path, &[]).await.status, StatusCode::FORBIDDEN, "not without its token");
    let erased = admin.post(&path, &[("csrf", &ask.field("csrf"))]).await;
    assert_eq!(erased.location.as_deref(), Some("/app"));
    assert_eq!(rows_recording(&app, id).await, vec![]);
    assert_eq!(admin.get(&path).await.status, StatusCode::NOT_FOUND);
    app.stop().await;
}
