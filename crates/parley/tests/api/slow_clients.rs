//! Slow and idle clients: half-sent headers, bodies that never come, idle
//! keep-alive connections, and the connection cap.

use std::time::Duration;

use reqwest::StatusCode;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::helpers::*;

/// A socket that sent part of a request's headers and then nothing.
async fn stalled(addr: &str) -> TcpStream {
    let mut s = TcpStream::connect(addr).await.expect("connect");
    s.write_all(b"GET /health HTTP/1.1\r\nHost: parley\r\nX-Slow: ").await.expect("write");
    s
}

/// Reads until the server closes the connection; returns what it sent.
async fn read_to_close(s: &mut TcpStream) -> String {
    let mut buf = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), s.read_to_end(&mut buf)).await.expect("the server closes the connection").ok();
    String::from_utf8_lossy(&buf).into_owned()
}

/// `parley <command>` with `env`, under an open-file limit of 256, so a
/// connection cap of 128: the server process and its base URL.
async fn under_file_limit(dir: &tempfile::TempDir, command: &str, env: &[(&str, &str)]) -> (tokio::process::Child, String) {
    let script = format!("ulimit -n 256 && exec {} {command}", crate::cli::BIN);
    let mut cmd = crate::cli::command("sh", dir.path());
    cmd.envs(env.iter().copied()).args(["-c", &script]);
    crate::cli::spawn_server(&mut cmd).await
}

fn host(app: &TestApp) -> String {
    app.base.trim_start_matches("http://").to_owned()
}

#[tokio::test]
async fn half_sent_headers_are_cut_off() {
    let app = TestApp::with().var("PARLEY_REQUEST_HEADER_TIMEOUT", "1s").start().await;
    let mut s = stalled(&host(&app)).await;
    // The connection closes (hyper may first answer 408); before the
    // header timeout existed it stayed open for as long as the client liked.
    let answer = read_to_close(&mut s).await;
    assert!(answer.is_empty() || answer.starts_with("HTTP/1.1 408"), "{answer}");
}

#[tokio::test]
async fn a_body_that_never_arrives_gets_408_and_the_connection_closes() {
    let app = TestApp::with().var("PARLEY_REQUEST_READ_TIMEOUT", "1s").start().await;
    let mut s = TcpStream::connect(host(&app)).await.unwrap();
    let head =
        "POST /api/v1/mobile/login HTTP/1.1\r\nHost: parley\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"email\":";
    s.write_all(head.as_bytes()).await.unwrap();
    let answer = read_to_close(&mut s).await;
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains(r#""code":"request_timeout""#), "{answer}");
}

/// An idle keep-alive connection outlives the header timeout (a proxy in
/// front reuses it) and closes after the idle timeout.
#[tokio::test]
async fn idle_keep_alive_connections_stay_for_the_idle_time_then_close() {
    let app = TestApp::with().var("PARLEY_REQUEST_HEADER_TIMEOUT", "1s").var("PARLEY_IDLE_TIMEOUT", "3s").start().await;
    let mut s = TcpStream::connect(host(&app)).await.unwrap();
    let request = b"GET /health HTTP/1.1\r\nHost: parley\r\n\r\n";
    s.write_all(request).await.unwrap();
    let mut buf = vec![0u8; 4096];
    let n = s.read(&mut buf).await.unwrap();
    assert!(buf[..n].starts_with(b"HTTP/1.1 200"));
    // Longer than the header timeout, shorter than the idle timeout.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    s.write_all(request).await.unwrap();
    let answer = read_to_close(&mut s).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "the connection was still usable: {answer}");
}

#[tokio::test]
async fn connections_beyond_the_cap_wait_for_a_free_slot() {
    let app = TestApp::with().var("PARLEY_MAX_CONNECTIONS", "3").var("PARLEY_REQUEST_HEADER_TIMEOUT", "60s").start().await;
    let mut held = Vec::new();
    for _ in 0..3 {
        held.push(stalled(&host(&app)).await);
    }
    let client = app.client.clone();
    let url = app.url("/health");
    let waiting = tokio::spawn(async move { client.get(url).send().await.map(|r| r.status()) });
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!waiting.is_finished(), "the fourth connection is not served while three are open");
    drop(held.pop());
    let status = tokio::time::timeout(Duration::from_secs(10), waiting).await.expect("served once a slot frees").unwrap().unwrap();
    assert_eq!(status, StatusCode::OK);
}

/// With the open-file limit at 256, three hundred sockets that stall in
/// their headers do not keep `/health` unreachable: the connection cap
/// stays below the limit and the header timeout frees the slots.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stalled_sockets_do_not_starve_health_under_a_low_file_limit() {
    let dir = tempfile::tempdir().unwrap();
    let (mut child, base) = under_file_limit(&dir, "serve", &[("PARLEY_REQUEST_HEADER_TIMEOUT", "1s")]).await;
    let addr = base.trim_start_matches("http://").to_owned();
    let mut held = Vec::new();
    for _ in 0..300 {
        held.push(stalled(&addr).await);
    }
    let client = http_client();
    let res = tokio::time::timeout(Duration::from_secs(20), client.get(format!("{base}/health")).send())
        .await
        .expect("/health answers while the stalled sockets are still open")
        .expect("request");
    assert_eq!(res.status(), StatusCode::OK);
    drop(held);
    child.kill().await.ok();
}

/// A client that asks for a large answer and never reads it does not keep
/// the connection (and the answer's memory): once the write has made no
/// progress for the write timeout, the connection ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_never_reads_its_answer_is_dropped() {
    let app = TestApp::with().var("PARLEY_RESPONSE_WRITE_TIMEOUT", "1s").start().await;
    let f = app.fixture("acme", &[]).await;
    let public_id = app.open_conversation("/api", &f.token, "v", "start").await;
    let admin = app.login("admin@acme.example.com").await;
    let (_, list) = app.authed(reqwest::Method::GET, "/api/v1/mobile/conversations", &admin, None).await;
    let id = list["conversations"][0]["id"].as_i64().unwrap();
    let big = "🦀".repeat(5000);
    for _ in 0..100 {
        let (status, _) = app
            .authed(
                reqwest::Method::POST,
                &format!("/api/v1/mobile/conversations/{id}/messages"),
                &admin,
                Some(serde_json::json!({"body": big})),
            )
            .await;
        assert_eq!(status, StatusCode::OK);
    }
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(1024).unwrap();
    let mut s = socket.connect(host(&app).parse().unwrap()).await.unwrap();
    let request = format!("GET /api/widget/conversations/{public_id}/messages?token={} HTTP/1.1\r\nHost: parley\r\n\r\n", f.token);
    s.write_all(request.as_bytes()).await.unwrap();
    // Not reading, for longer than the write timeout.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let mut sink = Vec::new();
    let ended = tokio::time::timeout(Duration::from_secs(5), s.read_to_end(&mut sink)).await;
    assert!(ended.is_ok(), "the server ended the connection; it did not wait for the reader ({} bytes read)", sink.len());
    assert!(sink.len() < 2_000_000, "the answer was cut short: {} bytes", sink.len());
}

/// With the open-file limit at 256 (a cap of 128 connections), three
/// hundred sockets that sent a request head and stalled in their bodies
/// would hold every slot for the whole body timeout (30 s) and come back
/// in waves. At the cap, the connection that has gone longest without a
/// whole request is closed to make room for one that waits: `/health`
/// answers within seconds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stalled_bodies_at_the_cap_make_room_for_health() {
    let dir = tempfile::tempdir().unwrap();
    let (mut child, base) = under_file_limit(&dir, "serve", &[]).await;
    let addr = base.trim_start_matches("http://").to_owned();
    let head =
        "POST /api/v1/mobile/login HTTP/1.1\r\nHost: parley\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"email\":";
    let mut held = Vec::new();
    for _ in 0..300 {
        let addr = addr.clone();
        held.push(tokio::spawn(async move {
            let mut s = TcpStream::connect(&addr).await.expect("connect");
            // Accepted later or not at all: the head waits in the socket.
            let _ = s.write_all(head.as_bytes()).await;
            s
        }));
    }
    let mut sockets = Vec::new();
    for h in held {
        sockets.push(h.await.unwrap());
    }
    let client = http_client();
    let res = tokio::time::timeout(Duration::from_secs(8), client.get(format!("{base}/health")).send())
        .await
        .expect("/health answers within seconds, not after the body timeout")
        .expect("request");
    assert_eq!(res.status(), StatusCode::OK);
    drop(sockets);
    child.kill().await.ok();
}

/// Bodies trickled just above the pace an upload keeps its place at,
/// on every slot, cannot keep a newcomer out: past half the slots they
/// make room as stalled ones do.
#[tokio::test]
async fn trickled_bodies_on_every_slot_make_room_for_health() {
    let dir = tempfile::tempdir().unwrap();
    let (mut child, base) = under_file_limit(&dir, "serve", &[]).await;
    let addr = base.trim_start_matches("http://").to_owned();
    let head = "POST /api/v1/mobile/login HTTP/1.1\r\nHost: parley\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n";
    let mut trickles = Vec::new();
    for _ in 0..140 {
        let addr = addr.clone();
        trickles.push(tokio::spawn(async move {
            let mut s = TcpStream::connect(&addr).await.expect("connect");
            let _ = s.write_all(head.as_bytes()).await;
            // 400 bytes a second, for longer than the test lasts.
            for _ in 0..200 {
                if s.write_all(&[b' '; 100]).await.is_err() {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
        }));
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let client = http_client();
    let res = tokio::time::timeout(Duration::from_secs(10), client.get(format!("{base}/health")).send())
        .await
        .expect("/health answers within seconds, not after the body timeout")
        .expect("request");
    assert_eq!(res.status(), StatusCode::OK);
    trickles.iter().for_each(|t| t.abort());
    child.kill().await.ok();
}

/// Sends `GET path` on a new connection from the loopback address `from`
/// and returns it with the status of its answer (the head only: a
/// stream's answer goes on).
async fn raw_get(from: [u8; 4], addr: &str, path: &str) -> (TcpStream, u16) {
    let socket = tokio::net::TcpSocket::new_v4().expect("socket");
    socket.bind(std::net::SocketAddr::from((from, 0))).expect("bind");
    let mut s = socket.connect(addr.parse().expect("an address")).await.expect("connect");
    s.write_all(format!("GET {path} HTTP/1.1\r\nHost: parley\r\nAccept: text/event-stream\r\n\r\n").as_bytes()).await.expect("write");
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        let n = tokio::time::timeout(Duration::from_secs(10), s.read(&mut byte)).await.expect("an answer").expect("read");
        assert_eq!(n, 1, "closed before its head: {}", String::from_utf8_lossy(&head));
        head.push(byte[0]);
    }
    let status = String::from_utf8_lossy(&head).split(' ').nth(1).and_then(|c| c.parse().ok()).expect("a status");
    (s, status)
}

/// Streams answer whole requests, so the overload rule never closes them:
/// no address, and no few addresses, may hold every connection with them.
/// With a cap of 128, an address holds at most 64 streams and all of them
/// together 112, and `/health` still answers while they are held.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streams_cannot_fill_the_connections() {
    let dir = tempfile::tempdir().unwrap();
    let (mut child, base) = under_file_limit(&dir, "demo", &[]).await;
    let addr = base.trim_start_matches("http://").to_owned();
    let client = http_client();
    let (token, public_id) = crate::cli::open_demo_conversation(&client, &base).await;
    let path = format!("/api/v1/widget/conversations/{public_id}/events?token={token}");
    let mut streams = Vec::new();
    for n in 0..64 {
        let (stream, status) = raw_get([127, 0, 0, 1], &addr, &path).await;
        assert_eq!(status, 200, "stream {n}");
        streams.push(stream);
    }
    let (_, status) = raw_get([127, 0, 0, 1], &addr, &path).await;
    assert_eq!(status, 429, "the 65th stream of one address is refused");
    for n in 0..48 {
        let (stream, status) = raw_get([127, 0, 0, 2], &addr, &path).await;
        assert_eq!(status, 200, "another address's stream {n}");
        streams.push(stream);
    }
    let (_, status) = raw_get([127, 0, 0, 3], &addr, &path).await;
    assert_eq!(status, 429, "the 113th stream of the instance is refused, whoever asks");
    let res = tokio::time::timeout(Duration::from_secs(5), client.get(format!("{base}/health")).send())
        .await
        .expect("/health answers while the streams are open")
        .expect("request");
    assert_eq!(res.status(), StatusCode::OK);
    drop(streams);
    child.kill().await.ok();
}

/// At the cap, an upload that keeps coming at a usable pace is never
/// closed to make room, however long it takes, while the stalled sockets
/// of a flood are.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upload_at_a_usable_pace_survives_a_flood_at_the_cap() {
    let dir = tempfile::tempdir().unwrap();
    let (mut child, base) = under_file_limit(&dir, "serve", &[]).await;
    let addr = base.trim_start_matches("http://").to_owned();
    // 2,000 bytes of JSON at 400 bytes a second: five seconds to arrive.
    let body = format!("{{\"email\":\"ann@example.com\",\"password\":\"{}\"}}", "p".repeat(1_959));
    assert_eq!(body.len(), 2_000);
    let upload = {
        let addr = addr.clone();
        tokio::spawn(async move {
            let mut s = TcpStream::connect(&addr).await.expect("connect");
            let head = format!(
                "POST /api/v1/mobile/login HTTP/1.1\r\nHost: parley\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
                body.len()
            );
            s.write_all(head.as_bytes()).await.expect("head");
            for chunk in body.as_bytes().chunks(100) {
                tokio::time::sleep(Duration::from_millis(250)).await;
                s.write_all(chunk).await.expect("the upload is never cut off");
            }
            read_to_close(&mut s).await
        })
    };
    // Once the upload is under way, a flood of sockets that stall in
    // their heads fills the cap, and keeps coming.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let head = "GET /health HTTP/1.1\r\nHost: parley\r\nX-Slow: ";
    let mut flood = Vec::new();
    for _ in 0..300 {
        let addr = addr.clone();
        flood.push(tokio::spawn(async move {
            let mut s = TcpStream::connect(&addr).await.expect("connect");
            let _ = s.write_all(head.as_bytes()).await;
            s
        }));
    }
    let answer = tokio::time::timeout(Duration::from_secs(20), upload).await.expect("answered").unwrap();
    assert!(answer.starts_with("HTTP/1.1 "), "answered, not cut off: {answer:?}");
    assert!(!answer.starts_with("HTTP/1.1 408"), "{answer}");
    let client = http_client();
    let res = tokio::time::timeout(Duration::from_secs(8), client.get(format!("{base}/health")).send()).await.expect("/health").unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    drop(flood);
    child.kill().await.ok();
}
