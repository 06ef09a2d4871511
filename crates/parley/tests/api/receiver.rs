//! A real HTTP receiver on loopback that records every request and answers
//! with scripted replies (200 once the script runs out).

#![allow(dead_code)]

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::Value;
use tokio::sync::mpsc;

#[derive(Clone, Debug)]
pub struct Received {
    pub headers: HeaderMap,
    pub body: String,
}

impl Received {
    pub fn header(&self, name: &str) -> &str {
        self.headers.get(name).and_then(|v| v.to_str().ok()).unwrap_or("")
    }

    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).expect("JSON body")
    }
}

/// How the receiver answers one request.
#[derive(Clone, Debug)]
pub enum Reply {
    Status(u16),
    WithHeader(u16, &'static str, &'static str),
    /// Never answers (until the test ends).
    Hang,
}

#[derive(Clone)]
struct Shared {
    script: Arc<Mutex<VecDeque<Reply>>>,
    seen: mpsc::UnboundedSender<Received>,
}

pub struct Receiver {
    pub url: String,
    script: Arc<Mutex<VecDeque<Reply>>>,
    seen: tokio::sync::Mutex<mpsc::UnboundedReceiver<Received>>,
}

async fn handle(State(s): State<Shared>, headers: HeaderMap, body: Bytes) -> Response {
    let _ = s.seen.send(Received { headers, body: String::from_utf8_lossy(&body).into_owned() });
    let reply = s.script.lock().unwrap().pop_front().unwrap_or(Reply::Status(200));
    match reply {
        Reply::Status(code) => StatusCode::from_u16(code).unwrap().into_response(),
        Reply::WithHeader(code, name, value) => (StatusCode::from_u16(code).unwrap(), [(name, value)]).into_response(),
        Reply::Hang => {
            std::future::pending::<()>().await;
            StatusCode::OK.into_response()
        }
    }
}

impl Receiver {
    pub async fn start() -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/hook", listener.local_addr().unwrap());
        let (tx, rx) = mpsc::unbounded_channel();
        let script = Arc::new(Mutex::new(VecDeque::new()));
        let app = Router::new().fallback(handle).with_state(Shared { script: script.clone(), seen: tx });
        tokio::spawn(async move { axum::serve(listener, app).await });
        Self { url, script, seen: tokio::sync::Mutex::new(rx) }
    }

    pub fn reply(&self, replies: &[Reply]) {
        self.script.lock().unwrap().extend(replies.iter().cloned());
    }

    /// Forgets the scripted answers not given yet: from now on, 200.
    pub fn clear_script(&self) {
        self.script.lock().unwrap().clear();
    }

    /// The next request if one arrives within `wait`.
    pub async fn within(&self, wait: Duration) -> Option<Received> {
        let mut rx = self.seen.lock().await;
        tokio::time::timeout(wait, rx.recv()).await.ok().flatten()
    }

    /// The next request, waiting at most 10 seconds.
    pub async fn next(&self) -> Received {
        let mut rx = self.seen.lock().await;
        tokio::time::timeout(Duration::from_secs(10), rx.recv()).await.expect("a delivery within 10 s").expect("receiver open")
    }
}
