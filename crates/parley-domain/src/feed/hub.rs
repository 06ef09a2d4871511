//! Tells an instance's streams when the feed has something for them.
//!
//! One follower per instance reads the whole feed (woken by this
//! instance's commits and, on PostgreSQL, by other instances'
//! notifications, with a poll behind both) and publishes what it read
//! here: each conversation's and each tenant's watchers are woken. A
//! stream then reads the feed itself from its own cursor, so a wake-up
//! that comes late or twice costs a read, never an entry, and the hub
//! holds no events, only counters.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::watch;

use super::FeedMark;
use crate::model::{ConversationId, TenantId};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Key {
    Conversation(ConversationId),
    Tenant(TenantId),
}

#[derive(Default)]
pub struct Hub {
    watched: Mutex<HashMap<Key, watch::Sender<u64>>>,
}

/// A stream's subscription; dropping it unsubscribes.
pub struct Watch {
    hub: Arc<Hub>,
    key: Key,
    receiver: watch::Receiver<u64>,
}

impl Watch {
    /// Returns once something was published for this key since the last
    /// time it returned (or since the watch was made): a publication
    /// while the stream was busy reading is not lost.
    pub async fn changed(&mut self) {
        if self.receiver.changed().await.is_err() {
            // The hub never drops a sender another watch holds; should it,
            // wait for the stream's own timers instead of spinning.
            std::future::pending::<()>().await;
        }
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        let mut watched = self.hub.lock();
        // The receiver goes under the lock: two watches of one key
        // dropped at once then see each other's count, and the second
        // removes the key.
        drop(std::mem::replace(&mut self.receiver, watch::channel(0).1));
        if watched.get(&self.key).is_some_and(|s| s.receiver_count() == 0) {
            watched.remove(&self.key);
        }
    }
}

impl Hub {
    fn lock(&self) -> MutexGuard<'_, HashMap<Key, watch::Sender<u64>>> {
        self.watched.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn watch(self: &Arc<Self>, key: Key) -> Watch {
        let receiver = self.lock().entry(key).or_insert_with(|| watch::channel(0).0).subscribe();
        Watch { hub: Arc::clone(self), key, receiver }
    }

    /// Woken for entries about one conversation (a visitor's stream).
    pub fn conversation(self: &Arc<Self>, id: ConversationId) -> Watch {
        self.watch(Key::Conversation(id))
    }

    /// Woken for every entry of a tenant (an operator's stream).
    pub fn tenant(self: &Arc<Self>, id: TenantId) -> Watch {
        self.watch(Key::Tenant(id))
    }

    /// Wakes the watchers of what `marks` are about.
    pub fn publish(&self, marks: &[FeedMark]) {
        let watched = self.lock();
        if watched.is_empty() {
            return;
        }
        // A batch holds many entries of one tenant: each key is woken once.
        let keys: std::collections::HashSet<Key> =
            marks.iter().flat_map(|m| [Some(Key::Tenant(m.tenant)), m.conversation.map(Key::Conversation)]).flatten().collect();
        for key in keys {
            if let Some(sender) = watched.get(&key) {
                sender.send_modify(|n| *n = n.wrapping_add(1));
            }
        }
    }

    /// Wakes every watcher: the follower could not read, so streams look
    /// for themselves (their reads are the truth either way).
    pub fn publish_all(&self) {
        for sender in self.lock().values() {
            sender.send_modify(|n| *n = n.wrapping_add(1));
        }
    }

    /// Watches held, for the tests.
    #[cfg(test)]
    fn watchers(&self) -> usize {
        self.lock().values().map(|s| s.receiver_count()).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::feed::Position;
    use std::time::Duration;

    fn mark(tenant: i64, conversation: Option<i64>) -> FeedMark {
        FeedMark { position: Position { tx: 0, id: 1 }, tenant: TenantId(tenant), conversation: conversation.map(ConversationId) }
    }

    async fn woken(w: &mut Watch) -> bool {
        tokio::time::timeout(Duration::from_millis(50), w.changed()).await.is_ok()
    }

    #[tokio::test]
    async fn a_publication_wakes_its_conversation_and_tenant_even_when_not_awaited_yet() {
        let hub = Arc::new(Hub::default());
        let (mut conversation, mut tenant, mut other) =
            (hub.conversation(ConversationId(7)), hub.tenant(TenantId(1)), hub.tenant(TenantId(2)));
        hub.publish(&[mark(1, Some(7))]);
        assert!(woken(&mut conversation).await && woken(&mut tenant).await);
        assert!(!woken(&mut other).await, "another tenant sleeps");
        assert!(!woken(&mut conversation).await, "once per publication");
    }

    #[tokio::test]
    async fn keys_are_forgotten_with_their_last_watch() {
        let hub = Arc::new(Hub::default());
        let a = hub.conversation(ConversationId(1));
        let b = hub.conversation(ConversationId(1));
        assert_eq!(hub.watchers(), 2);
        drop(a);
        assert_eq!(hub.lock().len(), 1);
        drop(b);
        assert!(hub.lock().is_empty());
    }

    #[test]
    fn watches_dropped_at_once_on_several_threads_leave_no_key_behind() {
        let hub = Arc::new(Hub::default());
        for _ in 0..2_000 {
            let watches: Vec<Watch> = (0..4).map(|_| hub.conversation(ConversationId(1))).collect();
            let barrier = Arc::new(std::sync::Barrier::new(watches.len()));
            let threads: Vec<_> = watches
                .into_iter()
                .map(|w| {
                    let barrier = Arc::clone(&barrier);
                    std::thread::spawn(move || {
                        barrier.wait();
                        drop(w);
                    })
                })
                .collect();
            threads.into_iter().for_each(|t| t.join().expect("a dropping thread"));
            assert!(hub.lock().is_empty(), "the last watch of a key removes it");
        }
    }
}
