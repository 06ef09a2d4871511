//! The SQL the copy sends, written for either database. Table and column
//! names come from the catalog, so they are quoted, never trusted.

use super::catalog::Table;
use crate::sql::Dialect;

/// Rows read, and written, per statement: big enough that round trips do
/// not dominate, small enough to keep memory flat on any table.
pub const BATCH: usize = 1000;

/// Rows per INSERT for a table of `columns` columns.
pub fn rows_per_insert(dialect: Dialect, columns: usize) -> usize {
    (dialect.max_parameters() / columns.max(1)).clamp(1, BATCH)
}

pub fn quote(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

fn list(names: &[String]) -> String {
    names.iter().map(|n| quote(n)).collect::<Vec<_>>().join(", ")
}

/// Where the next batch of a table starts.
pub enum Cursor {
    First,
    /// After the row with this primary key.
    After(usize),
    /// Past this many rows, for a table without a primary key.
    Skip(u64),
}

/// The next `BATCH` rows of `table`, `columns` in that order. Tables with
/// a primary key are read by key ranges (each batch costs the same
/// however far into the table it is); the `After` parameters are the last
/// key read, in key order.
pub fn select(dialect: Dialect, table: &Table, columns: &[String], from: Cursor) -> String {
    let order = if table.key.is_empty() { list(columns) } else { list(&table.key) };
    let mut sql = format!("SELECT {} FROM {}", list(columns), quote(&table.name));
    match from {
        Cursor::First | Cursor::Skip(_) => {}
        Cursor::After(n) => {
            let params: Vec<String> = (1..=n).map(|i| dialect.placeholder(i)).collect();
            sql.push_str(&format!(" WHERE ({}) > ({})", list(&table.key), params.join(", ")));
        }
    }
    sql.push_str(&format!(" ORDER BY {order} LIMIT {BATCH}"));
    if let Cursor::Skip(n) = from {
        sql.push_str(&format!(" OFFSET {n}"));
    }
    sql
}

/// One INSERT of `rows` rows.
pub fn insert(dialect: Dialect, table: &str, columns: &[String], rows: usize) -> String {
    let mut n = 0;
    let values: Vec<String> = (0..rows)
        .map(|_| {
            let row: Vec<String> = columns
                .iter()
                .map(|_| {
                    n += 1;
                    dialect.placeholder(n)
                })
                .collect();
            format!("({})", row.join(", "))
        })
        .collect();
    format!("INSERT INTO {} ({}) VALUES {}", quote(table), list(columns), values.join(", "))
}

pub fn count(table: &str) -> String {
    format!("SELECT COUNT(*) FROM {}", quote(table))
}

#[cfg(test)]
mod tests {
    use super::super::catalog::table;
    use super::super::value::ColumnType::*;
    use super::*;

    fn names(n: &[&str]) -> Vec<String> {
        n.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn batches_follow_the_primary_key() {
        let mut t = table("operator_sites", &[("operator_id", Integer), ("site_id", Integer)], &[]);
        t.key = names(&["operator_id", "site_id"]);
        let cols = names(&["site_id", "operator_id"]);
        assert_eq!(
            select(Dialect::Postgres, &t, &cols, Cursor::After(2)),
            r#"SELECT "site_id", "operator_id" FROM "operator_sites" WHERE ("operator_id", "site_id") > ($1, $2) ORDER BY "operator_id", "site_id" LIMIT 1000"#
        );
        assert_eq!(
            select(Dialect::Sqlite, &t, &cols, Cursor::First),
            r#"SELECT "site_id", "operator_id" FROM "operator_sites" ORDER BY "operator_id", "site_id" LIMIT 1000"#
        );
        t.key.clear();
        assert!(
            select(Dialect::Sqlite, &t, &cols, Cursor::Skip(2000)).ends_with(r#"ORDER BY "site_id", "operator_id" LIMIT 1000 OFFSET 2000"#)
        );
    }

    #[test]
    fn inserts_number_every_value_and_names_are_quoted() {
        assert_eq!(insert(Dialect::Sqlite, "a\"b", &names(&["x", "y"]), 2), r#"INSERT INTO "a""b" ("x", "y") VALUES (?1, ?2), (?3, ?4)"#);
        assert_eq!(insert(Dialect::Postgres, "t", &names(&["x"]), 3), r#"INSERT INTO "t" ("x") VALUES ($1), ($2), ($3)"#);
    }

    #[test]
    fn inserts_stay_under_the_parameter_limit() {
        assert_eq!(rows_per_insert(Dialect::Sqlite, 15), BATCH);
        assert_eq!(rows_per_insert(Dialect::Sqlite, 100), 327);
        assert_eq!(rows_per_insert(Dialect::Postgres, 100_000), 1);
    }
}
