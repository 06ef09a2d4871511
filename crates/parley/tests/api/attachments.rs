//! Attachments: a visitor's picture and an operator's PDF travel both
//! ways through uploads, messages, signed links and webhooks; every
//! refusal (size, type, quota, another conversation's or tenant's upload,
//! bad and expired links, not a form) changes nothing and leaves no file;
//! pictures that would decode to too much are kept as downloads; names
//! never reach a header unsafely; uploads no message names go after a day.

use std::time::Duration;

use parley_domain::model::Role;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::helpers::*;
use crate::receiver::Receiver;

/// A `multipart/form-data` body with one part named `field`, as a
/// browser's `FormData` sends it.
pub(crate) fn form(field: &str, name: &str, bytes: &[u8]) -> (String, Vec<u8>) {
    let boundary = "----parleyBoundary7MA4YWxkTrZu0gW";
    let mut body = format!(
        "--{boundary}\r\nContent-Disposition: form-data; name=\"{field}\"; filename=\"{name}\"\r\nContent-Type: application/x-anything\r\n\r\n"
    )
    .into_bytes();
    body.extend_from_slice(bytes);
    body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
    (format!("multipart/form-data; boundary={boundary}"), body)
}

pub(crate) fn png(width: u32, height: u32) -> Vec<u8> {
    let image = image::RgbImage::from_fn(width, height, |x, y| image::Rgb([(x % 251) as u8, (y % 241) as u8, 77]));
    let mut out = std::io::Cursor::new(Vec::new());
    image.write_to(&mut out, image::ImageFormat::Png).expect("png");
    out.into_inner()
}

const PDF: &[u8] = b"%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n";

pub(crate) async fn upload_raw(app: &TestApp, path: &str, bearer: Option<&str>, content_type: &str, body: Vec<u8>) -> (StatusCode, Value) {
    let mut request = app.client.post(app.url(path)).header("content-type", content_type).body(body);
    if let Some(token) = bearer {
        request = request.bearer_auth(token);
    }
    let response = request.send().await.expect("upload");
    let status = response.status();
    let text = response.text().await.unwrap_or_default();
    (status, serde_json::from_str(&text).unwrap_or(Value::String(text)))
}

pub(crate) async fn visitor_upload(
    app: &TestApp,
    prefix: &str,
    token: &str,
    public_id: &str,
    name: &str,
    bytes: &[u8],
) -> (StatusCode, Value) {
    let (content_type, body) = form("file", name, bytes);
    upload_raw(app, &format!("{prefix}/widget/conversations/{public_id}/attachments?token={token}"), None, &content_type, body).await
}

pub(crate) async fn operator_upload(app: &TestApp, bearer: &str, id: i64, name: &str, bytes: &[u8]) -> (StatusCode, Value) {
    let (content_type, body) = form("file", name, bytes);
    upload_raw(app, &format!("/api/v1/mobile/conversations/{id}/attachments"), Some(bearer), &content_type, body).await
}

pub(crate) async fn conversation_id(app: &TestApp, bearer: &str, public_id: &str) -> i64 {
    let (_, list) = app.authed(Method::GET, "/api/v1/mobile/conversations?per_page=100", bearer, None).await;
    list["conversations"].as_array().unwrap().iter().find(|c| c["public_id"] == public_id).expect("the conversation")["id"]
        .as_i64()
        .unwrap()
}

/// Posts `body` in pieces of `piece` bytes (chunked, no declared
/// length), as a client streaming a large file, or trickling, sends it.
pub(crate) async fn post_in_pieces(
    app: &TestApp,
    path: &str,
    content_type: &str,
    body: &[u8],
    piece: usize,
) -> reqwest::Result<reqwest::Response> {
    let pieces: Vec<Result<Vec<u8>, std::io::Error>> = body.chunks(piece).map(|c| Ok(c.to_vec())).collect();
    app.client
        .post(app.url(path))
        .header("content-type", content_type)
        .body(reqwest::Body::wrap_stream(futures::stream::iter(pieces)))
        .send()
        .await
}

/// A link's answer: status, headers and bytes.
pub(crate) async fn fetch(app: &TestApp, url: &str) -> (StatusCode, reqwest::header::HeaderMap, Vec<u8>) {
    // Links name the public address; requests go to the socket.
    let path = url.split_once("/api/").map(|(_, p)| format!("/api/{p}")).expect("a link");
    let response = app.client.get(app.url(&path)).send().await.expect("fetch");
    let (status, headers) = (response.status(), response.headers().clone());
    (status, headers, response.bytes().await.expect("body").to_vec())
}

/// The files kept in the test's folder (thumbnails included).
pub(crate) fn stored_files(app: &TestApp) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    let mut folders = vec![app.dir.path().join("files")];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() { folders.push(path) } else { found.push(path) }
        }
    }
    found
}

#[tokio::test]
async fn a_visitors_picture_and_an_operators_pdf_travel_both_ways() {
    let app = TestApp::spawn().await;
    let f = app.fixture("acme", &[]).await;
    let admin = app.login("admin@acme.example.com").await;
    for prefix in PREFIXES {
        let public_id = app.open_conversation(prefix, &f.token, &format!("v{prefix}"), "my screen looks odd").await;
        let picture = png(1200, 800);
        let (status, up) = visitor_upload(&app, prefix, &f.token, &public_id, "screen shot.png", &picture).await;
        assert_eq!(status, StatusCode::CREATED, "{up}");
        let a = &up["attachment"];
        assert!(a["id"].as_str().is_some_and(|id| id.starts_with("att_")), "{up}");
        assert_eq!((a["name"].as_str(), a["content_type"].as_str()), (Some("screen shot.png"), Some("image/png")));
        assert_eq!((a["size"].as_u64(), a["width"].as_u64(), a["height"].as_u64()), (Some(picture.len() as u64), Some(1200), Some(800)));
        assert!(a.get("url").is_none(), "an upload has no link until a message names it");

        // A message of the picture alone.
        let path = format!("{prefix}/widget/conversations/{public_id}/messages");
        let (status, sent) = app.post(&path, json!({"token": f.token, "attachment_ids": [a["id"]]})).await;
        assert_eq!(status, StatusCode::CREATED, "{sent}");
        assert_eq!(sent["message"]["body"], "");
        let carried = &sent["message"]["attachments"][0];
        assert_eq!(carried["id"], a["id"]);
        let (status, headers, bytes) = fetch(&app, carried["url"].as_str().expect("url")).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(bytes, picture, "the same bytes come back");
        assert_eq!(headers["content-type"], "image/png");
        assert_eq!(headers["content-disposition"], "inline; filename=\"screen shot.png\"");
        assert_eq!(headers["x-content-type-options"], "nosniff");
        assert_eq!(headers["content-security-policy"], "sandbox; default-src 'none'");
        assert!(headers["cache-control"].to_str().unwrap().starts_with("private, max-age="));
        let (status, headers, thumb) = fetch(&app, carried["thumbnail_url"].as_str().expect("thumbnail")).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(headers["content-type"], "image/jpeg");
        let small = image::load_from_memory(&thumb).expect("the thumbnail decodes");
        assert_eq!((small.width(), small.height()), (320, 213));

        // The operator sees it, and answers with a PDF and a line.
        let id = conversation_id(&app, &admin, &public_id).await;
        let (_, list) = app.authed(Method::GET, &format!("/api/v1/mobile/conversations/{id}/messages"), &admin, None).await;
        let seen = list["messages"].as_array().unwrap().iter().find(|m| m["attachments"].as_array().is_some_and(|l| !l.is_empty()));
        assert_eq!(seen.expect("the operator sees the picture")["attachments"][0]["content_type"], "image/png");
        let (status, up) = operator_upload(&app, &admin, id, "Guide März.pdf", PDF).await;
        assert_eq!(status, StatusCode::CREATED, "{up}");
        assert_eq!(up["attachment"]["content_type"], "application/pdf");
        assert!(up["attachment"].get("width").is_none());
        let reply = json!({"body": "Here is the guide", "attachment_ids": [up["attachment"]["id"]]});
        let (status, sent) = app.authed(Method::POST, &format!("/api/v1/mobile/conversations/{id}/messages"), &admin, Some(reply)).await;
        assert_eq!(status, StatusCode::OK, "{sent}");
        assert!(sent["message"]["attachments"][0].get("thumbnail_url").is_none());

        // The visitor's widget gets it, as a download.
        let (_, poll) = app.get(&format!("{prefix}/widget/conversations/{public_id}/messages?token={}", f.token)).await;
        let answer = poll["messages"].as_array().unwrap().last().expect("the answer").clone();
        assert_eq!(answer["body"], "Here is the guide");
        let (status, headers, bytes) = fetch(&app, answer["attachments"][0]["url"].as_str().unwrap()).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(bytes, PDF);
        assert_eq!(headers["content-type"], "application/octet-stream", "never rendered by the browser");
        assert_eq!(headers["content-disposition"], "attachment; filename=\"Guide M_rz.pdf\"; filename*=UTF-8''Guide%20M%C3%A4rz.pdf");
        assert_eq!(headers["content-security-policy"], "sandbox; default-src 'none'");
    }
    // Kept private on disk.
    #[cfg(unix)]
    for file in stored_files(&app) {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(&file).unwrap().permissions().mode() & 0o777, 0o600, "{}", file.display());
    }
    app.stop().await;
}

#[tokio::test]
async fn webhooks_carry_the_attachments_with_links_signed_at_each_attempt() {
    let receiver = Receiver::start().await;
    let app = TestApp::with()
        .var("PARLEY_WEBHOOK_ALLOW_PRIVATE", "true")
        .var("PARLEY_WEBHOOK_POLL_INTERVAL", "20ms")
        .var("PARLEY_WEBHOOK_RETRY_SCHEDULE", "1m")
        .start()
        .await;
    let f = app.fixture("acme", &[]).await;
    let admin = app.login("admin@acme.example.com").await;
    crate::webhooks::register(&app, &admin, &receiver.url, Some(json!(["message.created"]))).await;
    let public_id = app.open_conversation("/api/v1", &f.token, "v1", "hello").await;
    // The first message's hook comes first, without files.
    let first = receiver.next().await.json();
    assert_eq!(first["data"]["message"]["attachments"], json!([]));
    let (_, up) = visitor_upload(&app, "/api/v1", &f.token, &public_id, "a.png", &png(40, 30)).await;
    receiver.reply(&[crate::receiver::Reply::Status(500)]);
    let path = format!("/api/v1/widget/conversations/{public_id}/messages");
    let (status, _) = app.post(&path, json!({"token": f.token, "body": "see", "attachment_ids": [up["attachment"]["id"]]})).await;
    assert_eq!(status, StatusCode::CREATED);
    let refused = receiver.next().await.json();
    let carried = &refused["data"]["message"]["attachments"][0];
    assert_eq!(carried["id"], up["attachment"]["id"]);
    assert_eq!((carried["width"].as_u64(), carried["height"].as_u64()), (Some(40), Some(30)));
    assert!(carried["thumbnail_url"].as_str().is_some());
    let (status, _, _) = fetch(&app, carried["url"].as_str().expect("a link")).await;
    assert_eq!(status, StatusCode::OK);
    // The retry, eleven minutes on, carries links signed then.
    app.clock.advance(Duration::from_secs(11 * 60));
    let retried = receiver.next().await.json();
    assert_eq!(retried["event_id"], refused["event_id"]);
    let again = retried["data"]["message"]["attachments"][0]["url"].as_str().expect("a link").to_owned();
    assert_ne!(again, carried["url"].as_str().unwrap(), "signed at the attempt");
    let (status, _, _) = fetch(&app, &again).await;
    assert_eq!(status, StatusCode::OK);
    app.stop().await;
}

#[tokio::test]
async fn refusals_change_nothing_and_leave_no_file() {
    let app = TestApp::with().var("PARLEY_ATTACHMENT_MAX", "64KiB").start().await;
    let f = app.fixture("acme", &[]).await;
    let public_id = app.open_conversation("/api/v1", &f.token, "v1", "hello").await;
    let upload = |name: &'static str, bytes: Vec<u8>| {
        let (app, token, public_id) = (&app, f.token.clone(), public_id.clone());
        async move { visitor_upload(app, "/api/v1", &token, &public_id, name, &bytes).await }
    };

    let (status, body) = upload("big.png", vec![0x89; 65 * 1024]).await;
    assert_error(status, &body, StatusCode::PAYLOAD_TOO_LARGE, "payload_too_large");
    assert!(body["error"]["message"].as_str().unwrap().contains("64 KiB"), "{body}");
    // The limit holds while reading too, without a declared length.
    let (content_type, bytes) = form("file", "big.bin", &vec![b'a'; 200 * 1024]);
    let path = format!("/api/v1/widget/conversations/{public_id}/attachments?token={}", f.token);
    let response = post_in_pieces(&app, &path, &content_type, &bytes, 8192).await.expect("a streamed upload");
    assert_eq!(response.status(), StatusCode::PAYLOAD_TOO_LARGE);

    let (status, body) = upload("setup.exe", b"MZ\x90\0\x03\0\0\0\x04\0\0\0\xff\xff\0\0".to_vec()).await;
    assert_fields(status, &body, &["file"]);
    assert!(body["error"]["fields"]["file"][0].as_str().unwrap().contains("images, pdf, text, office"), "{body}");
    let (status, body) = upload("empty.txt", Vec::new()).await;
    assert_fields(status, &body, &["file"]);

    // Not a form, or a form without its file.
    let path = format!("/api/v1/widget/conversations/{public_id}/attachments?token={}", f.token);
    let (status, body) = upload_raw(&app, &path, None, "application/json", b"{}".to_vec()).await;
    assert_error(status, &body, StatusCode::UNSUPPORTED_MEDIA_TYPE, "unsupported_media_type");
    let (content_type, bytes) = form("other", "a.txt", b"hello");
    let (status, body) = upload_raw(&app, &path, None, &content_type, bytes).await;
    assert_fields(status, &body, &["file"]);
    let (status, body) = upload_raw(&app, &path, None, "multipart/form-data; boundary=x", b"garbage".to_vec()).await;
    assert_fields(status, &body, &["file"]);
    // No token, a wrong one, another conversation's id.
    let (content_type, bytes) = form("file", "a.txt", b"hello");
    let no_token = format!("/api/v1/widget/conversations/{public_id}/attachments");
    let (status, body) = upload_raw(&app, &no_token, None, &content_type, bytes.clone()).await;
    assert_fields(status, &body, &["token"]);
    let wrong = format!("/api/v1/widget/conversations/conv_nothing/attachments?token={}", f.token);
    let (status, body) = upload_raw(&app, &wrong, None, &content_type, bytes).await;
    assert_error(status, &body, StatusCode::NOT_FOUND, "not_found");

    assert!(stored_files(&app).is_empty(), "nothing kept: {:?}", stored_files(&app));
    assert_eq!(attachment_rows(&app).await, 0);

    // A message needs text or a file.
    let (status, body) = app.post(&format!("/api/v1/widget/conversations/{public_id}/messages"), json!({"token": f.token})).await;
    assert_fields(status, &body, &["body"]);
    let eleven: Vec<String> = (0..11).map(|i| format!("att_{:0>24}", i)).collect();
    let (status, body) =
        app.post(&format!("/api/v1/widget/conversations/{public_id}/messages"), json!({"token": f.token, "attachment_ids": eleven})).await;
    assert_fields(status, &body, &["attachment_ids"]);
    let (status, body) = app
        .post(&format!("/api/v1/widget/conversations/{public_id}/messages"), json!({"token": f.token, "attachment_ids": ["not an id"]}))
        .await;
    assert_fields(status, &body, &["attachment_ids"]);
    app.stop().await;
}

#[tokio::test]
async fn the_quota_counts_every_file_of_the_tenant() {
    let app = TestApp::with().var("PARLEY_FILES_QUOTA_PER_TENANT", "40000").start().await;
    let f = app.fixture("acme", &[]).await;
    let other = app.fixture("globex", &[]).await;
    let public_id = app.open_conversation("/api/v1", &f.token, "v1", "hello").await;
    let text = vec![b'x'; 30_000];
    let (status, body) = visitor_upload(&app, "/api/v1", &f.token, &public_id, "a.txt", &text).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let (status, body) = visitor_upload(&app, "/api/v1", &f.token, &public_id, "b.txt", &text).await;
    assert_error(status, &body, StatusCode::UNPROCESSABLE_ENTITY, "quota_exceeded");
    assert_eq!(stored_files(&app).len(), 1, "the refused file is not kept");
    // Another tenant has its own.
    let theirs = app.open_conversation("/api/v1", &other.token, "v2", "hello").await;
    let (status, body) = visitor_upload(&app, "/api/v1", &other.token, &theirs, "b.txt", &text).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    app.stop().await;
}

#[tokio::test]
async fn an_upload_is_named_once_by_its_own_side_in_its_own_conversation() {
    let app = TestApp::spawn().await;
    let f = app.fixture("acme", &[]).await;
    let second_site = app.site("acme-docs", f.scope.tenant, &[]).await;
    let other = app.fixture("globex", &[]).await;
    let admin = app.login("admin@acme.example.com").await;
    app.operator(&f, "agent@acme.example.com", Role::Agent, &[second_site.scope.site]).await;
    let agent = app.login("agent@acme.example.com").await;

    let mine = app.open_conversation("/api/v1", &f.token, "v1", "hello").await;
    let another = app.open_conversation("/api/v1", &f.token, "v2", "hello").await;
    let (_, up) = visitor_upload(&app, "/api/v1", &f.token, &mine, "a.txt", b"hello there").await;
    let id = up["attachment"]["id"].clone();
    let send = |public_id: &str, token: &str, ids: Value| {
        let path = format!("/api/v1/widget/conversations/{public_id}/messages");
        let body = json!({"token": token, "body": "see", "attachment_ids": ids});
        let app = &app;
        async move { app.post(&path, body).await }
    };

    // Another conversation of the same site, or another tenant's token.
    let (status, body) = send(&another, &f.token, json!([id])).await;
    assert_fields(status, &body, &["attachment_ids"]);
    let (status, body) = send(&mine, &other.token, json!([id])).await;
    assert_error(status, &body, StatusCode::NOT_FOUND, "not_found");
    // The operator side may not send the visitor's upload.
    let conversation = conversation_id(&app, &admin, &mine).await;
    let path = format!("/api/v1/mobile/conversations/{conversation}/messages");
    let (status, body) = app.authed(Method::POST, &path, &admin, Some(json!({"attachment_ids": [id]}))).await;
    assert_fields(status, &body, &["attachment_ids"]);
    // Twice in one message, then once, then never again.
    let (status, body) = send(&mine, &f.token, json!([id, id])).await;
    assert_fields(status, &body, &["attachment_ids"]);
    let (status, body) = send(&mine, &f.token, json!([id])).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let (status, body) = send(&mine, &f.token, json!([id])).await;
    assert_fields(status, &body, &["attachment_ids"]);

    // Uploads into what the caller cannot see: another tenant's or
    // another site's conversation, an agent without the site.
    let (status, body) = visitor_upload(&app, "/api/v1", &other.token, &mine, "a.txt", b"hi").await;
    assert_error(status, &body, StatusCode::NOT_FOUND, "not_found");
    let (status, body) = visitor_upload(&app, "/api/v1", &second_site.token, &mine, "a.txt", b"hi").await;
    assert_error(status, &body, StatusCode::NOT_FOUND, "not_found");
    let (status, body) = operator_upload(&app, &agent, conversation, "a.txt", b"hi").await;
    assert_error(status, &body, StatusCode::NOT_FOUND, "not_found");
    let (content_type, bytes) = form("file", "a.txt", b"hi");
    let path = format!("/api/v1/mobile/conversations/{conversation}/attachments");
    let (status, body) = upload_raw(&app, &path, None, &content_type, bytes).await;
    assert_error(status, &body, StatusCode::UNAUTHORIZED, "unauthenticated");
    let other_admin = app.login("admin@globex.example.com").await;
    let (status, body) = operator_upload(&app, &other_admin, conversation, "a.txt", b"hi").await;
    assert_error(status, &body, StatusCode::NOT_FOUND, "not_found");
    app.stop().await;
}

#[tokio::test]
async fn links_open_only_what_they_name_until_they_expire() {
    let app = TestApp::spawn().await;
    let f = app.fixture("acme", &[]).await;
    let public_id = app.open_conversation("/api/v1", &f.token, "v1", "hello").await;
    let (_, up) = visitor_upload(&app, "/api/v1", &f.token, &public_id, "a.txt", b"hello there").await;
    let (_, other) = visitor_upload(&app, "/api/v1", &f.token, &public_id, "b.txt", b"something else").await;
    let path = format!("/api/v1/widget/conversations/{public_id}/messages");
    let ids = json!([up["attachment"]["id"], other["attachment"]["id"]]);
    let (_, sent) = app.post(&path, json!({"token": f.token, "attachment_ids": ids})).await;
    let url = sent["message"]["attachments"][0]["url"].as_str().unwrap().to_owned();
    let other_url = sent["message"]["attachments"][1]["url"].as_str().unwrap().to_owned();
    let (status, _, bytes) = fetch(&app, &url).await;
    assert_eq!((status, bytes.as_slice()), (StatusCode::OK, b"hello there".as_slice()));

    let sig = |u: &str| u.split("sig=").nth(1).unwrap().to_owned();
    let expires = |u: &str| u.split("expires=").nth(1).unwrap().split('&').next().unwrap().to_owned();
    let id = up["attachment"]["id"].as_str().unwrap();
    let other_id = other["attachment"]["id"].as_str().unwrap();
    for (bad, why) in [
        (format!("/api/v1/files/{other_id}?expires={}&sig={}", expires(&url), sig(&url)), "another file's signature"),
        (format!("/api/v1/files/{id}?expires={}&sig={}", expires(&url).parse::<i64>().unwrap() + 600, sig(&url)), "a later expiry"),
        (format!("/api/v1/files/{id}/thumbnail?expires={}&sig={}", expires(&url), sig(&url)), "the thumbnail"),
        (format!("/api/v1/files/{id}?expires={}&sig=AAAA", expires(&url)), "a made-up signature"),
    ] {
        let (status, body) = app.get(&bad).await;
        assert_error(status, &body, StatusCode::FORBIDDEN, "forbidden");
        assert!(!body.to_string().contains("hello"), "{why}");
    }
    let (status, body) = app.get(&format!("/api/v1/files/{id}?expires=soon&sig={}", sig(&url))).await;
    assert_fields(status, &body, &["expires"]);
    let (status, body) = app.get(&format!("/api/v1/files/{id}")).await;
    assert_fields(status, &body, &["expires", "sig"]);
    // The original's link does not open the thumbnail: the signature
    // names the variant.
    let (status, _, _) = fetch(&app, &other_url.replacen(other_id, &format!("{other_id}/thumbnail"), 1)).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "the signature names the original");
    // And a picture-less file has no thumbnail, even through a link
    // signed for one with the installation's own key.
    let clock: std::sync::Arc<dyn parley_domain::Clock> = app.clock.clone();
    let keys = parley_domain::keys::ServerKeys::load(&app.db, &clock).await.expect("the installation's keys");
    let links = parley_domain::attachments::links::Links::new(&keys, &app.base, clock);
    let thumbnail = links.url(other_id, parley_domain::attachments::links::Variant::Thumbnail);
    let (status, _, _) = fetch(&app, &thumbnail).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "a real link to a thumbnail that is not there");

    app.clock.advance(Duration::from_secs(3600 + 600));
    let (status, body) = app.get(&url.split_once("/api/").map(|(_, p)| format!("/api/{p}")).unwrap()).await;
    assert_error(status, &body, StatusCode::FORBIDDEN, "forbidden");
    assert!(body["error"]["message"].as_str().unwrap().contains("expired"), "{body}");
    // A fresh read of the messages gives fresh links.
    let (_, poll) = app.get(&format!("/api/v1/widget/conversations/{public_id}/messages?token={}", f.token)).await;
    let fresh = poll["messages"].as_array().unwrap().last().unwrap()["attachments"][0]["url"].as_str().unwrap().to_owned();
    assert_ne!(fresh, url);
    let (status, _, _) = fetch(&app, &fresh).await;
    assert_eq!(status, StatusCode::OK);
    app.stop().await;
}

#[tokio::test]
async fn a_picture_too_large_to_decode_is_a_download_and_names_are_made_safe() {
    let app = TestApp::spawn().await;
    let f = app.fixture("acme", &[]).await;
    let public_id = app.open_conversation("/api/v1", &f.token, "v1", "hello").await;
    // A real bomb: 6,000 x 5,000 of one grey (120 MB as RGBA), a few
    // tens of kilobytes compressed.
    let bomb = {
        use image::ImageEncoder;
        let mut out = Vec::new();
        let encoder = image::codecs::png::PngEncoder::new_with_quality(
            &mut out,
            image::codecs::png::CompressionType::Fast,
            image::codecs::png::FilterType::NoFilter,
        );
        encoder.write_image(&vec![0u8; 6_000 * 5_000], 6_000, 5_000, image::ExtendedColorType::L8).expect("png");
        out
    };
    assert!(bomb.len() < 200_000, "{}", bomb.len());
    let (status, up) = visitor_upload(&app, "/api/v1", &f.token, &public_id, "../../etc/bomb\u{202e}gnp.png", &bomb).await;
    assert_eq!(status, StatusCode::CREATED, "{up}");
    assert_eq!(up["attachment"]["content_type"], "image/png");
    assert!(up["attachment"].get("width").is_none(), "not decoded: {up}");
    assert_eq!(up["attachment"]["name"], "bombgnp.png", "no path, no direction mark");
    let path = format!("/api/v1/widget/conversations/{public_id}/messages");
    let (_, sent) = app.post(&path, json!({"token": f.token, "attachment_ids": [up["attachment"]["id"]]})).await;
    let carried = &sent["message"]["attachments"][0];
    assert!(carried.get("thumbnail_url").is_none());
    let (status, headers, _) = fetch(&app, carried["url"].as_str().unwrap()).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(headers["content-type"], "application/octet-stream");
    assert_eq!(headers["content-disposition"], "attachment; filename=\"bombgnp.png\"");

    // Markup is text: never a picture, never inline.
    let svg = br#"<svg xmlns="http://www.w3.org/2000/svg"><script>alert(document.cookie)</script></svg>"#;
    let (status, up) = visitor_upload(&app, "/api/v1", &f.token, &public_id, "logo.svg", svg).await;
    assert_eq!(status, StatusCode::CREATED, "{up}");
    assert_eq!(up["attachment"]["content_type"], "text/plain");
    let (_, sent) = app.post(&path, json!({"token": f.token, "attachment_ids": [up["attachment"]["id"]]})).await;
    let (_, headers, _) = fetch(&app, sent["message"]["attachments"][0]["url"].as_str().unwrap()).await;
    assert_eq!(headers["content-type"], "application/octet-stream");
    assert!(headers["content-disposition"].to_str().unwrap().starts_with("attachment;"));
    app.stop().await;
}

#[tokio::test]
async fn uploads_no_message_names_go_after_a_day() {
    let app = TestApp::with().var("PARLEY_SWEEP_INTERVAL", "20ms").start().await;
    let f = app.fixture("acme", &[]).await;
    let public_id = app.open_conversation("/api/v1", &f.token, "v1", "hello").await;
    let (_, kept) = visitor_upload(&app, "/api/v1", &f.token, &public_id, "kept.png", &png(50, 50)).await;
    let (_, left) = visitor_upload(&app, "/api/v1", &f.token, &public_id, "left.png", &png(60, 60)).await;
    let path = format!("/api/v1/widget/conversations/{public_id}/messages");
    let (status, _) = app.post(&path, json!({"token": f.token, "attachment_ids": [kept["attachment"]["id"]]})).await;
    assert_eq!(status, StatusCode::CREATED);
    assert_eq!(stored_files(&app).len(), 4, "two pictures and their thumbnails");

    app.clock.advance(Duration::from_secs(86_400 + 60));
    eventually(|| async { (stored_files(&app).len() == 2).then_some(()) }).await;
    let (status, body) = app.post(&path, json!({"token": f.token, "attachment_ids": [left["attachment"]["id"]]})).await;
    assert_fields(status, &body, &["attachment_ids"]);
    // The one a message named stays, and is served.
    let (_, poll) = app.get(&format!("/api/v1/widget/conversations/{public_id}/messages?token={}", f.token)).await;
    let named = poll["messages"].as_array().unwrap().iter().find(|m| m["attachments"][0]["url"].is_string()).expect("the message");
    let (status, _, _) = fetch(&app, named["attachments"][0]["url"].as_str().unwrap()).await;
    assert_eq!(status, StatusCode::OK);
    app.stop().await;
}

#[tokio::test]
async fn a_site_chooses_the_kinds_of_file_it_takes() {
    let app = TestApp::spawn().await;
    let f = app.fixture("acme", &[]).await;
    let admin = app.login("admin@acme.example.com").await;
    let path = format!("/api/v1/admin/sites/{}", f.scope.site.0);
    let (status, body) = app.authed(Method::PATCH, &path, &admin, Some(json!({"attachment_types": ["pdf", "pdf", "archives"]}))).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["site"]["attachment_types"], json!(["pdf", "archives"]));
    let (status, body) = app.authed(Method::PATCH, &path, &admin, Some(json!({"attachment_types": ["movies"]}))).await;
    assert_fields(status, &body, &["attachment_types"]);
    let (status, body) = app.authed(Method::PATCH, &path, &admin, Some(json!({"attachment_types": "pdf"}))).await;
    assert_fields(status, &body, &["attachment_types"]);

    let public_id = app.open_conversation("/api/v1", &f.token, "v1", "hello").await;
    let (status, body) = visitor_upload(&app, "/api/v1", &f.token, &public_id, "a.png", &png(10, 10)).await;
    assert_fields(status, &body, &["file"]);
    assert!(body["error"]["fields"]["file"][0].as_str().unwrap().contains("(pdf, archives)"), "{body}");
    let (status, body) = visitor_upload(&app, "/api/v1", &f.token, &public_id, "a.pdf", PDF).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    // None at all.
    let (status, _) = app.authed(Method::PATCH, &path, &admin, Some(json!({"attachment_types": []}))).await;
    assert_eq!(status, StatusCode::OK);
    let (status, body) = visitor_upload(&app, "/api/v1", &f.token, &public_id, "b.pdf", PDF).await;
    assert_fields(status, &body, &["file"]);
    assert!(body["error"]["fields"]["file"][0].as_str().unwrap().contains("no files"), "{body}");
    app.stop().await;
}

/// Rows of the attachments table, counted the way an administrator would.
async fn attachment_rows(app: &TestApp) -> i64 {
    let url = app.database_url.clone();
    tokio::task::spawn_blocking(move || match url.strip_prefix("sqlite://") {
        Some(path) => rusqlite::Connection::open(path).unwrap().query_row("SELECT COUNT(*) FROM attachments", [], |r| r.get(0)).unwrap(),
        None => {
            postgres::Client::connect(&url, postgres::NoTls).unwrap().query_one("SELECT COUNT(*) FROM attachments", &[]).unwrap().get(0)
        }
    })
    .await
    .unwrap()
}

#[tokio::test]
async fn refused_uploads_leave_no_row_and_a_conversation_holds_twenty_unsent() {
    let app = TestApp::with().var("PARLEY_ATTACHMENT_MAX", "4KiB").start().await;
    let f = app.fixture("acme", &[]).await;
    let public_id = app.open_conversation("/api/v1", &f.token, "v1", "hello").await;
    for (name, bytes) in [("big.txt", vec![b'a'; 5000]), ("x.exe", b"MZ\x90\0\x03\0\0\0\x04\0\0\0".to_vec()), ("e.txt", Vec::new())] {
        let (status, _) = visitor_upload(&app, "/api/v1", &f.token, &public_id, name, &bytes).await;
        assert!(status.is_client_error(), "{name}: {status}");
    }
    assert_eq!(attachment_rows(&app).await, 0, "no row of a refused upload is left");
    for i in 0..20 {
        let (status, body) = visitor_upload(&app, "/api/v1", &f.token, &public_id, &format!("{i}.txt"), b"a note").await;
        assert_eq!(status, StatusCode::CREATED, "{i}: {body}");
    }
    let (status, body) = visitor_upload(&app, "/api/v1", &f.token, &public_id, "21.txt", b"a note").await;
    assert_fields(status, &body, &["file"]);
    assert!(body["error"]["fields"]["file"][0].as_str().unwrap().contains("20 files already wait"), "{body}");
    // The operators' side has its own twenty.
    let admin = app.login("admin@acme.example.com").await;
    let id = conversation_id(&app, &admin, &public_id).await;
    let (status, body) = operator_upload(&app, &admin, id, "ok.txt", b"from us").await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    app.stop().await;
}

#[tokio::test]
async fn an_upload_that_trickles_past_the_read_time_is_408_and_leaves_nothing() {
    let app = TestApp::with().var("PARLEY_REQUEST_READ_TIMEOUT", "300ms").start().await;
    let f = app.fixture("acme", &[]).await;
    let public_id = app.open_conversation("/api/v1", &f.token, "v1", "hello").await;
    let (content_type, body) = form("file", "slow.txt", &vec![b'a'; 3000]);
    // Half the body, then nothing more: the server answers on its own.
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut socket = tokio::net::TcpStream::connect(app.base.trim_start_matches("http://")).await.unwrap();
    let head = format!(
        "POST /api/v1/widget/conversations/{public_id}/attachments?token={} HTTP/1.1\r\nHost: x\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n\r\n",
        f.token,
        body.len()
    );
    socket.write_all(head.as_bytes()).await.unwrap();
    socket.write_all(&body[..body.len() / 2]).await.unwrap();
    let mut answer = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(10), socket.read_to_end(&mut answer)).await;
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains("request_timeout"), "{answer}");
    eventually(|| async { (attachment_rows(&app).await == 0 && stored_files(&app).is_empty()).then_some(()) }).await;
    app.stop().await;
}

#[tokio::test]
async fn operator_uploads_refuse_what_the_widgets_do_and_the_web_app_checks_its_token() {
    let app = TestApp::with().var("PARLEY_ATTACHMENT_MAX", "4KiB").start().await;
    let f = app.fixture("acme", &[]).await;
    let second_site = app.site("acme-docs", f.scope.tenant, &[]).await;
    app.fixture("globex", &[]).await;
    app.operator(&f, "agent@acme.example.com", Role::Agent, &[second_site.scope.site]).await;
    let admin = app.login("admin@acme.example.com").await;
    let public_id = app.open_conversation("/api/v1", &f.token, "v1", "hello").await;
    let id = conversation_id(&app, &admin, &public_id).await;
    let (status, body) = operator_upload(&app, &admin, id, "big.txt", &vec![b'a'; 5000]).await;
    assert_error(status, &body, StatusCode::PAYLOAD_TOO_LARGE, "payload_too_large");
    let (status, body) = operator_upload(&app, &admin, id, "empty.txt", b"").await;
    assert_fields(status, &body, &["file"]);
    let path = format!("/api/v1/mobile/conversations/{id}/attachments");
    let (status, body) = upload_raw(&app, &path, Some(&admin), "text/plain", b"hello".to_vec()).await;
    assert_error(status, &body, StatusCode::UNSUPPORTED_MEDIA_TYPE, "unsupported_media_type");

    // The web app's route: the session, its token in the header, from this site.
    let (content_type, bytes) = form("file", "notes.txt", b"some notes");
    let route = format!("/app/conversations/{id}/attachments");
    let mut admin_page = crate::web_browser::Browser::signed_in(&app, "admin@acme.example.com").await;
    let token = admin_page.conversation(id).await.field("csrf");
    let forged = admin_page.post_raw(&route, &content_type, bytes.clone(), &[]).await;
    assert_eq!(forged.status, StatusCode::FORBIDDEN, "no token");
    let forged = admin_page.post_raw(&route, &content_type, bytes.clone(), &[("x-parley-csrf", "wrong")]).await;
    assert_eq!(forged.status, StatusCode::FORBIDDEN, "a wrong token");
    let forged =
        admin_page.post_raw(&route, &content_type, bytes.clone(), &[("x-parley-csrf", &token), ("sec-fetch-site", "cross-site")]).await;
    assert_eq!(forged.status, StatusCode::FORBIDDEN, "from another site");
    let taken = admin_page.post_raw(&route, &content_type, bytes.clone(), &[("x-parley-csrf", &token)]).await;
    assert_eq!(taken.status, StatusCode::CREATED, "{}", taken.html);
    let upload: Value = serde_json::from_str(&taken.html).unwrap();
    // Sent with a reply of the form, without text.
    let page = admin_page.conversation(id).await;
    let client_id = page.field("client_message_id");
    let ids = upload["attachment"]["id"].as_str().unwrap().to_owned();
    let sent = admin_page
        .post(&format!("/app/conversations/{id}/reply"), &[("csrf", &token), ("client_message_id", &client_id), ("attachment_ids", &ids)])
        .await;
    assert_eq!(sent.status, StatusCode::SEE_OTHER, "{}", sent.html);
    let shown = admin_page.conversation(id).await;
    assert!(shown.html.contains("notes.txt") && shown.html.contains("/files/"), "the page shows the file with its link");
    let empty = admin_page.post(&format!("/app/conversations/{id}/reply"), &[("csrf", &token), ("body", "")]).await;
    assert_eq!(empty.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(empty.html.contains("The reply is required."), "{}", empty.html);
    // Another tenant's admin, and an agent without the site.
    for who in ["admin@globex.example.com", "agent@acme.example.com"] {
        let mut other = crate::web_browser::Browser::signed_in(&app, who).await;
        let inbox = other.inbox("").await;
        let their_token = inbox.field("csrf");
        let refused = other.post_raw(&route, &content_type, bytes.clone(), &[("x-parley-csrf", &their_token)]).await;
        assert_eq!(refused.status, StatusCode::NOT_FOUND, "{who}: {}", refused.html);
    }
    app.stop().await;
}

#[tokio::test]
async fn identified_only_installations_take_uploads_from_identified_visitors_only() {
    let app = TestApp::spawn().await;
    let f = app.fixture("acme", &[]).await;
    let public_id = app.open_conversation("/api/v1", &f.token, "v1", "hello").await;
    let admin = app.login("admin@acme.example.com").await;
    let (_, list) = app.authed(Method::GET, &format!("/api/v1/admin/sites/{}/installations", f.scope.site.0), &admin, None).await;
    let installation = list["installations"][0]["id"].as_i64().unwrap();
    let path = format!("/api/v1/admin/installations/{installation}");
    let (status, _) = app.authed(Method::POST, &format!("{path}/identity-secret"), &admin, None).await;
    assert_eq!(status, StatusCode::OK);
    let (status, body) = app.authed(Method::PATCH, &path, &admin, Some(json!({"identity_required": true}))).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, body) = visitor_upload(&app, "/api/v1", &f.token, &public_id, "a.txt", b"hello").await;
    assert_error(status, &body, StatusCode::UNAUTHORIZED, "identity_required");
    app.stop().await;
}

#[tokio::test]
async fn the_caller_is_checked_before_the_body_is_read_and_the_file_must_come_first() {
    let app = TestApp::spawn().await;
    let f = app.fixture("acme", &[]).await;
    let public_id = app.open_conversation("/api/v1", &f.token, "v1", "hello").await;
    // A wrong token is refused as it is, whatever follows: a body larger
    // than any limit is not read for it.
    let (content_type, body) = form("file", "big.txt", &vec![b'a'; 12 * 1024 * 1024]);
    let path = format!("/api/v1/widget/conversations/{public_id}/attachments?token=pk_nobody_at_all");
    let (status, answer) = upload_raw(&app, &path, None, &content_type, body).await;
    assert_error(status, &answer, StatusCode::NOT_FOUND, "not_found");
    // 64 KiB of other fields before the file's part is as much as a form
    // may bring, counted as it arrives (here in pieces, as a client that
    // trickles a part's endless headers sends them).
    let junk = vec![b'j'; 96 * 1024];
    let mut body = b"--b\r\nContent-Disposition: form-data; name=\"junk\"\r\n\r\n".to_vec();
    body.extend_from_slice(&junk);
    body.extend_from_slice(b"\r\n--b\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.txt\"\r\n\r\nhello\r\n--b--\r\n");
    let path = format!("/api/v1/widget/conversations/{public_id}/attachments?token={}", f.token);
    let response = post_in_pieces(&app, &path, "multipart/form-data; boundary=b", &body, 4096).await.expect("a form in pieces");
    let status = response.status();
    let answer: Value = response.json().await.expect("json");
    assert_fields(status, &answer, &["file"]);
    assert!(answer["error"]["fields"]["file"][0].as_str().unwrap().contains("first 64 KiB"), "{answer}");
    // A small field before the file is read and dropped.
    let mut body = b"--b\r\nContent-Disposition: form-data; name=\"note\"\r\n\r\nhi\r\n".to_vec();
    body.extend_from_slice(b"--b\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.txt\"\r\n\r\nhello\r\n--b--\r\n");
    let (status, answer) = upload_raw(&app, &path, None, "multipart/form-data; boundary=b", body).await;
    assert_eq!(status, StatusCode::CREATED, "{answer}");
    // Names get an extension that fits what the file is.
    let (status, up) =
        visitor_upload(&app, "/api/v1", &f.token, &public_id, "invoice.pdf.hta", b"<html><script>run()</script></html>").await;
    assert_eq!(status, StatusCode::CREATED, "{up}");
    assert_eq!(up["attachment"]["name"], "invoice.pdf.hta.txt");
    let (_, up) = visitor_upload(&app, "/api/v1", &f.token, &public_id, "setup.exe", PDF).await;
    assert_eq!(up["attachment"]["name"], "setup.exe.pdf");
    app.stop().await;
}
