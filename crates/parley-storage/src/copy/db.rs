//! One database as the copy sees it, whichever backend it is. Errors are
//! the database's own words; the caller knows which side it asked and
//! says so.

use super::catalog::{Catalog, Index, Table};
use super::value::Value;
use crate::sql::Dialect;

pub(super) trait Db {
    fn dialect(&self) -> Dialect;

    /// The latest migration this build has for this backend.
    fn latest_version(&self) -> i64;

    /// The latest migration applied, or None if the database holds no
    /// Parley schema at all.
    fn version(&mut self) -> Result<Option<i64>, String>;

    /// Applies this build's migrations (targets only: a source is never
    /// written).
    fn migrate(&mut self) -> Result<(), String>;

    /// Every table's name, bookkeeping excluded, whatever its columns.
    fn table_names(&mut self) -> Result<Vec<String>, String>;

    /// Every table, bookkeeping excluded.
    fn catalog(&mut self) -> Result<Catalog, String>;

    /// Every index but the primary keys, bookkeeping excluded.
    fn indexes(&mut self) -> Result<Vec<Index>, String>;

    /// One read-only view of the whole database, for the source.
    fn begin_snapshot(&mut self) -> Result<(), String>;

    /// The transaction the whole copy is written in, for the target.
    fn begin_write(&mut self) -> Result<(), String>;

    fn commit(&mut self) -> Result<(), String>;

    fn rollback(&mut self) -> Result<(), String>;

    /// The rows `sql` returns, each value as the database holds it.
    fn rows(&mut self, sql: &str, params: &[Value]) -> Result<Vec<Vec<Value>>, String>;

    fn execute(&mut self, sql: &str, params: &[Value]) -> Result<u64, String>;

    /// The last value the table's sequence handed out, if it has one and
    /// it was used: it may be past every row, when the newest were deleted.
    fn sequence_position(&mut self, table: &Table) -> Result<Option<i64>, String>;

    /// Sets the table's sequence so that new rows get values past
    /// `at_least` and past every row copied; tables without one are left.
    fn advance_sequence(&mut self, table: &Table, at_least: Option<i64>) -> Result<(), String>;

    fn count(&mut self, table: &str) -> Result<u64, String> {
        let rows = self.rows(&super::statements::count(table), &[])?;
        match rows.first().and_then(|r| r.first()) {
            Some(Value::Integer(n)) => u64::try_from(*n).map_err(|e| e.to_string()),
            _ => Err(format!("counting the rows of {table} gave no number")),
        }
    }
}
