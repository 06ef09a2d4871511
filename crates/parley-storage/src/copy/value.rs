//! Values in transit, and the column types they are written into.
//!
//! The two schemas store the same values under different types: SQLite
//! keeps booleans as 0/1 INTEGER where PostgreSQL has BOOLEAN, BLOB where
//! PostgreSQL has BYTEA. A value is read as what the source holds and
//! converted to what the target column declares, so a value that would
//! change meaning on the way (a 2 in a boolean, text in a number) stops
//! the copy instead of being written.

/// One value as read from either database.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Null,
    Integer(i64),
    Real(f64),
    Text(String),
    Blob(Vec<u8>),
    Bool(bool),
}

/// A column's type, as far as the copy needs to know it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ColumnType {
    Integer,
    Real,
    Text,
    Blob,
    Bool,
}

impl ColumnType {
    /// The declared types of the SQLite migrations, and REAL.
    pub fn from_sqlite(declared: &str) -> Option<Self> {
        match declared.trim().to_ascii_uppercase().as_str() {
            "INTEGER" => Some(Self::Integer),
            "REAL" => Some(Self::Real),
            "TEXT" => Some(Self::Text),
            "BLOB" => Some(Self::Blob),
            _ => None,
        }
    }

    /// `information_schema.columns.data_type` for the types of the
    /// PostgreSQL migrations, and double precision.
    pub fn from_postgres(data_type: &str) -> Option<Self> {
        match data_type {
            "bigint" | "integer" => Some(Self::Integer),
            "double precision" => Some(Self::Real),
            "text" => Some(Self::Text),
            "bytea" => Some(Self::Blob),
            "boolean" => Some(Self::Bool),
            _ => None,
        }
    }
}

impl Value {
    /// The value as a column of type `ty` stores it.
    pub fn convert(self, ty: ColumnType) -> Result<Value, String> {
        use ColumnType as T;
        match (self, ty) {
            (Value::Null, _) => Ok(Value::Null),
            (v @ Value::Integer(_), T::Integer) => Ok(v),
            (Value::Integer(0), T::Bool) => Ok(Value::Bool(false)),
            (Value::Integer(1), T::Bool) => Ok(Value::Bool(true)),
            (Value::Integer(n), T::Bool) => Err(format!("{n} is not a boolean (0 or 1)")),
            // Only integers a double holds exactly.
            (Value::Integer(n), T::Real) if n.unsigned_abs() <= 1 << 53 => Ok(Value::Real(n as f64)),
            (Value::Bool(b), T::Bool) => Ok(Value::Bool(b)),
            (Value::Bool(b), T::Integer) => Ok(Value::Integer(i64::from(b))),
            (v @ Value::Real(_), T::Real) => Ok(v),
            (v @ Value::Text(_), T::Text) => Ok(v),
            (v @ Value::Blob(_), T::Blob) => Ok(v),
            (v, ty) => Err(format!("{} cannot be stored as {ty:?}", v.describe())),
        }
    }

    /// The value's kind for an error message; never the value itself,
    /// which may be a secret or a visitor's details.
    fn describe(&self) -> &'static str {
        match self {
            Value::Null => "a null",
            Value::Integer(_) => "an integer",
            Value::Real(_) => "a real number",
            Value::Text(_) => "a text",
            Value::Blob(_) => "a blob",
            Value::Bool(_) => "a boolean",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::ColumnType as T;
    use super::*;

    #[test]
    fn sqlite_booleans_become_postgres_booleans_and_back() {
        assert_eq!(Value::Integer(1).convert(T::Bool), Ok(Value::Bool(true)));
        assert_eq!(Value::Integer(0).convert(T::Bool), Ok(Value::Bool(false)));
        assert_eq!(Value::Bool(true).convert(T::Integer), Ok(Value::Integer(1)));
        assert_eq!(Value::Bool(false).convert(T::Integer), Ok(Value::Integer(0)));
        assert!(Value::Integer(2).convert(T::Bool).is_err(), "only 0 and 1 are booleans");
    }

    #[test]
    fn values_keep_their_type_and_nulls_fit_anywhere() {
        for (v, ty) in [
            (Value::Integer(i64::MAX), T::Integer),
            (Value::Text("héllo".into()), T::Text),
            (Value::Blob(vec![0, 255]), T::Blob),
            (Value::Real(1.5), T::Real),
        ] {
            assert_eq!(v.clone().convert(ty), Ok(v));
        }
        for ty in [T::Integer, T::Real, T::Text, T::Blob, T::Bool] {
            assert_eq!(Value::Null.convert(ty), Ok(Value::Null));
        }
        assert_eq!(Value::Integer(3).convert(T::Real), Ok(Value::Real(3.0)));
    }

    #[test]
    fn values_that_would_change_meaning_are_refused() {
        let refused = [
            (Value::Text("12".into()), T::Integer),
            (Value::Integer(12), T::Text),
            (Value::Text("abc".into()), T::Blob),
            (Value::Blob(b"abc".to_vec()), T::Text),
            (Value::Real(1.5), T::Integer),
            (Value::Integer(i64::MAX), T::Real),
            (Value::Bool(true), T::Text),
        ];
        for (v, ty) in refused {
            let e = v.clone().convert(ty).expect_err("refused");
            assert!(!e.contains("abc") && !e.contains("12"), "the value itself is not shown: {e}");
        }
    }

    #[test]
    fn the_migrations_column_types_are_known() {
        for t in ["INTEGER", "TEXT", "BLOB", "integer"] {
            assert!(ColumnType::from_sqlite(t).is_some(), "{t}");
        }
        for t in ["bigint", "text", "boolean", "bytea"] {
            assert!(ColumnType::from_postgres(t).is_some(), "{t}");
        }
        assert_eq!(ColumnType::from_sqlite("DATETIME"), None);
        assert_eq!(ColumnType::from_postgres("timestamp with time zone"), None);
        assert_eq!(ColumnType::from_postgres("jsonb"), None);
    }
}
