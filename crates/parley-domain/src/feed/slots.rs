//! How many streams one client address may hold open on this instance
//! (`PARLEY_STREAMS_PER_ADDRESS`). A stream holds a connection and a
//! watch for as long as its client listens, so one address must not hold
//! them all. Counted per instance: behind a load balancer an address
//! may hold this many on each.

use prometheus_client::metrics::gauge::Gauge;

use crate::error::DomainError;
use crate::limits::{ClientKey, Held, PerKeyLimit};
use crate::metrics::Metrics;

/// What a client is told to wait before trying again at the limit: a
/// stream frees its slot only when its client goes away.
const RETRY_AFTER_SECS: u64 = 5;

pub struct StreamSlots {
    per_address: PerKeyLimit<ClientKey>,
    /// Streams open on this instance, for `/metrics`.
    gauge: Gauge,
}

/// An open stream's place; dropping it frees the place.
pub struct Slot {
    _held: Held<ClientKey>,
    gauge: Gauge,
}

impl StreamSlots {
    /// Open streams are counted in `metrics` (`parley_streams_open`).
    pub fn new(per_address: usize, metrics: &Metrics) -> std::sync::Arc<Self> {
        std::sync::Arc::new(Self { per_address: PerKeyLimit::new(per_address, RETRY_AFTER_SECS), gauge: metrics.streams_open() })
    }

    /// A place for one more stream of `key`, or `RateLimited` when the
    /// address holds its share already.
    pub fn take(&self, key: ClientKey) -> Result<Slot, DomainError> {
        let held = self.per_address.take(&key)?;
        self.gauge.inc();
        Ok(Slot { _held: held, gauge: self.gauge.clone() })
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
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
        let slots = StreamSlots { per_address: PerKeyLimit::new(2, RETRY_AFTER_SECS), gauge: gauge.clone() };
        let a = slots.take(key(1)).expect("first");
        let _b = slots.take(key(1)).expect("second");
        assert!(matches!(slots.take(key(1)), Err(DomainError::RateLimited { .. })));
        let _other = slots.take(key(2)).expect("another address has its own share");
        drop(a);
        let _c = slots.take(key(1)).expect("a closed stream frees its place");
        assert_eq!(gauge.get(), 3, "the gauge counts what is open");
    }
}
