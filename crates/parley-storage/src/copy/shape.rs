//! The two databases' schemas, compared: what the migrations of SQLite and
//! of PostgreSQL make must be the same tables, columns (of the same kind,
//! null or not), keys, indexes and unique rules, so that a query written
//! once behaves the same on both and a copy loses nothing. A test holds
//! the two migration folders together with it; new migrations go in pairs.

use std::collections::BTreeSet;

use super::catalog::{Catalog, Index};
use super::value::ColumnType;
use super::{Side, open_source, parse};

/// Every difference between the schemas of the databases at `a` and `b`
/// (each migrated to this build's latest), one sentence each.
pub fn schema_differences(a: &str, b: &str) -> Result<Vec<String>, String> {
    let (first, second) = (read(a)?, read(b)?);
    Ok(differences(&first, &second))
}

struct Schema {
    tables: Catalog,
    indexes: BTreeSet<Index>,
}

fn read(url: &str) -> Result<Schema, String> {
    let at = parse(Side::Source, url).map_err(|e| e.to_string())?;
    let mut db = open_source(&at).map_err(|e| e.to_string())?;
    let tables = db.catalog()?;
    let indexes = db.indexes()?.into_iter().collect();
    let _ = db.rollback();
    Ok(Schema { tables, indexes })
}

/// Booleans are `BOOLEAN` on PostgreSQL and 0/1 integers on SQLite: the
/// one difference of kind the storage layer expects.
fn same_kind(a: ColumnType, b: ColumnType) -> bool {
    a == b || matches!((a, b), (ColumnType::Bool, ColumnType::Integer) | (ColumnType::Integer, ColumnType::Bool))
}

fn differences(a: &Schema, b: &Schema) -> Vec<String> {
    let mut found = Vec::new();
    if let Err(e) = super::catalog::compare(&a.tables, &b.tables) {
        found.extend(e.split("; ").map(str::to_owned));
    }
    for (name, ta) in &a.tables {
        let Some(tb) = b.tables.get(name) else { continue };
        for ca in &ta.columns {
            let Some(cb) = tb.column(&ca.name) else { continue };
            if !same_kind(ca.ty, cb.ty) {
                found.push(format!("column {name}.{} is {:?} in one and {:?} in the other", ca.name, ca.ty, cb.ty));
            }
            if ca.not_null != cb.not_null {
                found.push(format!("column {name}.{} is NOT NULL in one only", ca.name));
            }
        }
        if ta.key != tb.key {
            found.push(format!("table {name} has the key {:?} in one and {:?} in the other", ta.key, tb.key));
        }
    }
    for index in a.indexes.difference(&b.indexes) {
        found.push(format!("index {index:?} is only in the first"));
    }
    for index in b.indexes.difference(&a.indexes) {
        found.push(format!("index {index:?} is only in the second"));
    }
    found
}
