//! Accepting connections: HTTP/1.1 through hyper, with the limits that keep
//! slow and idle clients from holding the service.
//!
//! - A request head must arrive within the header timeout
//!   (`PARLEY_REQUEST_HEADER_TIMEOUT`, 10 s) from the connection's opening
//!   or from its first byte ([`deadlines`]).
//! - A response that makes no progress for the write timeout
//!   (`PARLEY_RESPONSE_WRITE_TIMEOUT`, 30 s) ends its connection: a client
//!   that stops reading cannot pin a response and its memory.
//! - A keep-alive connection waiting for its next request closes after the
//!   idle timeout (`PARLEY_IDLE_TIMEOUT`, 60 s: hyper's
//!   `header_read_timeout`, which starts as soon as hyper waits).
//! - Request bodies must arrive whole within the read timeout; that limit is
//!   a router layer ([`crate::routes`]), so live streams can go without it.
//! - At most `max_connections` connections are open at once. At the cap the
//!   loop stops accepting: new connections wait in the kernel's backlog
//!   until a slot frees, instead of failing on a full file table.
//! - On shutdown the listener closes, idle connections close at once, busy
//!   ones finish their request, and whatever is still open when the drain
//!   time is up is dropped.
//!
//! Only HTTP/1.1 is spoken: hyper offers no header timeout for HTTP/2, and
//! browsers never use cleartext HTTP/2 anyway (a TLS proxy in front speaks
//! HTTP/2 to them and HTTP/1.1 to Parley).

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::ConnectInfo;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

mod deadlines;

use deadlines::Deadlines;

#[derive(Clone, Copy, Debug)]
pub struct ServerSettings {
    /// A request head must be complete within this time.
    pub header_timeout: Duration,
    /// How long a keep-alive connection may wait for its next request.
    pub idle_timeout: Duration,
    /// How long a response may wait for the client to read some of it.
    pub write_timeout: Duration,
    /// Connections open at once.
    pub max_connections: usize,
    /// How long open connections may take to finish once shutdown begins.
    pub drain_timeout: Duration,
}

/// Serves `router` on `listener` until `shutdown` is cancelled, then drains.
pub async fn serve(listener: TcpListener, router: Router, settings: ServerSettings, shutdown: CancellationToken) {
    let slots = Arc::new(Semaphore::new(settings.max_connections.max(1)));
    let graceful = GracefulShutdown::new();
    let mut connections = JoinSet::new();
    loop {
        // Reap finished connections so the set stays as large as what is open.
        while connections.try_join_next().is_some() {}
        let slot = tokio::select! {
            _ = shutdown.cancelled() => break,
            slot = Arc::clone(&slots).acquire_owned() => match slot {
                Ok(slot) => slot,
                Err(_) => break,
            },
        };
        let (stream, peer) = tokio::select! {
            _ = shutdown.cancelled() => break,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    // Per-connection failures (reset before accept) and
                    // running out of file descriptors: keep serving.
                    tracing::warn!(error = %e, "could not accept a connection");
                    if !is_connection_error(&e) {
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                    continue;
                }
            },
        };
        let _ = stream.set_nodelay(true);
        let service = router.clone().map_request(move |mut req: axum::http::Request<Incoming>| {
            req.extensions_mut().insert(ConnectInfo(peer));
            req.map(axum::body::Body::new)
        });
        let mut builder = hyper::server::conn::http1::Builder::new();
        builder.timer(TokioTimer::new()).header_read_timeout(settings.idle_timeout.max(settings.header_timeout));
        let io = TokioIo::new(Deadlines::new(stream, settings.header_timeout, settings.write_timeout));
        let connection = builder.serve_connection(io, TowerToHyperService::new(service));
        let connection = graceful.watch(connection);
        connections.spawn(async move {
            if let Err(e) = connection.await {
                tracing::debug!(error = %e, "connection ended with an error");
            }
            drop(slot);
        });
    }
    drop(listener);
    if tokio::time::timeout(settings.drain_timeout, graceful.shutdown()).await.is_err() {
        tracing::warn!(open = connections.len(), "connections still open at the end of the shutdown time; closing them");
    }
    connections.abort_all();
    while connections.join_next().await.is_some() {}
}

fn is_connection_error(e: &std::io::Error) -> bool {
    use std::io::ErrorKind::*;
    matches!(e.kind(), ConnectionRefused | ConnectionAborted | ConnectionReset)
}
