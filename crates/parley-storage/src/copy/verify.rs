//! The checks around the writing: an empty target before, the same row
//! counts on both sides after.

use super::db::Db;
use super::error::{CopyError, Side};

/// Refuses a target that holds any row, in any table.
pub(super) fn empty(target: &mut dyn Db) -> Result<(), CopyError> {
    for table in target.table_names().map_err(CopyError::failed(Side::Target))? {
        let rows = target.count(&table).map_err(CopyError::failed(Side::Target))?;
        if rows > 0 {
            return Err(CopyError::NotEmpty { table, rows });
        }
    }
    Ok(())
}

/// Row counts of `tables` on one side.
pub(super) fn counts(db: &mut dyn Db, side: Side, tables: &[String]) -> Result<Vec<(String, u64)>, CopyError> {
    tables.iter().map(|t| Ok((t.clone(), db.count(t).map_err(CopyError::failed(side))?))).collect()
}

/// Compares the target's counts, inside its transaction, with the
/// source's from its snapshot.
pub(super) fn same_counts(source: &[(String, u64)], target: &mut dyn Db) -> Result<(), CopyError> {
    for (table, source_rows) in source {
        let target_rows = target.count(table).map_err(CopyError::failed(Side::Target))?;
        if target_rows != *source_rows {
            return Err(CopyError::Count { table: table.clone(), source_rows: *source_rows, target_rows });
        }
    }
    Ok(())
}
