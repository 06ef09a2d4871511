//! The order the tables are written in: a table after every table its
//! foreign keys point at, so each row's parents are already there when
//! the target checks them.

use std::collections::BTreeSet;

use super::catalog::{Catalog, Table};

/// Parents first; among tables that are ready together, by name, so the
/// order (and the progress shown) is the same on every run. A table that
/// points at itself is fine; tables that point at each other in a circle
/// cannot be ordered and are named.
pub fn by_dependencies(catalog: &Catalog) -> Result<Vec<&Table>, String> {
    let mut done: BTreeSet<&str> = BTreeSet::new();
    let mut ordered = Vec::with_capacity(catalog.len());
    while ordered.len() < catalog.len() {
        let ready: Vec<&Table> = catalog
            .values()
            .filter(|t| !done.contains(t.name.as_str()))
            .filter(|t| t.parents.iter().all(|p| p == &t.name || done.contains(p.as_str()) || !catalog.contains_key(p)))
            .collect();
        if ready.is_empty() {
            let stuck: Vec<&str> = catalog.keys().map(String::as_str).filter(|n| !done.contains(n)).collect();
            return Err(format!("the foreign keys of tables {} form a cycle, so no table of them can be written first", stuck.join(", ")));
        }
        for t in ready {
            done.insert(&t.name);
            ordered.push(t);
        }
    }
    Ok(ordered)
}

#[cfg(test)]
mod tests {
    use super::super::catalog::table;
    use super::super::value::ColumnType::Integer;
    use super::*;

    fn names(catalog: &Catalog) -> Vec<&str> {
        by_dependencies(catalog).unwrap().iter().map(|t| t.name.as_str()).collect()
    }

    fn catalog(edges: &[(&str, &[&str])]) -> Catalog {
        edges.iter().map(|(name, parents)| (name.to_string(), table(name, &[("id", Integer)], parents))).collect()
    }

    #[test]
    fn parents_come_before_their_children() {
        let c = catalog(&[
            ("webhook_attempts", &["tenants", "webhook_deliveries"]),
            ("webhook_deliveries", &["tenants", "webhook_endpoints", "webhook_events"]),
            ("webhook_events", &["tenants"]),
            ("webhook_endpoints", &["tenants"]),
            ("messages", &["tenants", "conversations"]),
            ("conversations", &["tenants", "sites", "visitors", "operators"]),
            ("visitors", &["tenants", "sites"]),
            ("operators", &["tenants"]),
            ("sites", &["tenants"]),
            ("tenants", &[]),
            ("system_state", &[]),
        ]);
        let order = names(&c);
        let at = |n: &str| order.iter().position(|o| *o == n).unwrap();
        for (child, parents) in [
            ("webhook_attempts", &["webhook_deliveries"][..]),
            ("webhook_deliveries", &["webhook_endpoints", "webhook_events"]),
            ("messages", &["conversations"]),
            ("conversations", &["sites", "visitors", "operators"]),
            ("sites", &["tenants"]),
        ] {
            for p in parents {
                assert!(at(p) < at(child), "{p} before {child} in {order:?}");
            }
        }
        assert_eq!(order.len(), c.len());
    }

    #[test]
    fn the_order_is_stable_and_by_name_among_equals() {
        let c = catalog(&[("b", &[]), ("a", &[]), ("c", &["a"])]);
        assert_eq!(names(&c), ["a", "b", "c"]);
    }

    #[test]
    fn self_references_are_allowed_and_cycles_named() {
        assert_eq!(names(&catalog(&[("tree", &["tree"])])), ["tree"]);
        let e = by_dependencies(&catalog(&[("a", &["b"]), ("b", &["a"]), ("c", &[])])).unwrap_err();
        assert!(e.contains("tables a, b form"), "only the tables in the cycle: {e}");
    }
}
