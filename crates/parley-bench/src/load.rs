//! Generating load and recording what came back: a closed loop (each
//! connection sends its next request as soon as the last is answered,
//! as wrk does) and paced senders (a request every so often, for the mix).

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use tokio::sync::Barrier;
use tokio::task::JoinSet;

use crate::client::{Call, Conn};
use crate::process::Usage;

/// Latencies and outcomes of one route.
#[derive(Clone)]
pub struct RouteStats {
    pub latency: Histogram<u64>,
    pub ok: u64,
    pub non_2xx: u64,
    pub errors: u64,
    /// Calls that found their connection closed by the server.
    pub reconnects: u64,
}

impl Default for RouteStats {
    fn default() -> Self {
        // Microseconds, up to a minute, three significant figures.
        Self {
            latency: Histogram::new_with_bounds(1, 60_000_000, 3).expect("histogram bounds"),
            ok: 0,
            non_2xx: 0,
            errors: 0,
            reconnects: 0,
        }
    }
}

impl RouteStats {
    pub fn record(&mut self, outcome: &std::io::Result<crate::client::Answer>) {
        match outcome {
            Ok(a) => {
                self.reconnects += u64::from(a.reconnected);
                let micros = u64::try_from(a.latency.as_micros()).unwrap_or(u64::MAX).clamp(1, 60_000_000);
                let _ = self.latency.record(micros);
                if (200..300).contains(&a.status) {
                    self.ok += 1;
                } else {
                    self.non_2xx += 1;
                }
            }
            Err(_) => self.errors += 1,
        }
    }

    pub fn merge(&mut self, other: &RouteStats) {
        let _ = self.latency.add(&other.latency);
        self.ok += other.ok;
        self.non_2xx += other.non_2xx;
        self.errors += other.errors;
        self.reconnects += other.reconnects;
    }

    pub fn count(&self) -> u64 {
        self.ok + self.non_2xx + self.errors
    }
}

/// Route name to its stats.
pub type Stats = BTreeMap<String, RouteStats>;

pub fn merge_into(total: &mut Stats, part: Stats) {
    for (route, stats) in part {
        total.entry(route).or_default().merge(&stats);
    }
}

/// Runs `connections` closed loops for `duration`; `next(connection,
/// iteration)` names the route and the call.
pub async fn closed_loop<F>(addr: SocketAddr, connections: usize, duration: Duration, next: F) -> Stats
where
    F: Fn(usize, u64) -> (&'static str, Call) + Send + Sync + 'static,
{
    let next = Arc::new(next);
    let deadline = Instant::now() + duration;
    let mut tasks = JoinSet::new();
    for c in 0..connections {
        let next = Arc::clone(&next);
        tasks.spawn(async move {
            let mut stats = Stats::new();
            let Ok(mut conn) = Conn::open(addr).await else {
                stats.entry(CONNECT_FAILED.into()).or_default().errors += 1;
                return stats;
            };
            let mut i = 0;
            while Instant::now() < deadline {
                let (route, call) = next(c, i);
                let outcome = conn.send(&call).await;
                record(&mut stats, route, &outcome);
                i += 1;
            }
            stats
        });
    }
    gather(tasks).await
}

/// Merges what every task recorded; a task that panicked counts as an
/// error of its own row, so a broken run cannot pass for a quiet one.
pub async fn gather(mut tasks: JoinSet<Stats>) -> Stats {
    let mut total = Stats::new();
    while let Some(part) = tasks.join_next().await {
        match part {
            Ok(part) => merge_into(&mut total, part),
            Err(_) => total.entry(TASK_FAILED.into()).or_default().errors += 1,
        }
    }
    total
}

/// The rows of failures that belong to no route.
pub const CONNECT_FAILED: &str = "connect";
pub const TASK_FAILED: &str = "task failed";

/// The shared clock of paced senders: they all connect first and start
/// together, so thousands of visitors opening their connections in the
/// same instant are not measured as their first requests.
pub struct Window {
    connected: Barrier,
    start: OnceLock<tokio::time::Instant>,
    pub length: Duration,
    /// The server whose use is read when the window opens.
    server: Option<u32>,
    /// Its CPU time when the window opened: the connections' set-up is
    /// not the scenario's work.
    pub usage_at_start: OnceLock<Usage>,
}

impl Window {
    /// A window for `senders` paced senders, `length` long once they are
    /// all connected.
    pub fn new(senders: usize, length: Duration, server: Option<u32>) -> Arc<Self> {
        Arc::new(Self { connected: Barrier::new(senders), start: OnceLock::new(), length, server, usage_at_start: OnceLock::new() })
    }

    /// Waits for every sender's connection, then returns the common start.
    async fn start(&self) -> tokio::time::Instant {
        self.connected.wait().await;
        *self.start.get_or_init(|| {
            if let Some(pid) = self.server {
                let _ = self.usage_at_start.set(Usage::of(pid));
            }
            tokio::time::Instant::now()
        })
    }
}

/// How long a paced sender waits for its connection before giving up:
/// less than the server's 10 s deadline for a request head, which counts
/// from the connection's opening, so no connection waiting for the others
/// is closed before its first request.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(8);

/// One sender that sends `next(i)` every `period`, starting `phase` into
/// the window, until it ends, on its own connection.
pub async fn paced<F>(addr: SocketAddr, window: Arc<Window>, period: Duration, phase: Duration, next: F) -> Stats
where
    F: Fn(u64) -> (&'static str, Call),
{
    let mut stats = Stats::new();
    let conn = tokio::time::timeout(CONNECT_TIMEOUT, Conn::open(addr)).await;
    // Every sender reaches the barrier, connected or not, or none starts.
    let start = window.start().await;
    let Ok(Ok(mut conn)) = conn else {
        stats.entry(CONNECT_FAILED.into()).or_default().errors += 1;
        return stats;
    };
    let deadline = start + window.length;
    let first = start + phase;
    let mut i = 0;
    loop {
        let at = first + period.mul_f64(i as f64);
        if at >= deadline {
            break;
        }
        tokio::time::sleep_until(at).await;
        let (route, call) = next(i);
        // From the time the request was due, not the time it left: a
        // sender held up by a slow answer must not hide the wait.
        let outcome = conn.send(&call).await.map(|mut a| {
            a.latency = at.elapsed();
            a
        });
        record(&mut stats, route, &outcome);
        i += 1;
    }
    stats
}

/// Records an outcome without allocating the route's name again.
fn record(stats: &mut Stats, route: &str, outcome: &std::io::Result<crate::client::Answer>) {
    match stats.get_mut(route) {
        Some(s) => s.record(outcome),
        None => stats.entry(route.to_owned()).or_default().record(outcome),
    }
}
