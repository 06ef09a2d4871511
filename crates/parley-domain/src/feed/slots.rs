//! How many streams one client address may hold open on this instance
//! (`PARLEY_STREAMS_PER_ADDRESS`), and how many all addresses together
//! may. A stream holds a connection and a watch for as long as its client
//! listens, and the overload rule never closes it (it answers a whole
//! request), so neither one address nor a few may hold every connection:
//! some are always left for other requests. Counted per instance: behind
//! a load balancer an address may hold this many on each.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use prometheus_client::metrics::gauge::Gauge;

use crate::error::DomainError;
use crate::limits::{ClientKey, Held, PerKeyLimit};
use crate::metrics::Metrics;

/// What a client is told to wait before trying again at the limit: a
/// stream frees its slot only when its client goes away.
const RETRY_AFTER_SECS: u64 = 5;

pub struct StreamSlots {
    per_address: PerKeyLimit<ClientKey>,
    /// Streams all addresses may hold at once.
    total: usize,
    open: Arc<AtomicUsize>,
    /// Streams open on this instance, for `/metrics`.
    gauge: Gauge,
}

/// An open stream's place; dropping it frees the place.
pub struct Slot {
    _held: Held<ClientKey>,
    open: Arc<AtomicUsize>,
    gauge: Gauge,
}

impl StreamSlots {
    /// Open streams are counted in `metrics` (`parley_streams_open`).
    pub fn new(per_address: usize, total: usize, metrics: &Metrics) -> Arc<Self> {
        Arc::new(Self::with_gauge(per_address, total, metrics.streams_open()))
    }

    fn with_gauge(per_address: usize, total: usize, gauge: Gauge) -> Self {
        Self { per_address: PerKeyLimit::new(per_address, RETRY_AFTER_SECS), total, open: Arc::default(), gauge }
    }

    /// A place for one more stream of `key`, or `RateLimited` when the
    /// address holds its share already, or the instance as many streams
    /// as it may.
    pub fn take(&self, key: ClientKey) -> Result<Slot, DomainError> {
        let held = self.per_address.take(&key)?;
        let taken = self.open.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| (n < self.total).then_some(n + 1));
        if taken.is_err() {
            return Err(DomainError::rate_limited(std::time::Duration::from_secs(RETRY_AFTER_SECS)));
        }
        self.gauge.inc();
        Ok(Slot { _held: held, open: Arc::clone(&self.open), gauge: self.gauge.clone() })
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.open.fetch_sub(1, Ordering::AcqRel);
        self.gauge.dec();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{IpAddr, Ipv4Addr};

    fn key(last: u8) -> ClientKey {
        IpAddr::V4(Ipv4Addr::new(192, 0, 2, last)).into()
    }

    #[test]
    fn an_address_holds_its_share_and_gets_it_back_as_streams_close() {
        let gauge = Gauge::default();
        let slots = StreamSlots::with_gauge(2, 100, gauge.clone());
        let a = slots.take(key(1)).expect("first");
        let _b = slots.take(key(1)).expect("second");
        assert!(matches!(slots.take(key(1)), Err(DomainError::RateLimited { .. })));
        let _other = slots.take(key(2)).expect("another address has its own share");
        drop(a);
        let _c = slots.take(key(1)).expect("a closed stream frees its place");
        assert_eq!(gauge.get(), 3, "the gauge counts what is open");
    }

    #[test]
    fn all_addresses_together_hold_at_most_the_total() {
        let slots = StreamSlots::with_gauge(2, 3, Gauge::default());
        let _a = [slots.take(key(1)).unwrap(), slots.take(key(1)).unwrap()];
        let b = slots.take(key(2)).expect("the third");
        assert!(matches!(slots.take(key(3)), Err(DomainError::RateLimited { .. })), "the instance holds its total");
        drop(b);
        let _c = slots.take(key(3)).expect("a place frees for anyone");
        assert!(matches!(slots.take(key(2)), Err(DomainError::RateLimited { .. })));
    }
}
