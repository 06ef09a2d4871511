//! Reading one table of the source, a batch at a time, in primary-key
//! order, inside the snapshot the whole copy reads from.

use super::catalog::Table;
use super::db::Db;
use super::statements::{self, BATCH, Cursor};
use super::value::Value;

pub(super) struct Batches<'a> {
    table: &'a Table,
    columns: &'a [String],
    /// Where each key column is among `columns`.
    key_at: Vec<usize>,
    /// The key of the last row read.
    last_key: Vec<Value>,
    read: u64,
    done: bool,
}

impl<'a> Batches<'a> {
    /// `table` as the source describes it, and the columns to read.
    pub(super) fn new(table: &'a Table, columns: &'a [String]) -> Result<Self, String> {
        let key_at = table
            .key
            .iter()
            .map(|k| columns.iter().position(|c| c == k).ok_or_else(|| format!("the key column {}.{k} is not copied", table.name)))
            .collect::<Result<_, _>>()?;
        Ok(Self { table, columns, key_at, last_key: Vec::new(), read: 0, done: false })
    }

    /// The next rows, values in the order of `columns`; None at the end.
    pub(super) fn next(&mut self, source: &mut dyn Db) -> Result<Option<Vec<Vec<Value>>>, String> {
        if self.done {
            return Ok(None);
        }
        let cursor = match (self.read, self.table.key.is_empty()) {
            (0, _) => Cursor::First,
            (_, false) => Cursor::After(self.key_at.len()),
            (n, true) => Cursor::Skip(n),
        };
        let sql = statements::select(source.dialect(), self.table, self.columns, cursor);
        let rows = source.rows(&sql, &self.last_key)?;
        self.done = rows.len() < BATCH;
        if let Some(last) = rows.last() {
            self.last_key = self.key_at.iter().map(|&i| last[i].clone()).collect();
        }
        self.read += rows.len() as u64;
        Ok(if rows.is_empty() { None } else { Some(rows) })
    }
}
