//! Writing rows into the target: each value converted to its column's
//! type there, many rows per INSERT.

use super::catalog::Table;
use super::db::Db;
use super::error::{CopyError, Side};
use super::statements;
use super::value::Value;

/// Inserts `rows` (values in the order of `columns`) into `table`, as
/// the target describes it.
pub(super) fn insert(target: &mut dyn Db, table: &Table, columns: &[String], rows: Vec<Vec<Value>>) -> Result<(), CopyError> {
    let types = columns
        .iter()
        .map(|c| table.column(c).map(|c| c.ty).ok_or_else(|| CopyError::Schema(format!("column {}.{c} is only in the source", table.name))))
        .collect::<Result<Vec<_>, _>>()?;
    let per_insert = statements::rows_per_insert(target.dialect(), columns.len());
    let mut values = Vec::with_capacity(per_insert * columns.len());
    let mut pending = 0;
    let total = rows.len();
    for (n, row) in rows.into_iter().enumerate() {
        for ((value, ty), column) in row.into_iter().zip(&types).zip(columns) {
            let value = value.convert(*ty).map_err(|reason| CopyError::Value {
                side: Side::Source,
                table: table.name.clone(),
                column: column.clone(),
                reason: format!("{reason} in the target"),
            })?;
            values.push(value);
        }
        pending += 1;
        if pending == per_insert || n + 1 == total {
            let sql = statements::insert(target.dialect(), &table.name, columns, pending);
            let written = target
                .execute(&sql, &values)
                .map_err(|e| CopyError::Failed { side: Side::Target, reason: format!("writing {}: {e}", table.name) })?;
            if written != pending as u64 {
                return Err(CopyError::Failed { side: Side::Target, reason: format!("{} took {written} of {pending} rows", table.name) });
            }
            values.clear();
            pending = 0;
        }
    }
    Ok(())
}
