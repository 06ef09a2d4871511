//! A webhook receiver inside the bench: it answers 204, counts deliveries
//! and measures each one's lag from the event's `occurred_at` (the time of
//! its commit, on the same machine's clock) to its arrival.

use std::sync::Arc;
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use hdrhistogram::Histogram;

#[derive(Clone)]
pub struct Receiver {
    pub url: String,
    seen: Arc<Mutex<Seen>>,
}

struct Seen {
    count: u64,
    lag_ms: Histogram<u64>,
}

fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// `2026-01-01T09:30:00.000Z` in milliseconds since the epoch.
fn parse_ms(at: &str) -> Option<u64> {
    let t = time::OffsetDateTime::parse(at, &time::format_description::well_known::Rfc3339).ok()?;
    u64::try_from(t.unix_timestamp_nanos() / 1_000_000).ok()
}

async fn receive(State(seen): State<Arc<Mutex<Seen>>>, body: Bytes) -> StatusCode {
    let arrived = now_ms();
    let occurred = serde_json::from_slice::<serde_json::Value>(&body).ok().and_then(|v| v["occurred_at"].as_str().and_then(parse_ms));
    if let Ok(mut s) = seen.lock() {
        s.count += 1;
        if let Some(at) = occurred {
            let _ = s.lag_ms.record(arrived.saturating_sub(at).max(1));
        }
    }
    StatusCode::NO_CONTENT
}

impl Receiver {
    pub async fn start() -> Result<Self, String> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.map_err(|e| e.to_string())?;
        let url = format!("http://{}/hook", listener.local_addr().map_err(|e| e.to_string())?);
        let seen = Arc::new(Mutex::new(Seen { count: 0, lag_ms: Histogram::new_with_bounds(1, 3_600_000, 3).map_err(|e| e.to_string())? }));
        let app = Router::new().fallback(receive).with_state(Arc::clone(&seen));
        tokio::spawn(async move { axum::serve(listener, app).await });
        Ok(Self { url, seen })
    }

    pub fn count(&self) -> u64 {
        self.seen.lock().map_or(0, |s| s.count)
    }

    /// Forgets the lags seen so far (the count stays).
    pub fn reset_lag(&self) {
        if let Ok(mut s) = self.seen.lock() {
            s.lag_ms.reset();
        }
    }

    /// Lag percentiles in milliseconds: p50, p99, max.
    pub fn lag(&self) -> (u64, u64, u64) {
        self.seen.lock().map_or((0, 0, 0), |s| (s.lag_ms.value_at_quantile(0.5), s.lag_ms.value_at_quantile(0.99), s.lag_ms.max()))
    }
}
