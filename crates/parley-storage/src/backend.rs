//! What both backends share around their threads: the queue bound, the
//! signals a commit sends, and closing.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use parley_domain::feed::Changes;
use parley_domain::model::ConversationId;
use parley_domain::store::{MessageCounts, StoreError};
use tokio::sync::Notify;

use crate::sql::Effects;

/// Units waiting for a database thread. Past this the backend answers
/// "unavailable" at once instead of queueing without limit.
const QUEUE_BOUND: usize = 16_384;

/// The sending end of a backend's unit queue. Closing drops it, after
/// which the backend's threads finish what is queued and stop.
pub(crate) struct Queue<T>(Mutex<Option<SyncSender<T>>>);

impl<T> Queue<T> {
    /// A queue and the receiving end for the backend's threads.
    pub(crate) fn new() -> (Self, Receiver<T>) {
        let (sender, receiver) = std::sync::mpsc::sync_channel(QUEUE_BOUND);
        (Self(Mutex::new(Some(sender))), receiver)
    }

    /// Queues a unit, or hands it back when the queue is full or closed.
    pub(crate) fn send(&self, job: T) -> Result<(), T> {
        let Some(sender) = self.0.lock().ok().and_then(|s| s.clone()) else { return Err(job) };
        sender.try_send(job).map_err(|e| match e {
            TrySendError::Full(job) => {
                tracing::warn!("database queue full: refusing a unit");
                job
            }
            TrySendError::Disconnected(job) => job,
        })
    }

    pub(crate) fn close(&self) {
        if let Ok(mut sender) = self.0.lock() {
            sender.take();
        }
    }
}

/// What other instances broadcast (see `Backend::broadcast`).
pub(crate) struct Heard(tokio::sync::broadcast::Sender<String>);

impl Default for Heard {
    fn default() -> Self {
        // A receiver that falls this far behind skips the oldest: hints
        // only, and a late typing indicator is worth nothing anyway.
        Self(tokio::sync::broadcast::channel(256).0)
    }
}

/// What the rest of the program hears after a commit.
#[derive(Default)]
pub(crate) struct Signals {
    /// What other instances broadcast.
    heard: Heard,
    /// Woken after every commit that added webhook deliveries.
    deliveries: Arc<Notify>,
    /// Moved on after every commit that changed what a token resolves to.
    installations_generation: AtomicU64,
    /// Woken after every commit that appended to the feed.
    feed: Arc<Notify>,
    /// Woken after every commit that queued pushes.
    pushes: Arc<Notify>,
    /// Messages committed by this instance: visitor, operator, system.
    messages: [AtomicU64; 3],
    /// Conversations changed by this instance's commits.
    changes: Arc<Changes>,
}

impl Signals {
    /// Called once a commit of this instance that changed `conversations`
    /// is durable, before its units' callers hear of it.
    pub(crate) fn conversations_changed(&self, conversations: &[ConversationId]) {
        self.changes.changed(conversations);
    }

    pub(crate) fn changes(&self) -> Arc<Changes> {
        Arc::clone(&self.changes)
    }

    /// Called once a commit that includes `effects` is durable, here or
    /// (as another instance announced) elsewhere.
    pub(crate) fn after_commit(&self, effects: Effects) {
        if effects.deliveries_added > 0 {
            self.deliveries.notify_one();
        }
        if effects.installations_changed {
            self.installations_generation.fetch_add(1, Ordering::Release);
        }
        if effects.feed_appended {
            self.feed.notify_one();
        }
        if effects.pushes_queued {
            self.pushes.notify_one();
        }
        if effects.conversations_erased {
            self.changes.everything_changed();
        }
        let m = effects.messages;
        for (counter, n) in self.messages.iter().zip([m.visitor, m.operator, m.system]) {
            if n > 0 {
                counter.fetch_add(n, Ordering::Relaxed);
            }
        }
    }

    /// Another instance broadcast `text`.
    pub(crate) fn hear(&self, text: String) {
        // Nobody listening is no failure.
        let _ = self.heard.0.send(text);
    }

    pub(crate) fn heard(&self) -> tokio::sync::broadcast::Receiver<String> {
        self.heard.0.subscribe()
    }

    pub(crate) fn messages_created(&self) -> MessageCounts {
        let [visitor, operator, system] = self.messages.each_ref().map(|c| c.load(Ordering::Relaxed));
        MessageCounts { visitor, operator, system }
    }

    pub(crate) fn feed(&self) -> Arc<Notify> {
        Arc::clone(&self.feed)
    }

    pub(crate) fn pushes(&self) -> Arc<Notify> {
        Arc::clone(&self.pushes)
    }

    pub(crate) fn deliveries(&self) -> Arc<Notify> {
        Arc::clone(&self.deliveries)
    }

    pub(crate) fn installations_generation(&self) -> u64 {
        self.installations_generation.load(Ordering::Acquire)
    }
}

/// A backend's threads and whether it is closing.
pub(crate) struct Threads {
    closed: AtomicBool,
    handles: Mutex<Vec<JoinHandle<()>>>,
}

impl Threads {
    pub(crate) fn new(handles: Vec<JoinHandle<()>>) -> Self {
        Self { closed: AtomicBool::new(false), handles: Mutex::new(handles) }
    }

    /// Set once closing: reads are refused from then on.
    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// Marks the backend closed and waits for its threads, which finish
    /// the units already queued once their queue's sender is dropped.
    pub(crate) async fn close(&self) {
        self.closed.store(true, Ordering::Release);
        let handles = self.handles.lock().map(|mut t| std::mem::take(&mut *t)).unwrap_or_default();
        let _ = tokio::task::spawn_blocking(move || {
            for t in handles {
                let _ = t.join();
            }
        })
        .await;
    }
}

pub(crate) fn closed() -> StoreError {
    StoreError::Unavailable("the database is closed".into())
}
