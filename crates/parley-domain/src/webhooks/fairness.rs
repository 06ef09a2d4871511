//! Sharing the delivery worker's slots between tenants, and backing off
//! endpoints that keep failing.
//!
//! Slots are what slow endpoints take from everyone else: an attempt to an
//! endpoint that accepts the connection and never answers holds its slot
//! for the whole timeout. These rules keep one tenant's endpoints from
//! delaying another tenant's deliveries, without idling slots that nobody
//! else wants:
//!
//! - **A reserve for newcomers.** A tenant with attempts in flight may use
//!   every free slot but the reserve (an eighth of all slots, at least
//!   one); a tenant with none in flight may take half of what is free,
//!   reserve included. So a tenant alone can fill almost every slot, and
//!   another tenant's first delivery still starts at once. Within a claim,
//!   tenants take turns (round robin), each oldest delivery first, so as
//!   slots free up busy tenants share them evenly.
//! - **Per endpoint.** At most `per_endpoint` attempts to one endpoint at
//!   once, and one while it is failing: a failing endpoint is probed, not
//!   flooded.
//! - **Circuit breaker.** An endpoint that stops answering (no response,
//!   5xx or 429) [`BREAKER_THRESHOLD`] times in a row is paused as a whole:
//!   its due deliveries wait without taking slots, then one probe decides.
//!   Each pause in a row is twice as long as the last (30 s up to an hour);
//!   attempts that were already out when it paused do not lengthen it.
//!   Pausing does not spend the deliveries' own retries. An endpoint that
//!   answers, even with a 4xx, is up: it returns fast and holds no slot.

use std::collections::{HashMap, VecDeque};
use std::time::Duration;

use crate::clock::Timestamp;
use crate::model::{DeliveryId, TenantId, WebhookId};

/// Failures in a row that pause an endpoint.
pub const BREAKER_THRESHOLD: u32 = 5;
/// The first pause; each further pause in a row doubles it.
pub const BREAKER_FIRST_PAUSE: Duration = Duration::from_secs(30);
/// The longest pause.
pub const BREAKER_LONGEST_PAUSE: Duration = Duration::from_secs(3600);

/// An endpoint's standing, as counted after an attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EndpointHealth {
    /// Unanswered attempts in a row.
    pub failures: u32,
    pub paused_until: Option<Timestamp>,
    /// Pauses in a row, the one in force included.
    pub pauses: u32,
}

/// A pause to start: until when, and the pauses in a row it makes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pause {
    pub until: Timestamp,
    pub pauses: u32,
}

/// Whether an endpoint with `health` (counted after a failure) is to be
/// paused now. Not while a pause is in force: the attempts that were out
/// when it started fail late, and must not lengthen it.
pub fn pause_after_failure(health: EndpointHealth, now: Timestamp) -> Option<Pause> {
    if health.failures < BREAKER_THRESHOLD || health.paused_until.is_some_and(|until| until > now) {
        return None;
    }
    let doubling = 1u32.checked_shl(health.pauses.min(31)).unwrap_or(u32::MAX);
    let length = BREAKER_FIRST_PAUSE.saturating_mul(doubling).min(BREAKER_LONGEST_PAUSE);
    Some(Pause { until: now.plus(length), pauses: health.pauses.saturating_add(1) })
}

/// A due delivery, as a claim sees it before leasing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DueDelivery {
    pub id: DeliveryId,
    pub tenant_id: TenantId,
    pub endpoint_id: WebhookId,
    /// The endpoint's failures in a row; above zero it is probed one
    /// attempt at a time.
    pub endpoint_failures: u32,
}

/// The worker's bounds.
#[derive(Clone, Copy, Debug)]
pub struct Slots {
    /// Attempts in flight at once, in all.
    pub total: usize,
    /// Attempts in flight at once to one endpoint.
    pub per_endpoint: usize,
}

impl Slots {
    /// Slots a tenant that already has attempts out may not take.
    pub fn reserve(&self) -> usize {
        (self.total / 8).max(1)
    }
}

/// Attempts in flight, by tenant and by endpoint.
#[derive(Clone, Debug, Default)]
pub struct InFlight {
    pub tenants: HashMap<TenantId, usize>,
    pub endpoints: HashMap<WebhookId, usize>,
}

impl InFlight {
    fn tenant(&self, t: TenantId) -> usize {
        self.tenants.get(&t).copied().unwrap_or(0)
    }

    fn endpoint(&self, e: WebhookId) -> usize {
        self.endpoints.get(&e).copied().unwrap_or(0)
    }

    /// How many more attempts tenant `t` may start with `free` idle slots.
    pub fn tenant_allowance(&self, t: TenantId, free: usize, slots: Slots) -> usize {
        if self.tenant(t) == 0 { free.div_ceil(2) } else { free.saturating_sub(slots.reserve()) }
    }

    /// How many more attempts endpoint `e` may have.
    pub fn endpoint_allowance(&self, e: WebhookId, failures: u32, slots: Slots) -> usize {
        let bound = if failures > 0 { 1 } else { slots.per_endpoint };
        bound.saturating_sub(self.endpoint(e))
    }
}

/// Chooses which due deliveries to start: tenants take turns, each within
/// its share and its endpoints' bounds, at most `free` in all. `due` is
/// ordered oldest first.
pub fn pick(due: &[DueDelivery], in_flight: &InFlight, free: usize, slots: Slots) -> Vec<DeliveryId> {
    let mut queues: Vec<(TenantId, VecDeque<DueDelivery>)> = Vec::new();
    for d in due {
        match queues.iter_mut().find(|(t, _)| *t == d.tenant_id) {
            Some((_, q)) => q.push_back(*d),
            None => queues.push((d.tenant_id, VecDeque::from([*d]))),
        }
    }
    let mut tenant_left: HashMap<TenantId, usize> = queues.iter().map(|(t, _)| (*t, in_flight.tenant_allowance(*t, free, slots))).collect();
    let mut endpoint_taken: HashMap<WebhookId, usize> = HashMap::new();
    let mut chosen = Vec::new();
    let mut progress = true;
    while chosen.len() < free && progress {
        progress = false;
        for (tenant, queue) in &mut queues {
            if chosen.len() >= free {
                break;
            }
            let left = tenant_left.entry(*tenant).or_default();
            if *left == 0 {
                continue;
            }
            // This tenant's oldest delivery whose endpoint still has room.
            let position = queue.iter().position(|d| {
                let taken = endpoint_taken.get(&d.endpoint_id).copied().unwrap_or(0);
                in_flight.endpoint_allowance(d.endpoint_id, d.endpoint_failures, slots) > taken
            });
            let Some(d) = position.and_then(|p| queue.remove(p)) else { continue };
            *endpoint_taken.entry(d.endpoint_id).or_default() += 1;
            *left -= 1;
            chosen.push(d.id);
            progress = true;
        }
    }
    chosen
}

#[cfg(test)]
mod tests {
    use super::*;

    const SLOTS: Slots = Slots { total: 128, per_endpoint: 16 };

    fn due(id: i64, tenant: i64, endpoint: i64) -> DueDelivery {
        DueDelivery { id: DeliveryId(id), tenant_id: TenantId(tenant), endpoint_id: WebhookId(endpoint), endpoint_failures: 0 }
    }

    #[test]
    fn a_busy_tenant_leaves_the_reserve_to_the_next() {
        // Tenant 1 holds 112 of 128 slots; its backlog is older.
        let mut in_flight = InFlight::default();
        in_flight.tenants.insert(TenantId(1), 112);
        let mut list: Vec<DueDelivery> = (0..100).map(|n| due(n, 1, 10 + n % 10)).collect();
        list.push(due(1000, 2, 99));
        let chosen = pick(&list, &in_flight, 16, SLOTS);
        assert_eq!(chosen, vec![DeliveryId(1000)], "tenant 1 may not take the reserve; tenant 2 gets its delivery at once");
    }

    #[test]
    fn a_tenant_alone_can_use_all_but_the_reserve() {
        let list: Vec<DueDelivery> = (0..200).map(|n| due(n, 1, n % 10)).collect();
        let mut in_flight = InFlight::default();
        assert_eq!(pick(&list, &in_flight, 128, SLOTS).len(), 64, "a first claim takes half");
        in_flight.tenants.insert(TenantId(1), 64);
        for e in 0..10 {
            in_flight.endpoints.insert(WebhookId(e), 6);
        }
        assert_eq!(pick(&list, &in_flight, 64, SLOTS).len(), 48, "then everything but the reserve of 16");
    }

    #[test]
    fn tenants_take_turns() {
        let list: Vec<DueDelivery> = (0..50).map(|n| due(n, 1, 1)).chain((100..103).map(|n| due(n, 2, 2))).collect();
        let chosen = pick(&list, &InFlight::default(), 8, SLOTS);
        assert_eq!(&chosen[..4], &[0, 100, 1, 101].map(DeliveryId), "round robin, oldest first");
        assert_eq!(chosen.len(), 7, "tenant 1 gets ceil(8/2) = 4, tenant 2 its 3");
    }

    #[test]
    fn endpoints_are_bounded_and_failing_ones_probed_one_at_a_time() {
        let slots = Slots { total: 128, per_endpoint: 4 };
        let mut list: Vec<DueDelivery> = (0..20).map(|n| due(n, 1, 1)).collect();
        list.extend((20..30).map(|n| DueDelivery { endpoint_failures: 2, ..due(n, 1, 2) }));
        let chosen = pick(&list, &InFlight::default(), 128, slots);
        assert_eq!(chosen.iter().filter(|id| id.0 < 20).count(), 4, "per-endpoint bound");
        assert_eq!(chosen.iter().filter(|id| id.0 >= 20).count(), 1, "one probe to the failing endpoint");
    }

    #[test]
    fn a_newcomer_gets_the_last_free_slot() {
        let mut in_flight = InFlight::default();
        in_flight.tenants.insert(TenantId(1), 127);
        assert_eq!(pick(&[due(1, 2, 5)], &in_flight, 1, SLOTS), vec![DeliveryId(1)]);
        assert!(pick(&[due(2, 1, 6)], &in_flight, 1, SLOTS).is_empty());
    }

    #[test]
    fn a_burst_of_failures_pauses_once_and_pauses_in_a_row_double() {
        let now = Timestamp::from_millis(1_000_000);
        let h = |failures, paused_until, pauses| EndpointHealth { failures, paused_until, pauses };
        assert_eq!(pause_after_failure(h(BREAKER_THRESHOLD - 1, None, 0), now), None);
        let first = pause_after_failure(h(BREAKER_THRESHOLD, None, 0), now).unwrap();
        assert_eq!(first, Pause { until: now.plus(Duration::from_secs(30)), pauses: 1 });
        // Sixteen attempts were out: the late failures do not lengthen it.
        assert_eq!(pause_after_failure(h(16, Some(first.until), 1), now.plus(Duration::from_secs(1))), None);
        // The probe after the pause fails: twice as long.
        let second = pause_after_failure(h(17, Some(first.until), 1), first.until).unwrap();
        assert_eq!(second, Pause { until: first.until.plus(Duration::from_secs(60)), pauses: 2 });
        assert_eq!(pause_after_failure(h(50, None, 40), now).unwrap().until, now.plus(BREAKER_LONGEST_PAUSE));
    }
}
