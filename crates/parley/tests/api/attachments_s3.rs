//! Attachments in an S3-compatible store (the loopback peer checks every
//! request's signature): pictures and large files in several parts go in
//! and come back whole, an upload past the limit leaves no object and no
//! open multipart upload, and two instances on PostgreSQL share the files.

use reqwest::{Method, StatusCode};
use serde_json::json;

use crate::attachments::{fetch, form, operator_upload, png, post_in_pieces, upload_raw, visitor_upload};
use crate::helpers::*;
use crate::s3_peer::S3Peer;

#[tokio::test]
async fn files_go_to_the_object_store_and_come_back_whole() {
    let Some(peer) = S3Peer::start().await else { return };
    let app = peer.serve(TestApp::with(), "tenant-files").var("PARLEY_ATTACHMENT_MAX", "16MiB").start().await;
    let f = app.fixture("acme", &[]).await;
    let public_id = app.open_conversation("/api/v1", &f.token, "v1", "hello").await;
    let picture = png(640, 480);
    let (status, up) = visitor_upload(&app, "/api/v1", &f.token, &public_id, "shot.png", &picture).await;
    assert_eq!(status, StatusCode::CREATED, "{up}");
    assert_eq!(up["attachment"]["width"], 640);
    // Larger than one part (5 MiB): a multipart upload of three.
    let big: Vec<u8> = (0..12 * 1024 * 1024).map(|i: u32| b"parley attachments\n"[(i % 19) as usize]).collect();
    let (status, large) = visitor_upload(&app, "/api/v1", &f.token, &public_id, "log.txt", &big).await;
    assert_eq!(status, StatusCode::CREATED, "{large}");
    assert_eq!(large["attachment"]["size"], big.len());
    let (keys, open) = peer.contents().await;
    assert_eq!(keys.len(), 3, "the picture, its thumbnail and the text: {keys:?}");
    assert!(keys.iter().all(|k| k.starts_with("tenant-files/")), "under the prefix: {keys:?}");
    assert_eq!(open, 0);

    let path = format!("/api/v1/widget/conversations/{public_id}/messages");
    let ids = json!([up["attachment"]["id"], large["attachment"]["id"]]);
    let (status, sent) = app.post(&path, json!({"token": f.token, "attachment_ids": ids})).await;
    assert_eq!(status, StatusCode::CREATED, "{sent}");
    let files = &sent["message"]["attachments"];
    let (status, headers, bytes) = fetch(&app, files[0]["url"].as_str().unwrap()).await;
    assert_eq!((status, bytes == picture), (StatusCode::OK, true));
    assert_eq!(headers["content-type"], "image/png");
    let (status, _, thumb) = fetch(&app, files[0]["thumbnail_url"].as_str().unwrap()).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(image::load_from_memory(&thumb).map(|t| t.width()).ok(), Some(320));
    let (status, _, bytes) = fetch(&app, files[1]["url"].as_str().unwrap()).await;
    assert_eq!(status, StatusCode::OK);
    assert!(bytes == big, "twelve megabytes come back as they went");

    // Past the limit, read as it streams: nothing stays, no part either.
    let too_big = vec![b'x'; 17 * 1024 * 1024];
    let (content_type, body) = form("file", "huge.txt", &too_big);
    let path = format!("/api/v1/widget/conversations/{public_id}/attachments?token={}", f.token);
    let response = post_in_pieces(&app, &path, &content_type, &body, 64 * 1024).await;
    if let Ok(response) = response {
        assert_eq!(response.status(), StatusCode::PAYLOAD_TOO_LARGE);
    }
    let (after, open) = peer.contents().await;
    assert_eq!((after.len(), open), (3, 0), "nothing left of the refused upload: {after:?}");
    app.stop().await;
}

#[tokio::test]
async fn two_instances_on_postgres_share_files_through_the_object_store() {
    if backend() != "postgres" {
        return;
    }
    let Some(peer) = S3Peer::start().await else { return };
    let a = peer.serve(TestApp::with(), "shared").start().await;
    let b = peer.serve(TestApp::with().var("PARLEY_DATABASE_URL", &a.database_url), "shared").start().await;
    let f = a.fixture("acme", &[]).await;
    let public_id = a.open_conversation("/api/v1", &f.token, "v1", "hello").await;
    // Uploaded through one, sent through the other, read through either.
    let picture = png(300, 200);
    let (status, up) = visitor_upload(&a, "/api/v1", &f.token, &public_id, "a.png", &picture).await;
    assert_eq!(status, StatusCode::CREATED, "{up}");
    let path = format!("/api/v1/widget/conversations/{public_id}/messages");
    let (status, sent) = b.post(&path, json!({"token": f.token, "attachment_ids": [up["attachment"]["id"]]})).await;
    assert_eq!(status, StatusCode::CREATED, "{sent}");
    let url = sent["message"]["attachments"][0]["url"].as_str().unwrap().to_owned();
    for instance in [&a, &b] {
        let (status, _, bytes) = fetch(instance, &url).await;
        assert_eq!((status, bytes == picture), (StatusCode::OK, true));
    }
    // And the other way: an operator's file through b, read through a.
    let admin = b.login("admin@acme.example.com").await;
    let id = crate::attachments::conversation_id(&b, &admin, &public_id).await;
    let (status, up) = operator_upload(&b, &admin, id, "guide.pdf", b"%PDF-1.4\n%%EOF\n").await;
    assert_eq!(status, StatusCode::CREATED, "{up}");
    let reply = json!({"body": "the guide", "attachment_ids": [up["attachment"]["id"]]});
    let (status, _) = b.authed(Method::POST, &format!("/api/v1/mobile/conversations/{id}/messages"), &admin, Some(reply)).await;
    assert_eq!(status, StatusCode::OK);
    let (_, poll) = a.get(&format!("/api/v1/widget/conversations/{public_id}/messages?token={}", f.token)).await;
    let answer = poll["messages"].as_array().unwrap().last().unwrap().clone();
    let (status, _, bytes) = fetch(&a, answer["attachments"][0]["url"].as_str().unwrap()).await;
    assert_eq!((status, bytes.as_slice()), (StatusCode::OK, b"%PDF-1.4\n%%EOF\n".as_slice()));
    // A refused form on one instance leaves nothing for the other to find.
    let (content_type, body) = form("file", "x.exe", b"MZ\x90\0\x03\0\0\0\x04\0\0\0");
    let (status, _) =
        upload_raw(&a, &format!("/api/v1/widget/conversations/{public_id}/attachments?token={}", f.token), None, &content_type, body).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    let (keys, open) = peer.contents().await;
    assert_eq!((keys.len(), open), (3, 0), "{keys:?}");
    a.stop().await;
    b.stop().await;
}

/// An instance on PostgreSQL keeping files in a folder of its own
/// machine says so when it starts: another instance could not serve them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_folder_store_on_postgres_is_named_at_start() {
    use tokio::io::AsyncBufReadExt;
    let Some(server) = parley_storage::testing::postgres_url() else { return };
    let dir = tempfile::tempdir().unwrap();
    let db = tokio::task::spawn_blocking(move || parley_storage::testing::fresh_postgres(&server)).await.unwrap().expect("database");
    let mut child = crate::cli::parley(dir.path())
        .env("PARLEY_DATABASE_URL", &db.url)
        .arg("serve")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("parley serve");
    let mut lines = tokio::io::BufReader::new(child.stderr.take().expect("stderr")).lines();
    let said = tokio::time::timeout(std::time::Duration::from_secs(30), async {
        while let Ok(Some(line)) = lines.next_line().await {
            if line.contains("other instances sharing the database cannot serve them") {
                return Some(line);
            }
        }
        None
    })
    .await
    .ok()
    .flatten();
    let _ = child.kill().await;
    let said = said.expect("the warning at start");
    assert!(said.contains("PARLEY_FILES_URL") && said.contains("s3://"), "{said}");
}
