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

struct Entry {
    context: Arc<InstallationContext>,
    generation: u64,
    fetched: Instant,
}

#[derive(Default)]
pub struct TokenCache {
    entries: RwLock<HashMap<String, Entry>>,
}

impl TokenCache {
    /// The context of `token`, if a usable one is kept.
    pub fn get(&self, token: &str, generation: u64) -> Option<Arc<InstallationContext>> {
        let entries = self.entries.read().unwrap_or_else(|p| p.into_inner());
        entries.get(token).filter(|e| e.generation == generation && e.fetched.elapsed() < TTL).map(|e| Arc::clone(&e.context))
    }

    pub fn put(&self, token: &str, context: Arc<InstallationContext>, generation: u64) {
        let mut entries = self.entries.write().unwrap_or_else(|p| p.into_inner());
        if entries.len() >= CAPACITY {
            entries.clear();
        }
        entries.insert(token.to_owned(), Entry { context, generation, fetched: Instant::now() });
    }
}
