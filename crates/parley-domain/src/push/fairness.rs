//! Sharing a claim between tenants: each tenant's oldest pushes first,
//! tenants taking turns, so a tenant with a backlog cannot hold back
//! another tenant's first push.

use std::collections::VecDeque;

use super::DuePush;

/// Chooses at most `free` of `due` (each tenant's in the order given),
/// one tenant at a time in the order their first push appears.
pub fn pick(due: &[DuePush], free: usize) -> Vec<DuePush> {
    let mut queues: Vec<VecDeque<DuePush>> = Vec::new();
    for push in due {
        match queues.iter_mut().find(|q| q.front().is_some_and(|p| p.tenant_id == push.tenant_id)) {
            Some(queue) => queue.push_back(*push),
            None => queues.push(VecDeque::from([*push])),
        }
    }
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
        let list = [due(1, 1), due(2, 1), due(3, 1), due(4, 2), due(5, 3)];
        let ids: Vec<i64> = pick(&list, 4).iter().map(|p| p.id.0).collect();
        assert_eq!(ids, [1, 4, 5, 2]);
        assert_eq!(pick(&list, 10).len(), 5);
        assert!(pick(&list, 0).is_empty());
    }
}
