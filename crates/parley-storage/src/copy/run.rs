//! The copy proper, once both databases are open: every table in one
//! target transaction, so that any failure, on either side, leaves the
//! target as it was.

use super::catalog::{self, Catalog, Table};
use super::db::Db;
use super::error::{CopyError, Side};
use super::read::Batches;
use super::{CopyReport, Progress, TableReport, order, verify, write};

/// `source_tables`: the source's catalog, as read when it was opened.
pub(super) fn run(
    source: &mut dyn Db,
    source_tables: &Catalog,
    target: &mut dyn Db,
    progress: &dyn Progress,
) -> Result<CopyReport, CopyError> {
    target.begin_write().map_err(CopyError::failed(Side::Target))?;
    let written = write_all(source, source_tables, target, progress).and_then(|report| {
        target.commit().map_err(CopyError::failed(Side::Target))?;
        Ok(report)
    });
    if written.is_err() {
        // Also after a failed COMMIT, which may leave the transaction open.
        let _ = target.rollback();
    }
    written
}

fn write_all(source: &mut dyn Db, source_tables: &Catalog, target: &mut dyn Db, progress: &dyn Progress) -> Result<CopyReport, CopyError> {
    let target_tables = target.catalog().map_err(CopyError::failed(Side::Target))?;
    catalog::compare(source_tables, &target_tables).map_err(CopyError::Schema)?;
    // Again, inside the transaction: nothing wrote to it since the check
    // made before its migrations.
    verify::empty(target)?;
    let order = order::by_dependencies(&target_tables).map_err(CopyError::Schema)?;
    let names: Vec<String> = order.iter().map(|t| t.name.clone()).collect();
    let expected = verify::counts(source, Side::Source, &names)?;
    progress.start(expected.iter().map(|(_, rows)| rows).sum());
    for (table, (_, rows)) in order.iter().zip(&expected) {
        progress.table(&table.name, *rows);
        copy_table(source, target, in_source(source_tables, table)?, table, progress)?;
    }
    for table in &order {
        let at_least = source.sequence_position(in_source(source_tables, table)?).map_err(CopyError::failed(Side::Source))?;
        target.advance_sequence(table, at_least).map_err(CopyError::failed(Side::Target))?;
    }
    restart_feed_positions(target)?;
    verify::same_counts(&expected, target)?;
    Ok(CopyReport { tables: expected.into_iter().map(|(name, rows)| TableReport { name, rows }).collect() })
}

/// Feed positions lead with the writing transaction's id on PostgreSQL
/// and 0 on SQLite (see `Dialect::writing_tx`): the source's would sort
/// the target's next entries behind the copied ones. The copied entries
/// all start again at 0, in id order; the cursors clients hold no longer
/// match an entry, so each reloads once and follows from a new one.
fn restart_feed_positions(target: &mut dyn Db) -> Result<(), CopyError> {
    target.execute("UPDATE events SET tx = 0 WHERE tx <> 0", &[]).map_err(CopyError::failed(Side::Target))?;
    Ok(())
}

fn in_source<'a>(source: &'a Catalog, table: &Table) -> Result<&'a Table, CopyError> {
    source.get(&table.name).ok_or_else(|| CopyError::Schema(format!("table {} is only in the target", table.name)))
}

/// One table, `from` as the source describes it and `to` as the target
/// does; columns are matched by name.
fn copy_table(source: &mut dyn Db, target: &mut dyn Db, from: &Table, to: &Table, progress: &dyn Progress) -> Result<(), CopyError> {
    let columns: Vec<String> = to.columns.iter().map(|c| c.name.clone()).collect();
    let mut batches = Batches::new(from, &columns).map_err(CopyError::Schema)?;
    let reading = |e: String| CopyError::Failed { side: Side::Source, reason: format!("reading {}: {e}", from.name) };
    while let Some(rows) = batches.next(source).map_err(reading)? {
        let n = rows.len() as u64;
        write::insert(target, to, &columns, rows)?;
        progress.copied(n);
    }
    Ok(())
}
