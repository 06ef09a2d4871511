//! Operator pushes under load: visitor messages at a steady rate over many
//! conversations, each assigned to an operator with registered devices,
//! and a local provider (a relay, which the bench's server is started
//! with) that counts what arrives. Reports the lag from a message's commit
//! (its POST answered) to each of its pushes' arrival, pushes lost or
//! doubled, and the server's CPU per push beside its CPU per message.

use std::collections::{HashMap, HashSet, VecDeque};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use hdrhistogram::Histogram;
use serde_json::{Value, json};
use tokio::task::JoinSet;

use crate::client::{Call, once};
use crate::process::Usage;
use crate::setup::{self, Tenant};

/// The relay secret the bench's server is started with.
pub const RELAY_SECRET: &str = "whsec_cGFybGV5LWJlbmNoLXJlbGF5LXNlY3JldA==";

#[derive(Default)]
struct Seen {
    /// Arrivals by device token and conversation id.
    arrivals: HashMap<(String, i64), Vec<Instant>>,
    count: u64,
    /// The relay's message ids (one per push, the same on its retries).
    ids: HashSet<String>,
    /// Arrivals of an id already seen: pushes sent twice.
    repeated: u64,
}

/// The provider the server pushes to: a relay on loopback.
#[derive(Clone)]
pub struct PushReceiver {
    pub url: String,
    seen: Arc<Mutex<Seen>>,
}

async fn receive(State(seen): State<Arc<Mutex<Seen>>>, headers: HeaderMap, body: Bytes) -> StatusCode {
    let at = Instant::now();
    let id = headers.get("webhook-id").and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned();
    let v: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let (Some(token), Some(conversation)) = (v["push_token"].as_str(), v["notification"]["conversation_id"].as_i64()) else {
        return StatusCode::BAD_REQUEST;
    };
    if let Ok(mut s) = seen.lock() {
        s.count += 1;
        if !s.ids.insert(id) {
            s.repeated += 1;
            return StatusCode::NO_CONTENT;
        }
        s.arrivals.entry((token.to_owned(), conversation)).or_default().push(at);
    }
    StatusCode::NO_CONTENT
}

impl PushReceiver {
    pub async fn start() -> Result<Self, String> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.map_err(|e| e.to_string())?;
        let url = format!("http://{}/relay", listener.local_addr().map_err(|e| e.to_string())?);
        let seen = Arc::new(Mutex::new(Seen::default()));
        let app = Router::new().fallback(receive).with_state(Arc::clone(&seen));
        tokio::spawn(async move { axum::serve(listener, app).await });
        Ok(Self { url, seen })
    }

    fn count(&self) -> u64 {
        self.seen.lock().map_or(0, |s| s.count)
    }
}

pub struct PushLoad {
    pub conversations: usize,
    pub operators: usize,
    pub devices_per_operator: usize,
    pub messages_per_second: f64,
    pub duration: Duration,
}

fn ok(status: u16, body: &Value, what: &str) -> Result<(), String> {
    if (200..300).contains(&status) { Ok(()) } else { Err(format!("{what} failed with {status}: {body}")) }
}

/// Runs the scenario and returns its figures.
pub async fn run(addr: SocketAddr, pid: Option<u32>, tenant: &Tenant, receiver: &PushReceiver, load: &PushLoad) -> Result<Value, String> {
    println!("Setting up the pushes: {} operators, {} conversations", load.operators, load.conversations);
    let operators = setup::operators(addr, tenant, load.operators, "push").await?;
    let opened = setup::conversations(addr, &tenant.widget_token, load.conversations, 1, "push").await?;
    // Each conversation to one operator, before any device exists: the
    // set-up itself pushes nothing.
    let mut ids = HashMap::new();
    let mut page = 1;
    while ids.len() < opened.len() {
        let (status, body) =
            once(addr, Call::get(format!("/api/v1/mobile/conversations?status=open&per_page=100&page={page}")).bearer(&tenant.admin_token))
                .await
                .map_err(|e| e.to_string())?;
        ok(status, &body, "listing conversations")?;
        let list = body["conversations"].as_array().cloned().unwrap_or_default();
        if list.is_empty() {
            break;
        }
        for c in list {
            if let (Some(public_id), Some(id)) = (c["public_id"].as_str(), c["id"].as_i64()) {
                ids.insert(public_id.to_owned(), id);
            }
        }
        page += 1;
    }
    let mut targets = Vec::new();
    for (n, c) in opened.iter().enumerate() {
        let id = *ids.get(&c.public_id).ok_or("a conversation is missing from the inbox")?;
        let (operator_id, _) = &operators[n % operators.len()];
        let (status, body) = once(
            addr,
            Call::post(format!("/api/v1/mobile/conversations/{id}/assign"), &json!({"operator_id": operator_id}))
                .bearer(&tenant.admin_token),
        )
        .await
        .map_err(|e| e.to_string())?;
        ok(status, &body, "assigning a conversation")?;
        targets.push((c.public_id.clone(), id, n % operators.len()));
    }
    let mut tokens_of = Vec::new();
    for (n, (_, token)) in operators.iter().enumerate() {
        let mut devices = Vec::new();
        for d in 0..load.devices_per_operator {
            let push_token = format!("{:064x}", n * 1000 + d + 1);
            let device = json!({"platform": "ios", "push_token": push_token});
            let (status, body) =
                once(addr, Call::post("/api/v1/mobile/devices", &device).bearer(token)).await.map_err(|e| e.to_string())?;
            ok(status, &body, "registering a device")?;
            devices.push(push_token);
        }
        tokens_of.push(devices);
    }
    let devices: usize = tokens_of.iter().map(Vec::len).sum();
    println!(
        "Measuring pushes: {} visitor messages a second over {} conversations, {devices} devices, for {} s",
        load.messages_per_second,
        targets.len(),
        load.duration.as_secs()
    );

    // Open loop: one message every 1/rate seconds, round robin over the
    // conversations, so each hears from its visitor less often than the
    // 10 s spacing and every message owes one push per device.
    let before = pid.map(Usage::of);
    let started = Instant::now();
    let every = Duration::from_secs_f64(1.0 / load.messages_per_second.max(0.1));
    let posted: Arc<Mutex<HashMap<i64, VecDeque<Instant>>>> = Arc::default();
    let mut tasks = JoinSet::new();
    let mut tick = tokio::time::interval(every);
    let failed = Arc::new(Mutex::new(0u64));
    let mut sent = 0u64;
    let mut n = 0usize;
    while started.elapsed() < load.duration {
        tick.tick().await;
        let (public_id, id, _) = targets[n % targets.len()].clone();
        n += 1;
        let call = Call::post(
            format!("/api/v1/widget/conversations/{public_id}/messages"),
            &json!({"token": tenant.widget_token, "body": "a message the operator's phone hears about"}),
        );
        let (posted, failed) = (Arc::clone(&posted), Arc::clone(&failed));
        tasks.spawn(async move {
            match once(addr, call).await {
                Ok((201, _)) => {
                    if let Ok(mut p) = posted.lock() {
                        p.entry(id).or_default().push_back(Instant::now());
                    }
                }
                _ => {
                    if let Ok(mut f) = failed.lock() {
                        *f += 1;
                    }
                }
            }
        });
        sent += 1;
    }
    while tasks.join_next().await.is_some() {}
    let committed: u64 = posted.lock().map_or(0, |p| p.values().map(|q| q.len() as u64).sum());
    let per_message = load.devices_per_operator as u64;
    let expected = committed * per_message;
    let deadline = Instant::now() + Duration::from_secs(60);
    while receiver.count() < expected && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // A push sent twice by a lease that ran out would come a lease (60 s)
    // later: this wait sees only quick doubles; the relay ids (one per push)
    // tell any double seen.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let after = pid.map(Usage::of);
    let cpu = match (before, after) {
        (Some(b), Some(a)) => Some(a.cpu_seconds - b.cpu_seconds),
        _ => None,
    };

    // Each arrival for (device, conversation) answers that conversation's
    // messages in order.
    let mut lag = Histogram::<u64>::new_with_bounds(1, 3_600_000, 3).map_err(|e| e.to_string())?;
    // An arrival before its POST was answered (the commit is earlier
    // still) is counted apart rather than as a lag of zero.
    let (mut lost, mut doubled, mut early) = (0u64, 0u64, 0u64);
    let seen = receiver.seen.lock().map_err(|_| "poisoned")?;
    let posted = posted.lock().map_err(|_| "poisoned")?;
    for (_, id, operator) in &targets {
        let times = posted.get(id).cloned().unwrap_or_default();
        for token in &tokens_of[*operator] {
            let arrivals = seen.arrivals.get(&(token.clone(), *id)).cloned().unwrap_or_default();
            for (post, arrival) in times.iter().zip(arrivals.iter()) {
                if arrival < post {
                    early += 1;
                    continue;
                }
                let _ = lag.record(u64::try_from(arrival.duration_since(*post).as_millis()).unwrap_or(u64::MAX).max(1));
            }
            lost += times.len().saturating_sub(arrivals.len()) as u64;
            doubled += arrivals.len().saturating_sub(times.len()) as u64;
        }
    }
    let failed = failed.lock().map_or(0, |f| *f);
    let pushes = seen.count;
    let figures = json!({
        "messages_sent": sent,
        "messages_committed": committed,
        "messages_failed": failed,
        "devices": devices,
        "pushes_expected": expected,
        "pushes_received": pushes,
        "lost": lost,
        "doubled": doubled + seen.repeated,
        "arrived_before_the_post_answer": early,
        "commit_to_provider_ms": {"p50": lag.value_at_quantile(0.5), "p99": lag.value_at_quantile(0.99), "max": lag.max()},
        "p99_target_ms": 1000,
        "p99_met": lag.value_at_quantile(0.99) <= 1000,
        "server_cpu_s": cpu,
        // All the server's CPU over the run (the messages' POSTs, their
        // pushes, the claims and badges), per message and per push.
        "server_cpu_us_per_message": cpu.map(|c| c * 1e6 / committed.max(1) as f64),
        "server_cpu_us_per_push": cpu.map(|c| c * 1e6 / pushes.max(1) as f64),
    });
    println!("pushes: {figures}");
    Ok(figures)
}
