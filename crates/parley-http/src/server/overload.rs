//! Making room when every connection slot is taken.
//!
//! A connection that has not sent a whole request (its head, or its body)
//! for more than [`STALLED_AFTER`] is a candidate to be closed when the
//! cap is reached and a new client waits: the oldest such connection goes
//! first, as nginx's `reset_timedout_connection` and Envoy's overload
//! manager do. A few hundred stalled sockets then cost a newcomer a wait
//! of about two seconds, not the thirty of the body timeout. A connection
//! whose request is whole and being answered (a slow handler, a live
//! stream, a long poll) is never a candidate.
//!
//! Each connection reports what it is doing through a [`Phase`] that the
//! request and response bodies move along: waiting for (the rest of) a
//! request head, receiving a body, or answering.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Bytes;
use http_body::{Body, Frame, SizeHint};
use tokio::task::AbortHandle;
use tokio::time::Instant;

/// How long a connection may go without a whole request before it may be
/// closed to make room.
pub(super) const STALLED_AFTER: Duration = Duration::from_secs(2);

const WAITING: u8 = 0;
const RECEIVING: u8 = 1;
const ANSWERING: u8 = 2;

/// What one connection is doing, and since when.
pub(super) struct Phase {
    epoch: Instant,
    state: AtomicU8,
    /// Milliseconds after `epoch` when the state began.
    since: AtomicU64,
}

impl Phase {
    fn new(epoch: Instant) -> Arc<Self> {
        let phase = Arc::new(Self { epoch, state: AtomicU8::new(WAITING), since: AtomicU64::new(0) });
        phase.set(WAITING);
        phase
    }

    fn set(&self, state: u8) {
        let now = u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.since.store(now, Ordering::Relaxed);
        self.state.store(state, Ordering::Release);
    }

    /// A request head has arrived: its body, if it has one, is on its way.
    pub(super) fn head_received(&self, whole: bool) {
        self.set(if whole { ANSWERING } else { RECEIVING });
    }

    /// Since when the connection has been without a whole request, if it is.
    fn stalled_since(&self) -> Option<u64> {
        match self.state.load(Ordering::Acquire) {
            ANSWERING => None,
            _ => Some(self.since.load(Ordering::Relaxed)),
        }
    }
}

/// Each open connection's phase, and how to close it once its task runs.
type Table = HashMap<u64, (Arc<Phase>, Option<AbortHandle>)>;

/// The open connections, to find the one to close.
#[derive(Clone)]
pub(super) struct Connections {
    epoch: Instant,
    next: Arc<AtomicU64>,
    open: Arc<Mutex<Table>>,
}

/// A connection's place in the table; leaving it (the connection's task
/// ending, or being aborted) removes it.
pub(super) struct Registered {
    id: u64,
    connections: Connections,
}

impl Registered {
    pub(super) fn id(&self) -> u64 {
        self.id
    }
}

impl Drop for Registered {
    fn drop(&mut self) {
        self.connections.lock().remove(&self.id);
    }
}

impl Connections {
    pub(super) fn new() -> Self {
        Self { epoch: Instant::now(), next: Arc::default(), open: Arc::default() }
    }

    fn lock(&self) -> MutexGuard<'_, Table> {
        self.open.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Enters a new connection; how to close it is given once its task
    /// runs (`closes_with`).
    pub(super) fn register(&self) -> (Arc<Phase>, Registered) {
        let phase = Phase::new(self.epoch);
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        self.lock().insert(id, (Arc::clone(&phase), None));
        (phase, Registered { id, connections: self.clone() })
    }

    /// How to close connection `id` (gone already if its task ended).
    pub(super) fn closes_with(&self, id: u64, abort: AbortHandle) {
        if let Some(entry) = self.lock().get_mut(&id) {
            entry.1 = Some(abort);
        }
    }

    /// Closes the connection that has gone longest without a whole
    /// request, if one has for more than [`STALLED_AFTER`]; returns
    /// whether one was closed.
    pub(super) fn close_oldest_stalled(&self) -> bool {
        let Some(limit) = self.epoch.elapsed().checked_sub(STALLED_AFTER) else { return false };
        let limit = u64::try_from(limit.as_millis()).unwrap_or(u64::MAX);
        let open = self.lock();
        let oldest = open
            .iter()
            .filter_map(|(id, (phase, abort))| Some((phase.stalled_since()?, *id, abort.as_ref()?)))
            .filter(|(since, _, _)| *since < limit)
            .min_by_key(|(since, id, _)| (*since, *id));
        match oldest {
            Some((_, _, abort)) => {
                abort.abort();
                true
            }
            None => false,
        }
    }
}

pin_project_lite::pin_project! {
    /// A request body that tells its connection's phase when it is whole.
    pub(super) struct RequestBody<B> {
        #[pin]
        inner: B,
        phase: Arc<Phase>,
    }
}

impl<B> RequestBody<B> {
    pub(super) fn new(inner: B, phase: Arc<Phase>) -> Self {
        Self { inner, phase }
    }
}

impl<B: Body<Data = Bytes>> Body for RequestBody<B> {
    type Data = Bytes;
    type Error = B::Error;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, B::Error>>> {
        let mut this = self.project();
        let polled = this.inner.as_mut().poll_frame(cx);
        // Whole once the last frame is in: some readers stop at
        // `is_end_stream` and never poll for the end.
        if matches!(polled, Poll::Ready(None)) || (matches!(polled, Poll::Ready(Some(Ok(_)))) && this.inner.is_end_stream()) {
            this.phase.set(ANSWERING);
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

pin_project_lite::pin_project! {
    /// A response body: once it is written (or given up), its connection
    /// waits for the next request.
    pub(super) struct ResponseBody<B> {
        #[pin]
        inner: B,
        phase: Arc<Phase>,
    }

    impl<B> PinnedDrop for ResponseBody<B> {
        fn drop(this: Pin<&mut Self>) {
            this.phase.set(WAITING);
        }
    }
}

impl<B> ResponseBody<B> {
    pub(super) fn new(inner: B, phase: Arc<Phase>) -> Self {
        Self { inner, phase }
    }
}

impl<B: Body<Data = Bytes>> Body for ResponseBody<B> {
    type Data = Bytes;
    type Error = B::Error;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, B::Error>>> {
        self.project().inner.poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn the_oldest_connection_without_a_whole_request_is_closed_first() {
        let connections = Connections::new();
        let mut tasks = Vec::new();
        let mut phases = Vec::new();
        for _ in 0..3 {
            let (phase, registered) = connections.register();
            let task = tokio::spawn(async move {
                let _registered = registered;
                std::future::pending::<()>().await;
            });
            phases.push(phase);
            tasks.push(task);
        }
        for (task, id) in tasks.iter().zip(0..) {
            connections.lock().get_mut(&id).expect("registered in order").1 = Some(task.abort_handle());
        }
        assert!(!connections.close_oldest_stalled(), "nobody has waited two seconds yet");
        tokio::time::advance(Duration::from_secs(1)).await;
        phases[0].head_received(true);
        tokio::time::advance(Duration::from_millis(1500)).await;
        // 0 answers a whole request; 1 and 2 wait since the start.
        phases[2].head_received(false);
        assert!(connections.close_oldest_stalled(), "1 has waited 2.5 s");
        tokio::task::yield_now().await;
        assert!(tasks[1].is_finished() && !tasks[0].is_finished() && !tasks[2].is_finished());
        assert_eq!(connections.lock().len(), 2, "its place is gone with it");
        assert!(!connections.close_oldest_stalled(), "2 receives a body since a moment only, 0 is answering");
        tokio::time::advance(STALLED_AFTER + Duration::from_millis(1)).await;
        assert!(connections.close_oldest_stalled());
        tokio::task::yield_now().await;
        assert!(tasks[2].is_finished() && !tasks[0].is_finished());
    }
}
