//! The statement seam over a rusqlite connection.

use std::cell::Cell;

use parley_domain::store::{StoreError, StoreResult};
use rusqlite::types::{FromSql, ToSqlOutput};
use rusqlite::{Connection, ToSql};

use super::error::map;
use crate::sql::{Arg, Conn, Dialect, Row, Stmt, find_column};

pub(super) struct SqliteConn<'c> {
    conn: &'c Connection,
}

impl<'c> SqliteConn<'c> {
    pub(super) fn new(conn: &'c Connection) -> Self {
        Self { conn }
    }
}

impl ToSql for Arg<'_> {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        match self {
            Arg::Int(v) => v.to_sql(),
            Arg::Text(v) => v.to_sql(),
            Arg::Bool(v) => v.to_sql(),
            Arg::Bytes(v) => v.to_sql(),
        }
    }
}

impl Conn for SqliteConn<'_> {
    fn dialect(&self) -> Dialect {
        Dialect::Sqlite
    }

    fn query(&mut self, stmt: &'static Stmt, args: &[Arg<'_>], each: &mut dyn FnMut(&dyn Row) -> StoreResult<bool>) -> StoreResult<()> {
        let mut prepared = self.conn.prepare_cached(stmt.text(Dialect::Sqlite)?).map_err(map)?;
        let mut rows = prepared.query(rusqlite::params_from_iter(args.iter())).map_err(map)?;
        while let Some(row) = rows.next().map_err(map)? {
            if !each(&SqliteRow { row, hint: Cell::new(0) })? {
                break;
            }
        }
        Ok(())
    }

    fn execute(&mut self, stmt: &'static Stmt, args: &[Arg<'_>]) -> StoreResult<u64> {
        let mut prepared = self.conn.prepare_cached(stmt.text(Dialect::Sqlite)?).map_err(map)?;
        let n = prepared.execute(rusqlite::params_from_iter(args.iter())).map_err(map)?;
        Ok(n as u64)
    }

    fn prepare(&mut self, stmt: &'static Stmt) -> StoreResult<()> {
        self.conn.prepare(stmt.text(Dialect::Sqlite)?).map(|_| ()).map_err(map)
    }
}

struct SqliteRow<'a, 'stmt> {
    row: &'a rusqlite::Row<'stmt>,
    /// Where the next lookup starts: decoders read columns in the order
    /// the `SELECT` lists them, so each lookup is usually one comparison.
    hint: Cell<usize>,
}

impl SqliteRow<'_, '_> {
    fn get<T: FromSql>(&self, col: &str) -> StoreResult<Option<T>> {
        let stmt = self.row.as_ref();
        let i = find_column(stmt.column_count(), |i| stmt.column_name(i).ok(), col, &self.hint)?;
        self.row.get::<_, Option<T>>(i).map_err(|e| StoreError::Internal(format!("column {col}: {e}")))
    }
}

impl Row for SqliteRow<'_, '_> {
    fn int(&self, col: &str) -> StoreResult<Option<i64>> {
        self.get(col)
    }

    fn text(&self, col: &str) -> StoreResult<Option<String>> {
        self.get(col)
    }

    fn boolean(&self, col: &str) -> StoreResult<Option<bool>> {
        self.get(col)
    }

    fn bytes(&self, col: &str) -> StoreResult<Option<Vec<u8>>> {
        self.get(col)
    }
}
