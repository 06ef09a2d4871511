//! Installation tokens resolved from memory.
//!
//! Every widget request starts by resolving its public token to a tenant,
//! a site and an installation; a poll that finds nothing new does little
//! else. The answer rarely changes, so it is kept here: an entry is used
//! while no write of this process has changed installations since it was
//! read (the storage's installations generation) and for at most [`TTL`],
//! the bound on how long a change made by another instance can go unseen.
//! What a widget needs fresh (its installation's health and heartbeat)
//! is read from the database, not from here.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use crate::model::InstallationContext;

/// How long an entry may be used.
pub const TTL: Duration = Duration::from_secs(2);
/// Entries kept at most; past it the cache starts afresh.
const CAPACITY: usize = 20_000;

struct Entry<V> {
    context: V,
    generation: u64,
    fetched: Instant,
}

impl<V> Entry<V> {
    fn usable(&self, generation: u64) -> bool {
        self.generation == generation && self.fetched.elapsed() < TTL
    }
}

/// Resolved tokens (generic over what they resolve to only so the eviction
/// can be tested without building installations).
pub struct TokenCache<V = Arc<InstallationContext>> {
    entries: RwLock<HashMap<String, Entry<V>>>,
}

impl<V> Default for TokenCache<V> {
    fn default() -> Self {
        Self { entries: RwLock::new(HashMap::new()) }
    }
}

impl<V: Clone> TokenCache<V> {
    /// The context of `token`, if a usable one is kept.
    pub fn get(&self, token: &str, generation: u64) -> Option<V> {
        let entries = self.entries.read().unwrap_or_else(|p| p.into_inner());
        entries.get(token).filter(|e| e.usable(generation)).map(|e| e.context.clone())
    }

    /// Keeps `context` for `token`. A full cache first drops what can no
    /// longer be used, and starts afresh only if everything is still
    /// fresh: one tenant cycling through many installations must not empty
    /// every other tenant's entries each time it fills the cache.
    pub fn put(&self, token: &str, context: V, generation: u64) {
        let mut entries = self.entries.write().unwrap_or_else(|p| p.into_inner());
        if entries.len() >= CAPACITY {
            entries.retain(|_, e| e.usable(generation));
            if entries.len() >= CAPACITY {
                entries.clear();
            }
        }
        entries.insert(token.to_owned(), Entry { context, generation, fetched: Instant::now() });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_cache_drops_unusable_entries_first() {
        let cache = TokenCache::<u32>::default();
        cache.put("kept", 1, 2);
        for n in 0..CAPACITY - 1 {
            cache.put(&format!("old{n}"), 0, 1);
        }
        // Full: the entries of the old generation go, the fresh one stays.
        cache.put("new", 2, 2);
        assert_eq!(cache.get("kept", 2), Some(1));
        assert_eq!(cache.get("new", 2), Some(2));
        assert_eq!(cache.entries.read().expect("lock").len(), 2);
    }

    #[test]
    fn a_change_of_generation_hides_an_entry() {
        let cache = TokenCache::<u32>::default();
        cache.put("t", 7, 1);
        assert_eq!(cache.get("t", 1), Some(7));
        assert_eq!(cache.get("t", 2), None);
    }
}
