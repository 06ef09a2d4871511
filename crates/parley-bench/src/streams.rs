//! The streams scenario: thousands of widgets each holding their
//! conversation's event stream while messages arrive at a set rate. It
//! measures commit-to-stream latency (from the send of a message to its
//! arrival on the stream of its conversation), how many arrive, the
//! server's memory, and then drops every stream at once and reconnects
//! them all together, as after a restart or a proxy reload, with the
//! `Last-Event-ID` each had.
//!
//! The reference app holds the same streams the way a quick app does (an
//! in-process broadcast of every insert, no durable feed, no resume), with
//! the same client.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use hdrhistogram::Histogram;
use http_body_util::{BodyExt, Empty};
use hyper::Request;
use hyper::body::Incoming;
use hyper::client::conn::http1;
use hyper::header::{ACCEPT, HOST, HeaderValue};
use hyper_util::rt::TokioIo;
use serde_json::json;
use tokio::net::TcpStream;
use tokio::sync::Semaphore;
use tokio::task::JoinSet;

use crate::client::{Call, Conn};
use crate::process::{Usage, reset_peak};

/// What a server is asked for: the stream of conversation `i` and a
/// message for it.
pub trait Routes: Send + Sync + 'static {
    fn stream(&self, i: usize) -> String;
    fn message(&self, i: usize, body: &str) -> Call;
    /// A read that answers the feed's position (`cursor`), for streams
    /// that got no event of their own before they were dropped.
    fn head(&self) -> Option<Call> {
        None
    }
}

pub struct Parley {
    pub token: String,
    pub public_ids: Vec<String>,
}

impl Routes for Parley {
    fn stream(&self, i: usize) -> String {
        format!("/api/v1/widget/conversations/{}/events?token={}", self.public_ids[i], self.token)
    }

    fn message(&self, i: usize, body: &str) -> Call {
        Call::post(format!("/api/v1/widget/conversations/{}/messages", self.public_ids[i]), &json!({"token": self.token, "body": body}))
    }

    fn head(&self) -> Option<Call> {
        Some(Call::get(format!("/api/v1/widget/conversations/{}/messages?token={}&after_id=999999999999", self.public_ids[0], self.token)))
    }
}

pub struct Reference;

impl Routes for Reference {
    fn stream(&self, i: usize) -> String {
        format!("/naive/events?conversation_id={}", i + 1)
    }

    fn message(&self, i: usize, body: &str) -> Call {
        Call::post("/naive/messages", &json!({"conversation_id": i + 1, "body": body}))
    }
}

/// What one run came to.
pub struct Outcome {
    pub streams: usize,
    pub open_seconds: f64,
    pub open_failures: Failures,
    pub sent: u64,
    pub received: u64,
    pub latency: Histogram<u64>,
    pub peak_rss_mb: Option<f64>,
    pub cpu_seconds: Option<f64>,
    pub reconnect_seconds: f64,
    pub reconnect_failures: Failures,
    /// Messages sent while every stream was away, and how many of them
    /// the reconnected streams replayed.
    pub missed_sent: u64,
    pub missed_received: u64,
}

/// Streams that did not open, by what went wrong (a status, an error).
#[derive(Default)]
pub struct Failures(std::collections::BTreeMap<String, u64>);

impl Failures {
    pub fn count(&self) -> u64 {
        self.0.values().sum()
    }

    fn add(&mut self, reason: String) {
        *self.0.entry(reason).or_default() += 1;
    }

    /// "0 failed", or "64 failed: 64 × status 503".
    fn describe(&self) -> String {
        let reasons: Vec<String> = self.0.iter().map(|(reason, n)| format!("{n} × {reason}")).collect();
        if reasons.is_empty() { "0 failed".into() } else { format!("{} failed: {}", self.count(), reasons.join(", ")) }
    }

    fn json(&self) -> serde_json::Value {
        json!(self.0)
    }
}

/// Shared by the stream readers: arrivals and each stream's last id.
struct Board {
    started: Instant,
    latency: Mutex<Histogram<u64>>,
    received: std::sync::atomic::AtomicU64,
    last_ids: Mutex<Vec<Option<String>>>,
}

/// Opens a stream; answers its status and body.
async fn open(addr: SocketAddr, path: &str, last_event_id: Option<&str>) -> std::io::Result<(u16, Incoming)> {
    let stream = TcpStream::connect(addr).await?;
    stream.set_nodelay(true)?;
    let (mut sender, connection) = http1::handshake(TokioIo::new(stream)).await.map_err(std::io::Error::other)?;
    tokio::spawn(async move {
        let _ = connection.await;
    });
    let mut request = Request::get(path)
        .header(HOST, HeaderValue::from_str(&addr.to_string()).map_err(std::io::Error::other)?)
        .header(ACCEPT, HeaderValue::from_static("text/event-stream"));
    if let Some(id) = last_event_id {
        request = request.header("last-event-id", id);
    }
    let request = request.body(Empty::<Bytes>::new()).map_err(std::io::Error::other)?;
    let response = sender.send_request(request).await.map_err(std::io::Error::other)?;
    Ok((response.status().as_u16(), response.into_body()))
}

/// Reads a stream until it ends, noting each message's latency (its body
/// says when it was sent) and the stream's last event id.
async fn read(mut body: Incoming, board: Arc<Board>, i: usize) {
    let mut buffer = String::new();
    while let Some(Ok(frame)) = body.frame().await {
        let Ok(data) = frame.into_data() else { continue };
        buffer.push_str(&String::from_utf8_lossy(&data));
        while let Some(end) = buffer.find("\n\n") {
            let event: String = buffer.drain(..end + 2).collect();
            let Some(sent) = event.find("bench-sent-").and_then(|at| {
                let digits: String = event[at + 11..].chars().take_while(char::is_ascii_digit).collect();
                digits.parse::<u64>().ok()
            }) else {
                continue;
            };
            let now = board.started.elapsed().as_micros() as u64;
            if let Ok(mut h) = board.latency.lock() {
                let _ = h.record(now.saturating_sub(sent).max(1));
            }
            board.received.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            if let Some(id) = event.lines().find_map(|l| l.strip_prefix("id: "))
                && let Ok(mut ids) = board.last_ids.lock()
            {
                ids[i] = Some(id.to_owned());
            }
        }
    }
}

/// Opens every stream, at most `at_once` handshakes in flight; answers
/// the readers, the failures and the time it took.
async fn open_all(
    addr: SocketAddr,
    routes: &Arc<dyn Routes>,
    board: &Arc<Board>,
    count: usize,
    at_once: usize,
    resume: Option<Option<String>>,
) -> (JoinSet<()>, Failures, f64) {
    let started = Instant::now();
    let gate = Arc::new(Semaphore::new(at_once.max(1)));
    let mut opening = JoinSet::new();
    for i in 0..count {
        let (routes, board, gate) = (Arc::clone(routes), Arc::clone(board), Arc::clone(&gate));
        let last = resume.as_ref().and_then(|head| board.last_ids.lock().ok().and_then(|ids| ids[i].clone()).or_else(|| head.clone()));
        opening.spawn(async move {
            let _permit = gate.acquire_owned().await.map_err(|e| e.to_string())?;
            match open(addr, &routes.stream(i), last.as_deref()).await {
                Ok((200, body)) => Ok((i, body)),
                Ok((status, _)) => Err(format!("status {status}")),
                Err(e) => Err(e.to_string()),
            }
        });
    }
    let (mut readers, mut failures) = (JoinSet::new(), Failures::default());
    while let Some(opened) = opening.join_next().await {
        match opened.map_err(|e| e.to_string()).and_then(|o| o) {
            Ok((i, body)) => {
                readers.spawn(read(body, Arc::clone(board), i));
            }
            Err(reason) => failures.add(reason),
        }
    }
    (readers, failures, started.elapsed().as_secs_f64())
}

/// Sends `rate` messages a second for `length` over a few connections,
/// each to the next conversation in a stride; answers how many were
/// accepted.
async fn send(addr: SocketAddr, routes: &Arc<dyn Routes>, board: &Arc<Board>, count: usize, rate: f64, length: Duration) -> u64 {
    const SENDERS: usize = 4;
    let period = Duration::from_secs_f64(SENDERS as f64 / rate.max(0.001));
    let mut tasks = JoinSet::new();
    for s in 0..SENDERS {
        let (routes, board) = (Arc::clone(routes), Arc::clone(board));
        tasks.spawn(async move {
            let Ok(mut conn) = Conn::open(addr).await else { return 0 };
            let end = Instant::now() + length;
            let mut next = tokio::time::Instant::now() + period.mul_f64(s as f64 / SENDERS as f64);
            let (mut n, mut accepted) = (s, 0u64);
            while Instant::now() < end {
                tokio::time::sleep_until(next).await;
                next += period;
                // A large odd stride visits every conversation, spread out.
                let i = n.wrapping_mul(7919) % count;
                n += SENDERS;
                let body = format!("bench-sent-{}", board.started.elapsed().as_micros());
                if conn.send(&routes.message(i, &body)).await.is_ok_and(|a| (200..300).contains(&a.status)) {
                    accepted += 1;
                }
            }
            accepted
        });
    }
    let mut total = 0;
    while let Some(n) = tasks.join_next().await {
        total += n.unwrap_or(0);
    }
    total
}

/// Holds `count` streams on `addr`, sends messages at `rate` for
/// `length`, then drops them all and reconnects them at once.
pub async fn run(addr: SocketAddr, pid: Option<u32>, routes: Arc<dyn Routes>, count: usize, rate: f64, length: Duration) -> Outcome {
    let board = Arc::new(Board {
        started: Instant::now(),
        latency: Mutex::new(Histogram::new_with_bounds(1, 120_000_000, 3).unwrap_or_else(|_| Histogram::new(3).expect("histogram"))),
        received: Default::default(),
        last_ids: Mutex::new(vec![None; count]),
    });
    if let Some(pid) = pid {
        reset_peak(pid);
    }
    let before = pid.map(Usage::of);
    let (mut readers, open_failures, open_seconds) = open_all(addr, &routes, &board, count, 512, None).await;
    // Let the last handshakes settle before the clock starts.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let sent = send(addr, &routes, &board, count, rate, length).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let received = board.received.load(std::sync::atomic::Ordering::Relaxed);
    let after = pid.map(Usage::of);
    let latency = board.latency.lock().map(|h| h.clone()).unwrap_or_else(|_| Histogram::new(3).expect("histogram"));

    // Every stream away at once; a few messages meanwhile; then all back,
    // each from its last event (or the position read before the drop).
    let head = match routes.head() {
        Some(call) => crate::client::once(addr, call).await.ok().and_then(|(_, body)| body["cursor"].as_str().map(str::to_owned)),
        None => None,
    };
    readers.abort_all();
    while readers.join_next().await.is_some() {}
    let missed_sent = send(addr, &routes, &board, count, rate, Duration::from_secs(1)).await;
    let before_reconnect = board.received.load(std::sync::atomic::Ordering::Relaxed);
    let (mut readers, reconnect_failures, reconnect_seconds) = open_all(addr, &routes, &board, count, count, Some(head)).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let missed_received = board.received.load(std::sync::atomic::Ordering::Relaxed) - before_reconnect;
    readers.abort_all();
    while readers.join_next().await.is_some() {}

    Outcome {
        streams: count,
        open_seconds,
        open_failures,
        sent,
        received,
        latency,
        peak_rss_mb: after.as_ref().map(|u| u.peak_rss_mb),
        cpu_seconds: before.zip(after).map(|(b, a)| a.cpu_seconds - b.cpu_seconds),
        reconnect_seconds,
        reconnect_failures,
        missed_sent,
        missed_received,
    }
}

impl Outcome {
    pub fn ms(&self, q: f64) -> f64 {
        self.latency.value_at_quantile(q) as f64 / 1000.0
    }

    pub fn json(&self) -> serde_json::Value {
        json!({
            "streams": self.streams,
            "open_seconds": self.open_seconds,
            "open_failures": self.open_failures.count(),
            "open_failure_reasons": self.open_failures.json(),
            "sent": self.sent,
            "received": self.received,
            "latency_ms": {"p50": self.ms(0.5), "p95": self.ms(0.95), "p99": self.ms(0.99), "max": self.latency.max() as f64 / 1000.0},
            "peak_rss_mb": self.peak_rss_mb,
            "cpu_seconds": self.cpu_seconds,
            "reconnect_seconds": self.reconnect_seconds,
            "reconnect_failures": self.reconnect_failures.count(),
            "reconnect_failure_reasons": self.reconnect_failures.json(),
            "missed_sent": self.missed_sent,
            "missed_received": self.missed_received,
        })
    }

    pub fn print(&self, name: &str) {
        println!(
            "streams {name}: {} streams opened in {:.1} s ({}); {} of {} messages arrived; commit-to-stream p50 {:.1} ms, p95 {:.1} ms, p99 {:.1} ms, max {:.1} ms; peak RSS {} MB; CPU {} s",
            self.streams,
            self.open_seconds,
            self.open_failures.describe(),
            self.received,
            self.sent,
            self.ms(0.5),
            self.ms(0.95),
            self.ms(0.99),
            self.latency.max() as f64 / 1000.0,
            self.peak_rss_mb.map_or("-".into(), |m| format!("{m:.0}")),
            self.cpu_seconds.map_or("-".into(), |c| format!("{c:.1}")),
        );
        println!(
            "streams {name}: all {} reconnected at once in {:.1} s ({}); of {} messages sent while away, {} arrived after reconnecting",
            self.streams,
            self.reconnect_seconds,
            self.reconnect_failures.describe(),
            self.missed_sent,
            self.missed_received
        );
    }
}
