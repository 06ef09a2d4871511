//! Sharing a claim between tenants: each tenant's oldest pushes first,
//! tenants taking turns, those with the fewest pushes out first, so a
//! tenant with a backlog cannot hold back another tenant's first push,
//! even when a single slot frees at a time.

use std::collections::{HashMap, VecDeque};

use super::DuePush;
use crate::model::TenantId;

/// Chooses at most `free` of `due` (each tenant's in the order given):
/// tenants take turns, the one with fewest pushes `in_flight` first (then
/// the one whose first push comes first).
pub fn pick(due: &[DuePush], free: usize, in_flight: &HashMap<TenantId, usize>) -> Vec<DuePush> {
    let mut queues: Vec<VecDeque<DuePush>> = Vec::new();
    for push in due {
        match queues.iter_mut().find(|q| q.front().is_some_and(|p| p.tenant_id == push.tenant_id)) {
            Some(queue) => queue.push_back(*push),
            None => queues.push(VecDeque::from([*push])),
        }
    }
    // Stable: among tenants with as many out, the first due goes first.
    queues.sort_by_key(|q| q.front().map_or(0, |p| in_flight.get(&p.tenant_id).copied().unwrap_or(0)));
    let mut chosen = Vec::with_capacity(free.min(due.len()));
    while chosen.len() < free && queues.iter().any(|q| !q.is_empty()) {
        for queue in &mut queues {
            if chosen.len() == free {
                break;
            }
            if let Some(push) = queue.pop_front() {
                chosen.push(push);
            }
        }
    }
    chosen
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{PushId, TenantId};

    fn due(id: i64, tenant: i64) -> DuePush {
        DuePush { id: PushId(id), tenant_id: TenantId(tenant) }
    }

    #[test]
    fn tenants_take_turns() {
        let none = HashMap::new();
        let list = [due(1, 1), due(2, 1), due(3, 1), due(4, 2), due(5, 3)];
        let ids: Vec<i64> = pick(&list, 4, &none).iter().map(|p| p.id.0).collect();
        assert_eq!(ids, [1, 4, 5, 2]);
        assert_eq!(pick(&list, 10, &none).len(), 5);
        assert!(pick(&list, 0, &none).is_empty());
    }

    #[test]
    fn a_free_slot_goes_to_the_tenant_with_fewest_out() {
        let list = [due(1, 1), due(2, 1), due(3, 2)];
        let busy = HashMap::from([(TenantId(1), 30)]);
        let ids: Vec<i64> = pick(&list, 1, &busy).iter().map(|p| p.id.0).collect();
        assert_eq!(ids, [3], "the tenant with nothing out is not held back by the other's backlog");
    }
}
