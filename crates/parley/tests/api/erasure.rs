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

#[tokio::test]
async fn an_erased_conversation_leaves_no_row_no_file_and_no_delivery_behind() {
    // A partner that cannot be reached: every delivery stays pending.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
    let app = TestApp::with()
        .var("PARLEY_WEBHOOK_ALLOW_PRIVATE", "true")
        .var("PARLEY_WEBHOOK_POLL_INTERVAL", "20ms")
        .var("PARLEY_WEBHOOK_RETRY_SCHEDULE", "1m")
        .start()
        .await;
    let f = app.fixture("acme", &[]).await;
    let admin = app.login("admin@acme.example.com").await;
    let (hook, _) = crate::webhooks::register(&app, &admin, &format!("http://{closed}/hook"), None).await;
    let (_, list) = app.authed(Method::GET, "/api/mobile/conversations", &admin, None).await;
    let start = list["meta"]["cursor"].as_str().expect("a cursor").to_owned();
    let kept = app.open_conversation("/api/v1", &f.token, "v-kept", "keep me").await;
    let (_, kept_file) = visitor_upload(&app, "/api/v1", &f.token, &kept, "kept.txt", b"kept").await;
    let (id, public_id, links) = a_full_conversation(&app, &f, &admin, "v-gone").await;
    assert_eq!(links.len(), 3, "a picture, its thumbnail and a PDF: {links:?}");
    assert!(!rows_recording(&app, id).await.is_empty());
    let files_before = stored_files(&app).len();
    // Each of its events waits to be delivered.
    eventually(|| async {
        let (events, deliveries) = (
            scalar(&app, "SELECT COUNT(*) FROM events WHERE webhook = TRUE").await,
            scalar(&app, "SELECT COUNT(*) FROM webhook_deliveries").await,
        );
        (events > 2 && deliveries == events).then_some(())
    })
    .await;
    let (status, body) = app.authed(Method::DELETE, &format!("/api/admin/conversations/{id}"), &admin, None).await;
    assert_eq!(status, StatusCode::NO_CONTENT, "{body}");

    assert_eq!(rows_recording(&app, id).await, vec![], "no table records it");
    assert_eq!(visitors_named(&app, "v-gone").await, 0, "the visitor went with their only conversation");
    assert_eq!(visitors_named(&app, "v-kept").await, 1);
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
    let (status, events) = app.authed(Method::GET, &format!("/api/mobile/events?after={start}"), &admin, None).await;
    assert_eq!(status, StatusCode::OK, "{events}");
    let entries = events["events"].as_array().unwrap();
    assert!(!entries.is_empty() && entries.iter().all(|e| e["data"]["conversation"]["id"] != id), "{events}");

    // Its deliveries are gone with it: the log shows the other
    // conversation's alone, and only those wait to be sent.
    let log = crate::webhooks::deliveries(&app, &admin, hook).await;
    let mut events: Vec<String> = log["deliveries"].as_array().unwrap().iter().map(|d| d["event"].as_str().unwrap().to_owned()).collect();
    events.sort();
    assert_eq!(events, ["conversation.created", "message.created"], "{log}");
    assert_eq!(scalar(&app, "SELECT COUNT(*) FROM webhook_deliveries").await, 2);

    // The other conversation is whole, its file served.
    let (_, poll) = app.get(&format!("/api/v1/widget/conversations/{kept}/messages?token={}", f.token)).await;
    assert_eq!(poll["messages"][0]["body"], "keep me");
    assert_eq!(kept_file["attachment"]["size"], 4);
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
    app.stop().await;
}

#[tokio::test]
async fn an_object_the_store_refuses_to_remove_stays_queued_until_it_goes() {
    let app = TestApp::with().var("PARLEY_SWEEP_INTERVAL", "20ms").start().await;
    let f = app.fixture("acme", &[]).await;
    let admin = app.login("admin@acme.example.com").await;
    let public_id = app.open_conversation("/api", &f.token, "v1", "hello").await;
    let (_, up) = visitor_upload(&app, "/api", &f.token, &public_id, "a.txt", b"a file").await;
    let path = format!("/api/widget/conversations/{public_id}/messages");
    let (status, _) = app.post(&path, json!({"token": f.token, "attachment_ids": [up["attachment"]["id"]]})).await;
    assert_eq!(status, StatusCode::CREATED);
    let id = conversation_id(&app, &admin, &public_id).await;
    // A folder with something in it where the file was: the store cannot
    // remove it.
    let [file] = stored_files(&app).try_into().expect("one file");
    std::fs::remove_file(&file).unwrap();
    std::fs::create_dir(&file).unwrap();
    std::fs::write(file.join("inside"), b"x").unwrap();

    let (status, _) = app.authed(Method::DELETE, &format!("/api/admin/conversations/{id}"), &admin, None).await;
    assert_eq!(status, StatusCode::NO_CONTENT, "the erasure does not wait for the store");
    assert_eq!(rows_recording(&app, id).await, vec![]);
    assert_eq!(scalar(&app, "SELECT COUNT(*) FROM file_removals").await, 1, "queued");

    std::fs::remove_dir_all(&file).unwrap();
    std::fs::write(&file, b"a file").unwrap();
    eventually(|| async { (scalar(&app, "SELECT COUNT(*) FROM file_removals").await == 0).then_some(()) }).await;
    assert_eq!(stored_files(&app), Vec::<std::path::PathBuf>::new(), "removed by the sweep");
    app.stop().await;
}
