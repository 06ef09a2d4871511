//! An SQLite file as either side of a copy.

use std::path::Path;

use rusqlite::Connection;
use rusqlite::types::{ToSqlOutput, ValueRef};

use super::catalog::{Catalog, Column, Index, Table, is_own};
use super::db::Db;
use super::statements::quote;
use super::value::{ColumnType, Value};
use crate::sql::Dialect;
use crate::sqlite::{connection, migrate};

pub(super) struct SqliteDb {
    conn: Connection,
}

/// Opened read-only: the source is never written, not even migrated.
pub(super) fn open_source(path: &Path) -> Result<SqliteDb, String> {
    Ok(SqliteDb { conn: connection::open_reader(path).map_err(|e| e.to_string())? })
}

/// Opened, or created, with the settings the service itself uses (WAL,
/// full sync, foreign keys checked, files readable by their owner only).
pub(super) fn open_target(path: &Path) -> Result<SqliteDb, String> {
    Ok(SqliteDb { conn: connection::open_writer(path).map_err(|e| e.to_string())? })
}

impl SqliteDb {
    fn table(&self, name: &str, sql: &str) -> Result<Table, String> {
        let mut columns = Vec::new();
        let mut key: Vec<(i64, String)> = Vec::new();
        let mut stmt = self.conn.prepare("SELECT name, type, pk, \"notnull\" FROM pragma_table_info(?1) ORDER BY cid").map_err(text)?;
        let mut rows = stmt.query([name]).map_err(text)?;
        while let Some(row) = rows.next().map_err(text)? {
            let (column, declared, pk, not_null): (String, String, i64, bool) =
                (row.get(0).map_err(text)?, row.get(1).map_err(text)?, row.get(2).map_err(text)?, row.get(3).map_err(text)?);
            let ty = ColumnType::from_sqlite(&declared)
                .ok_or_else(|| format!("column {name}.{column} has the type {declared:?}, which the copy does not know"))?;
            if pk > 0 {
                key.push((pk, column.clone()));
            }
            columns.push(Column { name: column, ty, not_null: not_null || pk > 0 });
        }
        key.sort();
        let key: Vec<String> = key.into_iter().map(|(_, c)| c).collect();
        let mut stmt = self.conn.prepare("SELECT DISTINCT \"table\" FROM pragma_foreign_key_list(?1)").map_err(text)?;
        let parents = stmt.query_map([name], |r| r.get::<_, String>(0)).map_err(text)?.collect::<Result<_, _>>().map_err(text)?;
        // AUTOINCREMENT is the only sequence SQLite keeps: other keys
        // continue from the largest row, which the copy brings along.
        let sequence = match key.as_slice() {
            [only] if sql.to_ascii_uppercase().contains("AUTOINCREMENT") => Some(only.clone()),
            _ => None,
        };
        Ok(Table { name: name.to_owned(), columns, key, parents, sequence })
    }

    fn tables_with_sql(&self) -> Result<Vec<(String, String)>, String> {
        let mut stmt = self
            .conn
            .prepare("SELECT name, sql FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name")
            .map_err(text)?;
        let all: Vec<(String, String)> =
            stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?))).map_err(text)?.collect::<Result<_, _>>().map_err(text)?;
        Ok(all.into_iter().filter(|(n, _)| !is_own(n)).collect())
    }

    fn sequence_value(&self, table: &str) -> Result<Option<i64>, String> {
        let mut stmt = self.conn.prepare("SELECT seq FROM sqlite_sequence WHERE name = ?1").map_err(text)?;
        let mut rows = stmt.query([table]).map_err(text)?;
        match rows.next().map_err(text)? {
            Some(row) => row.get(0).map_err(text),
            None => Ok(None),
        }
    }
}

fn text(e: rusqlite::Error) -> String {
    e.to_string()
}

impl rusqlite::ToSql for Value {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(match self {
            Value::Null => ToSqlOutput::Borrowed(ValueRef::Null),
            Value::Integer(n) => ToSqlOutput::Borrowed(ValueRef::Integer(*n)),
            Value::Real(x) => ToSqlOutput::Borrowed(ValueRef::Real(*x)),
            Value::Text(s) => ToSqlOutput::Borrowed(ValueRef::Text(s.as_bytes())),
            Value::Blob(b) => ToSqlOutput::Borrowed(ValueRef::Blob(b)),
            Value::Bool(b) => ToSqlOutput::Borrowed(ValueRef::Integer(i64::from(*b))),
        })
    }
}

fn read(value: ValueRef<'_>) -> Result<Value, String> {
    Ok(match value {
        ValueRef::Null => Value::Null,
        ValueRef::Integer(n) => Value::Integer(n),
        ValueRef::Real(x) => Value::Real(x),
        ValueRef::Text(t) => Value::Text(String::from_utf8(t.to_vec()).map_err(|_| "a text that is not UTF-8".to_owned())?),
        ValueRef::Blob(b) => Value::Blob(b.to_vec()),
    })
}

impl Db for SqliteDb {
    fn dialect(&self) -> Dialect {
        Dialect::Sqlite
    }

    fn latest_version(&self) -> i64 {
        i64::from(migrate::latest())
    }

    fn version(&mut self) -> Result<Option<i64>, String> {
        let v: i64 = self.conn.query_row("PRAGMA user_version", [], |r| r.get(0)).map_err(text)?;
        Ok((v > 0).then_some(v))
    }

    fn migrate(&mut self) -> Result<(), String> {
        migrate::apply(&mut self.conn).map(|_| ()).map_err(|e| e.to_string())
    }

    fn table_names(&mut self) -> Result<Vec<String>, String> {
        Ok(self.tables_with_sql()?.into_iter().map(|(n, _)| n).collect())
    }

    fn catalog(&mut self) -> Result<Catalog, String> {
        self.tables_with_sql()?.iter().map(|(name, sql)| Ok((name.clone(), self.table(name, sql)?))).collect()
    }

    fn indexes(&mut self) -> Result<Vec<Index>, String> {
        let mut all = Vec::new();
        for table in self.table_names()? {
            let mut stmt = self.conn.prepare("SELECT name, \"unique\", origin FROM pragma_index_list(?1)").map_err(text)?;
            let listed: Vec<(String, bool, String)> = stmt
                .query_map([&table], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
                .map_err(text)?
                .collect::<Result<_, _>>()
                .map_err(text)?;
            for (name, unique, origin) in listed {
                match origin.as_str() {
                    "pk" => continue,
                    // A UNIQUE of the table's definition: its columns.
                    "u" => {
                        let mut stmt = self.conn.prepare("SELECT name FROM pragma_index_info(?1) ORDER BY seqno").map_err(text)?;
                        let columns: Vec<String> =
                            stmt.query_map([&name], |r| r.get(0)).map_err(text)?.collect::<Result<_, _>>().map_err(text)?;
                        all.push(Index { table: table.clone(), columns, unique, predicate: None });
                    }
                    _ => {
                        let sql: String = self
                            .conn
                            .query_row("SELECT sql FROM sqlite_master WHERE type = 'index' AND name = ?1", [&name], |r| r.get(0))
                            .map_err(text)?;
                        all.push(Index::from_definition(&table, unique, &sql).ok_or_else(|| format!("cannot read the index {sql}"))?);
                    }
                }
            }
        }
        Ok(all)
    }

    fn begin_snapshot(&mut self) -> Result<(), String> {
        // A deferred transaction takes its snapshot at its first read and
        // keeps it to the end; the checks that follow read at once.
        self.conn.execute_batch("BEGIN").map_err(text)
    }

    fn begin_write(&mut self) -> Result<(), String> {
        self.conn.execute_batch("BEGIN IMMEDIATE").map_err(text)
    }

    fn commit(&mut self) -> Result<(), String> {
        self.conn.execute_batch("COMMIT").map_err(text)
    }

    fn rollback(&mut self) -> Result<(), String> {
        if self.conn.is_autocommit() { Ok(()) } else { self.conn.execute_batch("ROLLBACK").map_err(text) }
    }

    fn rows(&mut self, sql: &str, params: &[Value]) -> Result<Vec<Vec<Value>>, String> {
        let mut stmt = self.conn.prepare_cached(sql).map_err(text)?;
        let width = stmt.column_count();
        let mut rows = stmt.query(rusqlite::params_from_iter(params)).map_err(text)?;
        let mut all = Vec::new();
        while let Some(row) = rows.next().map_err(text)? {
            all.push((0..width).map(|i| row.get_ref(i).map_err(text).and_then(read)).collect::<Result<Vec<_>, _>>()?);
        }
        Ok(all)
    }

    fn execute(&mut self, sql: &str, params: &[Value]) -> Result<u64, String> {
        let mut stmt = self.conn.prepare_cached(sql).map_err(text)?;
        stmt.execute(rusqlite::params_from_iter(params)).map(|n| n as u64).map_err(text)
    }

    fn sequence_position(&mut self, table: &Table) -> Result<Option<i64>, String> {
        if table.sequence.is_none() {
            return Ok(None);
        }
        self.sequence_value(&table.name)
    }

    fn advance_sequence(&mut self, table: &Table, at_least: Option<i64>) -> Result<(), String> {
        let Some(column) = &table.sequence else { return Ok(()) };
        let largest: Option<i64> =
            self.conn.query_row(&format!("SELECT MAX({}) FROM {}", quote(column), quote(&table.name)), [], |r| r.get(0)).map_err(text)?;
        let Some(wanted) = largest.max(at_least) else { return Ok(()) };
        // Inserts with explicit keys already moved it past every row;
        // this carries over values handed out to rows since deleted.
        match self.sequence_value(&table.name)? {
            Some(current) if current >= wanted => Ok(()),
            Some(_) => {
                self.conn.execute("UPDATE sqlite_sequence SET seq = ?2 WHERE name = ?1", (&table.name, wanted)).map(|_| ()).map_err(text)
            }
            None => self
                .conn
                .execute("INSERT INTO sqlite_sequence (name, seq) VALUES (?1, ?2)", (&table.name, wanted))
                .map(|_| ())
                .map_err(text),
        }
    }
}
