//! A PostgreSQL database as either side of a copy, over one blocking
//! client with the service's own TLS settings (`sslmode`, `sslrootcert`).

use std::collections::BTreeMap;
use std::error::Error;

use bytes::BytesMut;
use postgres::Client;
use postgres::types::{IsNull, ToSql, Type, to_sql_checked};

use super::catalog::{Catalog, Column, Index, Table, is_own, is_search_index};
use super::db::Db;
use super::statements::quote;
use super::value::{ColumnType, Value};
use crate::postgres::{connector, migrate};
use crate::sql::Dialect;

pub(super) struct PgDb {
    client: Client,
}

pub(super) fn connect(url: &str) -> Result<PgDb, String> {
    let client = connector(url).and_then(|c| c.blocking()).map_err(|e| e.to_string())?;
    Ok(PgDb { client })
}

fn text(e: postgres::Error) -> String {
    crate::postgres::describe(&e)
}

const TABLES: &str = "SELECT table_name::text FROM information_schema.tables
    WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' ORDER BY table_name";

const COLUMNS: &str = "SELECT table_name::text, column_name::text, data_type::text,
        is_identity::text = 'YES' OR COALESCE(column_default::text LIKE 'nextval(%', false),
        is_nullable::text = 'NO'
    FROM information_schema.columns WHERE table_schema = current_schema() ORDER BY table_name, ordinal_position";

/// Every index but the primary keys, with its definition.
const INDEXES: &str = "SELECT t.relname::text, i.indisunique, pg_get_indexdef(i.indexrelid)
    FROM pg_index i
    JOIN pg_class t ON t.oid = i.indrelid
    JOIN pg_namespace n ON n.oid = t.relnamespace
    WHERE n.nspname = current_schema() AND NOT i.indisprimary
    ORDER BY t.relname, i.indexrelid";

const KEYS: &str = "SELECT k.table_name::text, k.column_name::text
    FROM information_schema.table_constraints c
    JOIN information_schema.key_column_usage k
      ON k.constraint_schema = c.constraint_schema AND k.constraint_name = c.constraint_name AND k.table_name = c.table_name
    WHERE c.constraint_type = 'PRIMARY KEY' AND c.table_schema = current_schema()
    ORDER BY k.table_name, k.ordinal_position";

const PARENTS: &str = "SELECT child.relname::text, parent.relname::text
    FROM pg_constraint f
    JOIN pg_class child ON child.oid = f.conrelid
    JOIN pg_class parent ON parent.oid = f.confrelid
    JOIN pg_namespace n ON n.oid = child.relnamespace
    WHERE f.contype = 'f' AND n.nspname = current_schema()";

impl PgDb {
    fn pairs(&mut self, sql: &str) -> Result<Vec<(String, String)>, String> {
        Ok(self.client.query(sql, &[]).map_err(text)?.iter().map(|r| (r.get(0), r.get(1))).collect())
    }

    /// The name of the sequence behind a column, if there is one.
    fn sequence_of(&mut self, table: &Table) -> Result<Option<String>, String> {
        let Some(column) = &table.sequence else { return Ok(None) };
        let row = self.client.query_one("SELECT pg_get_serial_sequence($1, $2)", &[&quote(&table.name), column]).map_err(text)?;
        Ok(row.get(0))
    }
}

impl ToSql for Value {
    fn to_sql(&self, ty: &Type, out: &mut BytesMut) -> Result<IsNull, Box<dyn Error + Sync + Send>> {
        match self {
            Value::Null => Ok(IsNull::Yes),
            Value::Integer(n) if *ty == Type::INT4 => i32::try_from(*n)?.to_sql(ty, out),
            Value::Integer(n) => n.to_sql(ty, out),
            Value::Real(x) => x.to_sql(ty, out),
            Value::Text(s) => s.to_sql(ty, out),
            Value::Blob(b) => b.to_sql(ty, out),
            Value::Bool(b) => b.to_sql(ty, out),
        }
    }

    /// Each value checks its column's type as it is encoded.
    fn accepts(_: &Type) -> bool {
        true
    }

    to_sql_checked!();
}

fn read(row: &postgres::Row, i: usize) -> Result<Value, String> {
    let column = &row.columns()[i];
    let ty = column.type_();
    let get = |e: postgres::Error| format!("column {}: {}", column.name(), text(e));
    let value = if *ty == Type::INT8 {
        row.try_get::<_, Option<i64>>(i).map_err(get)?.map(Value::Integer)
    } else if *ty == Type::INT4 {
        row.try_get::<_, Option<i32>>(i).map_err(get)?.map(|n| Value::Integer(n.into()))
    } else if *ty == Type::FLOAT8 {
        row.try_get::<_, Option<f64>>(i).map_err(get)?.map(Value::Real)
    } else if *ty == Type::TEXT || *ty == Type::VARCHAR {
        row.try_get::<_, Option<String>>(i).map_err(get)?.map(Value::Text)
    } else if *ty == Type::BYTEA {
        row.try_get::<_, Option<Vec<u8>>>(i).map_err(get)?.map(Value::Blob)
    } else if *ty == Type::BOOL {
        row.try_get::<_, Option<bool>>(i).map_err(get)?.map(Value::Bool)
    } else {
        return Err(format!("column {} has the type {ty}, which the copy does not know", column.name()));
    };
    Ok(value.unwrap_or(Value::Null))
}

impl Db for PgDb {
    fn dialect(&self) -> Dialect {
        Dialect::Postgres
    }

    fn latest_version(&self) -> i64 {
        i64::from(migrate::latest())
    }

    fn version(&mut self) -> Result<Option<i64>, String> {
        let row = self.client.query_one("SELECT to_regclass('parley_migrations') IS NOT NULL", &[]).map_err(text)?;
        if !row.get::<_, bool>(0) {
            return Ok(None);
        }
        let row = self.client.query_one("SELECT MAX(version) FROM parley_migrations", &[]).map_err(text)?;
        Ok(row.get(0))
    }

    fn migrate(&mut self) -> Result<(), String> {
        migrate::apply(&mut self.client).map(|_| ()).map_err(|e| e.to_string())
    }

    fn table_names(&mut self) -> Result<Vec<String>, String> {
        let rows = self.client.query(TABLES, &[]).map_err(text)?;
        Ok(rows.iter().map(|r| r.get::<_, String>(0)).filter(|n| !is_own(n)).collect())
    }

    fn catalog(&mut self) -> Result<Catalog, String> {
        let mut catalog: Catalog = BTreeMap::new();
        for name in self.table_names()? {
            let table = Table { name: name.clone(), columns: Vec::new(), key: Vec::new(), parents: Default::default(), sequence: None };
            catalog.insert(name, table);
        }
        for row in self.client.query(COLUMNS, &[]).map_err(text)? {
            let (name, column, data_type, sequence, not_null): (String, String, String, bool, bool) =
                (row.get(0), row.get(1), row.get(2), row.get(3), row.get(4));
            let Some(table) = catalog.get_mut(&name) else { continue };
            let ty = ColumnType::from_postgres(&data_type)
                .ok_or_else(|| format!("column {name}.{column} has the type {data_type}, which the copy does not know"))?;
            if sequence {
                table.sequence = Some(column.clone());
            }
            table.columns.push(Column { name: column, ty, not_null });
        }
        for (name, column) in self.pairs(KEYS)? {
            if let Some(table) = catalog.get_mut(&name) {
                table.key.push(column);
            }
        }
        for (name, parent) in self.pairs(PARENTS)? {
            if let Some(table) = catalog.get_mut(&name) {
                table.parents.insert(parent);
            }
        }
        Ok(catalog)
    }

    fn indexes(&mut self) -> Result<Vec<Index>, String> {
        let mut all = Vec::new();
        for row in self.client.query(INDEXES, &[]).map_err(text)? {
            let (table, unique, definition): (String, bool, String) = (row.get(0), row.get(1), row.get(2));
            if is_own(&table) {
                continue;
            }
            let index = Index::from_definition(&table, unique, &definition).ok_or_else(|| format!("cannot read the index {definition}"))?;
            if !is_search_index(&index) {
                all.push(index);
            }
        }
        Ok(all)
    }

    fn begin_snapshot(&mut self) -> Result<(), String> {
        self.client.batch_execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY").map_err(text)
    }

    fn begin_write(&mut self) -> Result<(), String> {
        self.client.batch_execute("BEGIN").map_err(text)
    }

    fn commit(&mut self) -> Result<(), String> {
        self.client.batch_execute("COMMIT").map_err(text)
    }

    fn rollback(&mut self) -> Result<(), String> {
        self.client.batch_execute("ROLLBACK").map_err(text)
    }

    fn rows(&mut self, sql: &str, params: &[Value]) -> Result<Vec<Vec<Value>>, String> {
        let params: Vec<&(dyn ToSql + Sync)> = params.iter().map(|p| p as &(dyn ToSql + Sync)).collect();
        let rows = self.client.query(sql, &params).map_err(text)?;
        rows.iter().map(|row| (0..row.len()).map(|i| read(row, i)).collect()).collect()
    }

    fn execute(&mut self, sql: &str, params: &[Value]) -> Result<u64, String> {
        let params: Vec<&(dyn ToSql + Sync)> = params.iter().map(|p| p as &(dyn ToSql + Sync)).collect();
        self.client.execute(sql, &params).map_err(text)
    }

    fn sequence_position(&mut self, table: &Table) -> Result<Option<i64>, String> {
        let Some(sequence) = self.sequence_of(table)? else { return Ok(None) };
        // The name comes quoted where needed from pg_get_serial_sequence.
        let row = self.client.query_one(&format!("SELECT last_value, is_called FROM {sequence}"), &[]).map_err(text)?;
        Ok(row.get::<_, bool>(1).then(|| row.get(0)))
    }

    fn advance_sequence(&mut self, table: &Table, at_least: Option<i64>) -> Result<(), String> {
        let (Some(column), Some(sequence)) = (table.sequence.clone(), self.sequence_of(table)?) else { return Ok(()) };
        let largest: Option<i64> =
            self.client.query_one(&format!("SELECT MAX({}) FROM {}", quote(&column), quote(&table.name)), &[]).map_err(text)?.get(0);
        // A source that never handed a value out may say 0 (SQLite's
        // `sqlite_sequence` for a table whose rows all went), which no
        // sequence can hold.
        match largest.max(at_least).filter(|last| *last >= 1) {
            // The next value is the one after.
            Some(last) => self.client.execute("SELECT setval($1::text::regclass, $2, true)", &[&sequence, &last]),
            // Nothing handed out yet: the next value is the first.
            None => self.client.execute("SELECT setval($1::text::regclass, 1, false)", &[&sequence]),
        }
        .map(|_| ())
        .map_err(text)
    }
}
