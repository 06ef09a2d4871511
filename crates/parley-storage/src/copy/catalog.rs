//! The tables as each database's own catalog describes them.
//!
//! Read from the catalog rather than listed here, so a table that a later
//! migration adds is copied without a change to the copy.

use std::collections::{BTreeMap, BTreeSet};

use super::value::ColumnType;

/// Tables that record the schema's own state, which each database keeps
/// for itself (the target's migrations wrote its own).
pub const BOOKKEEPING: &[&str] = &["parley_migrations"];

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Column {
    pub name: String,
    pub ty: ColumnType,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Table {
    pub name: String,
    /// In the catalog's order.
    pub columns: Vec<Column>,
    /// The primary key's columns, in key order; empty when it has none.
    pub key: Vec<String>,
    /// Tables this one's foreign keys point at.
    pub parents: BTreeSet<String>,
    /// The column whose new values a sequence hands out (an identity
    /// column, or SQLite's AUTOINCREMENT key), if any.
    pub sequence: Option<String>,
}

impl Table {
    pub fn column(&self, name: &str) -> Option<&Column> {
        self.columns.iter().find(|c| c.name == name)
    }
}

/// Every table of one database, by name.
pub type Catalog = BTreeMap<String, Table>;

/// Checks that both databases have the same tables with the same column
/// names (types may differ: that is what conversion is for), and lists
/// every difference when not.
pub fn compare(source: &Catalog, target: &Catalog) -> Result<(), String> {
    let mut problems = Vec::new();
    for name in source.keys().filter(|n| !target.contains_key(*n)) {
        problems.push(format!("table {name} is only in the source"));
    }
    for name in target.keys().filter(|n| !source.contains_key(*n)) {
        problems.push(format!("table {name} is only in the target"));
    }
    for (name, s) in source {
        let Some(t) = target.get(name) else { continue };
        for c in s.columns.iter().filter(|c| t.column(&c.name).is_none()) {
            problems.push(format!("column {name}.{} is only in the source", c.name));
        }
        for c in t.columns.iter().filter(|c| s.column(&c.name).is_none()) {
            problems.push(format!("column {name}.{} is only in the target", c.name));
        }
    }
    if problems.is_empty() { Ok(()) } else { Err(problems.join("; ")) }
}

#[cfg(test)]
pub(crate) fn table(name: &str, columns: &[(&str, ColumnType)], parents: &[&str]) -> Table {
    Table {
        name: name.into(),
        columns: columns.iter().map(|(n, ty)| Column { name: (*n).into(), ty: *ty }).collect(),
        key: vec!["id".into()],
        parents: parents.iter().map(|p| (*p).to_owned()).collect(),
        sequence: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ColumnType::*;

    fn catalog(tables: &[Table]) -> Catalog {
        tables.iter().map(|t| (t.name.clone(), t.clone())).collect()
    }

    #[test]
    fn columns_are_matched_by_name_whatever_their_order_and_type() {
        let s = catalog(&[table("operators", &[("id", Integer), ("active", Integer), ("email", Text)], &[])]);
        let t = catalog(&[table("operators", &[("email", Text), ("id", Integer), ("active", Bool)], &[])]);
        assert_eq!(compare(&s, &t), Ok(()));
    }

    #[test]
    fn every_difference_is_named() {
        let s = catalog(&[table("a", &[("id", Integer), ("x", Text)], &[]), table("b", &[("id", Integer)], &[])]);
        let t = catalog(&[table("a", &[("id", Integer), ("y", Text)], &[]), table("c", &[("id", Integer)], &[])]);
        let e = compare(&s, &t).unwrap_err();
        for part in [
            "table b is only in the source",
            "table c is only in the target",
            "column a.x is only in the source",
            "column a.y is only in the target",
        ] {
            assert!(e.contains(part), "{part} in {e}");
        }
    }
}
