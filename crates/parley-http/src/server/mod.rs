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
//!   loop accepts the next waiting connection only once a slot frees, and
//!   frees one for it: a connection without a whole request for over two
//!   seconds that is not an upload at a usable pace (unless such uploads
//!   fill over half the slots), the one whose client sent nothing for
//!   longest first ([`overload`]). Others wait in the kernel's backlog, instead of
//!   failing on a full file table.
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
use std::net::SocketAddr;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, TryAcquireError};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

mod deadlines;
mod overload;

use deadlines::Deadlines;
use overload::{Connections, RequestBody, ResponseBody};

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
    let open = Connections::new(settings.max_connections.max(1));
    let mut connections = JoinSet::new();
    loop {
        // Reap finished connections so the set stays as large as what is open.
        while connections.try_join_next().is_some() {}
        let Some((stream, peer, slot)) = next_connection(&listener, &slots, &open, &shutdown).await else { break };
        let _ = stream.set_nodelay(true);
        let (phase, registered) = open.register();
        let (on_request, on_response) = (Arc::clone(&phase), phase);
        let service = router
            .clone()
            .map_request(move |mut req: axum::http::Request<Incoming>| {
                req.extensions_mut().insert(ConnectInfo(peer));
                on_request.head_received();
                let phase = Arc::clone(&on_request);
                req.map(|body| axum::body::Body::new(RequestBody::new(body, phase)))
            })
            .map_response(move |res: axum::response::Response| {
                let phase = Arc::clone(&on_response);
                res.map(|body| axum::body::Body::new(ResponseBody::new(body, phase)))
            });
        let mut builder = hyper::server::conn::http1::Builder::new();
        builder.timer(TokioTimer::new()).header_read_timeout(settings.idle_timeout.max(settings.header_timeout));
        let io = TokioIo::new(Deadlines::new(stream, settings.header_timeout, settings.write_timeout));
        let connection = builder.serve_connection(io, TowerToHyperService::new(service));
        let connection = graceful.watch(connection);
        let id = registered.id();
        let abort = connections.spawn(async move {
            // The connection's place in the table goes with its task,
            // however that ends (closed to make room included).
            let _registered = registered;
            if let Err(e) = connection.await {
                tracing::debug!(error = %e, "connection ended with an error");
            }
            drop(slot);
        });
        open.closes_with(id, abort);
    }
    drop(listener);
    if tokio::time::timeout(settings.drain_timeout, graceful.shutdown()).await.is_err() {
        tracing::warn!(open = connections.len(), "connections still open at the end of the shutdown time; closing them");
    }
    connections.abort_all();
    while connections.join_next().await.is_some() {}
}

/// How often a client waiting at the cap looks again for a connection to
/// close, while none has gone long enough without a whole request.
const MAKE_ROOM_EVERY: Duration = Duration::from_millis(250);

/// The next connection to serve and the slot it holds, or `None` once the
/// server shuts down.
async fn next_connection(
    listener: &TcpListener,
    slots: &Arc<Semaphore>,
    open: &Connections,
    shutdown: &CancellationToken,
) -> Option<(TcpStream, SocketAddr, OwnedSemaphorePermit)> {
    loop {
        let (slot, accepted) = match Arc::clone(slots).try_acquire_owned() {
            Ok(slot) => (slot, None),
            Err(TryAcquireError::Closed) => return None,
            // Every slot is taken: a client that connects now is accepted
            // (one descriptor past the cap, which the reserve covers) and
            // room is made for it.
            Err(TryAcquireError::NoPermits) => tokio::select! {
                _ = shutdown.cancelled() => return None,
                slot = Arc::clone(slots).acquire_owned() => (slot.ok()?, None),
                accepted = listener.accept() => (make_room(slots, open, shutdown).await?, Some(accepted)),
            },
        };
        let accepted = match accepted {
            Some(accepted) => accepted,
            None => tokio::select! {
                _ = shutdown.cancelled() => return None,
                accepted = listener.accept() => accepted,
            },
        };
        match accepted {
            Ok((stream, peer)) => return Some((stream, peer, slot)),
            Err(e) => {
                // Per-connection failures (reset before accept) and
                // running out of file descriptors: keep serving.
                tracing::warn!(error = %e, "could not accept a connection");
                if !is_connection_error(&e) {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
        }
    }
}

/// A slot for a client that waits while every slot is taken: one that
/// frees meanwhile, or else one of a connection without a whole request
/// for over two seconds, closed for it (`Connections::close_oldest_stalled`
/// chooses which); while there is none, the connections are looked at
/// again now and then.
async fn make_room(slots: &Arc<Semaphore>, open: &Connections, shutdown: &CancellationToken) -> Option<OwnedSemaphorePermit> {
    loop {
        // A slot that freed meanwhile is taken before anyone is closed.
        if let Ok(slot) = Arc::clone(slots).try_acquire_owned() {
            return Some(slot);
        }
        if open.close_oldest_stalled() {
            tracing::debug!("closed a connection without a whole request to make room");
        }
        tokio::select! {
            _ = shutdown.cancelled() => return None,
            slot = Arc::clone(slots).acquire_owned() => return slot.ok(),
            _ = tokio::time::sleep(MAKE_ROOM_EVERY) => {}
        }
    }
}

fn is_connection_error(e: &std::io::Error) -> bool {
    use std::io::ErrorKind::*;
    matches!(e.kind(), ConnectionRefused | ConnectionAborted | ConnectionReset)
}
