//! Making room when every connection slot is taken.
//!
//! A connection that has not sent a whole request for more than
//! [`STALLED_AFTER`] is a candidate to be closed when the cap is reached
//! and a new client waits, as nginx's `reset_timedout_connection` and
//! Envoy's overload manager do: one still without a whole head, or one
//! whose body comes slower than [`MIN_BODY_RATE`] (an upload that keeps
//! coming at a usable pace is never closed for this, however long it
//! takes, even while a flood of new sockets keeps arriving). Among the
//! candidates the one whose client sent nothing for longest goes first. A few
//! hundred stalled sockets then cost a newcomer a wait of about two
//! seconds, not the thirty of the body timeout. A connection whose request
//! is whole and being answered (a slow handler, a live stream, a long
//! poll) is never a candidate.
//!
//! Uploads at a usable pace are protected only while they are not the
//! crowd: once more than half the slots are bodies still coming in after
//! two seconds, those are candidates too, whatever their pace. Otherwise a
//! client trickling bodies just above the pace, request after request,
//! could hold every slot; this way half of them always serve whole
//! requests.
//!
//! Each connection reports what it is doing through a [`Phase`] that the
//! request and response bodies move along: waiting for a request head,
//! waiting for the rest of a body its handler is reading, or answering.
//! Only the server's waits on the client count: a body that has arrived
//! but that its handler has not come to read yet (it is still checking
//! the token, say) is not a stalled one.

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

/// Bytes a second below which a body that is still coming in counts as
/// stalled: far below any real link, and a cost for whoever trickles
/// bodies to hold connections (who still meets the body timeout).
pub(super) const MIN_BODY_RATE: u64 = 256;

/// Body bytes a connection is allowed behind [`MIN_BODY_RATE`] at most,
/// about one TCP segment: bodies come in chunks, and an upload just above
/// the pace is, between two of them, briefly below it, by about a chunk.
/// No connection is allowed more than it has sent, so a body that stalls
/// after its first few bytes is a candidate as soon as a silent socket.
const BODY_SLACK: u64 = 1500;

/// Waiting for a request head (a new connection, or one between requests).
const WAITING: u8 = 0;
/// The handler waits for the rest of the request body.
const RECEIVING: u8 = 1;
/// The handler has the request (or all of it that it has asked for).
const ANSWERING: u8 = 2;

/// What one connection is doing, and since when.
pub(super) struct Phase {
    epoch: Instant,
    state: AtomicU8,
    /// Milliseconds after `epoch` when the state began.
    since: AtomicU64,
    /// Milliseconds after `epoch` when the client last sent something
    /// the handler took (or the state began).
    progress: AtomicU64,
    /// Body bytes the handler took since the request's head: what came
    /// at once, before the handler first had to wait, counts as well.
    received: AtomicU64,
}

impl Phase {
    fn new(epoch: Instant) -> Arc<Self> {
        let now = millis(epoch);
        Arc::new(Self {
            epoch,
            state: AtomicU8::new(WAITING),
            since: AtomicU64::new(now),
            progress: AtomicU64::new(now),
            received: AtomicU64::new(0),
        })
    }

    fn set(&self, state: u8) {
        let now = millis(self.epoch);
        self.since.store(now, Ordering::Relaxed);
        self.progress.store(now, Ordering::Relaxed);
        self.state.store(state, Ordering::Release);
    }

    /// The client sent `bytes` of body.
    fn progressed(&self, bytes: u64) {
        self.received.fetch_add(bytes, Ordering::Relaxed);
        self.progress.store(millis(self.epoch), Ordering::Relaxed);
    }

    /// A request head has arrived: the handler has the request.
    pub(super) fn head_received(&self) {
        self.received.store(0, Ordering::Relaxed);
        self.set(ANSWERING);
    }

    /// The handler waits for body bytes the client has not sent: from the
    /// first such wait of a request, until the body is whole.
    fn waiting_for_body(&self) {
        if self.state.load(Ordering::Acquire) == ANSWERING {
            self.set(RECEIVING);
        }
    }

    /// Since when the connection has been without a whole request, if it
    /// is, and when its client last sent something.
    fn stalled_since(&self) -> Option<(u64, u64)> {
        match self.state.load(Ordering::Acquire) {
            ANSWERING => None,
            _ => Some((self.since.load(Ordering::Relaxed), self.progress.load(Ordering::Relaxed))),
        }
    }

    /// What the connection is, at `now` (milliseconds after the epoch),
    /// to making room, with when its client last sent something.
    fn standing(&self, now: u64) -> Option<(Standing, u64)> {
        let state = self.state.load(Ordering::Acquire);
        let (since, progress) = self.stalled_since()?;
        let waited = now.saturating_sub(since);
        if waited <= STALLED_AFTER.as_millis() as u64 {
            return None;
        }
        let received = self.received.load(Ordering::Relaxed);
        let received = received.saturating_add(received.min(BODY_SLACK));
        let slow = received.saturating_mul(1000) < MIN_BODY_RATE.saturating_mul(waited);
        let standing = if state == WAITING || slow { Standing::Stalled } else { Standing::Uploading };
        Some((standing, progress))
    }

    /// Whether, at `now`, the connection may be closed to make room
    /// whatever the others do: without a whole request for more than
    /// [`STALLED_AFTER`], and, if its body is coming in, slower than
    /// [`MIN_BODY_RATE`]. Returns when its client last sent something.
    #[cfg(test)]
    fn candidate(&self, now: u64) -> Option<u64> {
        self.standing(now).filter(|(standing, _)| *standing == Standing::Stalled).map(|(_, progress)| progress)
    }
}

/// A connection without a whole request for over [`STALLED_AFTER`].
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Standing {
    /// No head yet, or a body slower than [`MIN_BODY_RATE`]: always a
    /// candidate.
    Stalled,
    /// A body coming in at a usable pace: a candidate only in a crowd.
    Uploading,
}

fn millis(epoch: Instant) -> u64 {
    u64::try_from(epoch.elapsed().as_millis()).unwrap_or(u64::MAX)
}

/// Each open connection's phase, and how to close it once its task runs.
type Table = HashMap<u64, (Arc<Phase>, Option<AbortHandle>)>;

/// The open connections, to find the one to close.
#[derive(Clone)]
pub(super) struct Connections {
    /// Connections open at once, at most.
    cap: usize,
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
    pub(super) fn new(cap: usize) -> Self {
        Self { cap, epoch: Instant::now(), next: Arc::default(), open: Arc::default() }
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

    /// Closes, among the candidates (see the module's comment), the one
    /// whose client has sent nothing for longest; returns whether one was
    /// closed.
    pub(super) fn close_oldest_stalled(&self) -> bool {
        let now = millis(self.epoch);
        let oldest = {
            let open = self.lock();
            let standing: Vec<_> = open
                .iter()
                .filter_map(|(id, (phase, abort))| {
                    let (standing, progress) = phase.standing(now)?;
                    Some((standing, progress, *id, abort.as_ref()?))
                })
                .collect();
            let uploads = standing.iter().filter(|(standing, ..)| *standing == Standing::Uploading).count();
            let crowded = uploads > self.cap / 2;
            standing
                .into_iter()
                .filter(|(standing, ..)| crowded || *standing == Standing::Stalled)
                // The stalled first, then the silent longest.
                .min_by_key(|(standing, progress, id, _)| (*standing != Standing::Stalled, *progress, *id))
                .map(|(.., abort)| abort.clone())
        };
        // Aborted outside the lock: the task's end takes it to leave.
        oldest.map(|abort| abort.abort()).is_some()
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
        match &polled {
            Poll::Pending => this.phase.waiting_for_body(),
            // Whole once the last frame is in: some readers stop at
            // `is_end_stream` and never poll for the end.
            Poll::Ready(None) => this.phase.set(ANSWERING),
            Poll::Ready(Some(Ok(_))) if this.inner.is_end_stream() => this.phase.set(ANSWERING),
            Poll::Ready(Some(Ok(frame))) => this.phase.progressed(frame.data_ref().map_or(0, |d| d.len() as u64)),
            Poll::Ready(Some(Err(_))) => {}
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
        let connections = Connections::new(8);
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
        phases[0].head_received();
        tokio::time::advance(Duration::from_millis(1500)).await;
        // 0's handler has its request; 1 and 2 wait for a head since the
        // start; 2's head comes now, and its handler starts waiting for
        // the body.
        phases[2].head_received();
        phases[2].waiting_for_body();
        assert!(connections.close_oldest_stalled(), "1 has waited 2.5 s");
        tokio::task::yield_now().await;
        assert!(tasks[1].is_finished() && !tasks[0].is_finished() && !tasks[2].is_finished());
        assert_eq!(connections.lock().len(), 2, "its place is gone with it");
        assert!(!connections.close_oldest_stalled(), "2 waits for a body since a moment only, 0 is answering");
        tokio::time::advance(STALLED_AFTER + Duration::from_millis(1)).await;
        assert!(connections.close_oldest_stalled());
        tokio::task::yield_now().await;
        assert!(tasks[2].is_finished() && !tasks[0].is_finished());
    }

    type Answer = Poll<Option<Result<Frame<Bytes>, std::convert::Infallible>>>;

    /// A request body that answers what it is scripted to.
    struct Scripted(std::collections::VecDeque<Answer>);

    impl Body for Scripted {
        type Data = Bytes;
        type Error = std::convert::Infallible;

        fn poll_frame(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Answer {
            self.0.pop_front().unwrap_or(Poll::Ready(None))
        }
    }

    /// A body its handler has not come to read is not a stalled one; a
    /// body the handler waits for is, counted from its first wait and not
    /// reset by the bytes that trickle in, until it is whole.
    #[tokio::test(start_paused = true)]
    async fn only_the_servers_waits_on_the_client_count() {
        let connections = Connections::new(8);
        let (phase, _registered) = connections.register();
        phase.head_received();
        let chunk = || Poll::Ready(Some(Ok(Frame::data(Bytes::from_static(b"x")))));
        let script = [chunk(), Poll::Pending, chunk(), Poll::Pending, Poll::Ready(None)];
        let mut body = Box::pin(RequestBody::new(Scripted(script.into_iter().collect()), Arc::clone(&phase)));
        let mut cx = Context::from_waker(std::task::Waker::noop());
        tokio::time::advance(Duration::from_secs(5)).await;
        assert_eq!(phase.stalled_since(), None, "the handler has not asked for the body: it is busy, not waiting");
        assert!(body.as_mut().poll_frame(&mut cx).is_ready());
        assert_eq!(phase.stalled_since(), None, "what had arrived came at once");
        assert!(body.as_mut().poll_frame(&mut cx).is_pending());
        let (since, _) = phase.stalled_since().expect("waiting on the client");
        tokio::time::advance(Duration::from_secs(1)).await;
        assert!(body.as_mut().poll_frame(&mut cx).is_ready());
        assert!(body.as_mut().poll_frame(&mut cx).is_pending());
        let (still, progress) = phase.stalled_since().expect("still waiting");
        assert_eq!(still, since, "a trickle keeps the first wait's time");
        assert_eq!(progress, since + 1000, "and tells when it last came");
        tokio::time::advance(Duration::from_secs(2)).await;
        assert!(phase.candidate(millis(phase.epoch)).is_some(), "two bytes in three seconds: too slow to keep its place");
        assert!(matches!(body.as_mut().poll_frame(&mut cx), Poll::Ready(None)));
        assert_eq!(phase.stalled_since(), None, "whole");
    }

    /// Among connections without a whole request for over two seconds,
    /// an upload still coming in goes after a socket that sends nothing.
    #[tokio::test(start_paused = true)]
    async fn a_client_that_still_sends_is_closed_after_one_that_does_not() {
        let connections = Connections::new(8);
        let (uploading, upload) = connections.register();
        uploading.head_received();
        uploading.waiting_for_body();
        let upload_task = tokio::spawn(async move {
            let _upload = upload;
            std::future::pending::<()>().await;
        });
        tokio::time::advance(Duration::from_millis(500)).await;
        let (_stalled, stall) = connections.register();
        let stall_task = tokio::spawn(async move {
            let _stall = stall;
            std::future::pending::<()>().await;
        });
        connections.lock().get_mut(&0).unwrap().1 = Some(upload_task.abort_handle());
        connections.lock().get_mut(&1).unwrap().1 = Some(stall_task.abort_handle());
        tokio::time::advance(Duration::from_secs(3)).await;
        uploading.progressed(2_000);
        assert!(connections.close_oldest_stalled());
        tokio::task::yield_now().await;
        assert!(stall_task.is_finished() && !upload_task.is_finished(), "the silent one first, though the upload started earlier");
        assert!(!connections.close_oldest_stalled(), "an upload at a usable pace is never closed for this");
        tokio::time::advance(Duration::from_secs(20)).await;
        assert!(connections.close_oldest_stalled(), "once it falls below the pace, it may be");
    }

    /// Connections that wait forever, with how to close them.
    fn open_many(connections: &Connections, n: usize) -> Vec<(Arc<Phase>, tokio::task::JoinHandle<()>)> {
        (0..n)
            .map(|_| {
                let (phase, registered) = connections.register();
                let id = registered.id();
                let task = tokio::spawn(async move {
                    let _registered = registered;
                    std::future::pending::<()>().await;
                });
                connections.closes_with(id, task.abort_handle());
                (phase, task)
            })
            .collect()
    }

    /// An upload just above the pace, in chunks a second apart, keeps its
    /// place however often room is looked for.
    #[tokio::test(start_paused = true)]
    async fn an_upload_in_chunks_just_above_the_pace_is_never_closed() {
        let connections = Connections::new(8);
        let open = open_many(&connections, 1);
        let (upload, task) = &open[0];
        upload.head_received();
        upload.progressed(1_460);
        upload.waiting_for_body();
        for _ in 0..30 {
            for _ in 0..4 {
                tokio::time::advance(Duration::from_millis(250)).await;
                assert!(!connections.close_oldest_stalled());
            }
            upload.progressed(300);
        }
        tokio::task::yield_now().await;
        assert!(!task.is_finished());
    }

    /// Uploads at a usable pace may hold at most half the slots against
    /// newcomers: past that, the one silent longest goes, stalled
    /// connections before any of them.
    #[tokio::test(start_paused = true)]
    async fn uploads_that_fill_over_half_the_slots_make_room_too() {
        let connections = Connections::new(4);
        let open = open_many(&connections, 4);
        for (phase, _) in &open[..3] {
            phase.head_received();
            phase.waiting_for_body();
        }
        tokio::time::advance(Duration::from_secs(3)).await;
        for (phase, _) in &open[..3] {
            phase.progressed(1_000);
        }
        assert!(connections.close_oldest_stalled());
        tokio::task::yield_now().await;
        assert!(open[3].1.is_finished(), "the one without a head goes first");
        assert!(open[..3].iter().all(|(_, task)| !task.is_finished()));
        tokio::time::advance(Duration::from_millis(100)).await;
        open[0].0.progressed(1_000);
        open[1].0.progressed(1_000);
        assert!(connections.close_oldest_stalled(), "three uploads in four slots: a crowd");
        tokio::task::yield_now().await;
        assert!(open[2].1.is_finished(), "the upload silent longest");
        assert!(!open[0].1.is_finished() && !open[1].1.is_finished());
        assert!(!connections.close_oldest_stalled(), "two in four are not over half");
    }
}
