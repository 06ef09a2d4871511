//! Reading a result row by column name.
//!
//! Every column a query reads is named in its `SELECT` list (joined
//! columns carry their table's alias: `c_id`, `m_id`), so adding a column
//! never shifts another, and a decoder works for every query that selects
//! its columns.

use std::cell::Cell;

use parley_domain::Timestamp;
use parley_domain::store::{StoreError, StoreResult};

/// One result row, whichever database produced it.
pub trait Row {
    fn int(&self, col: &str) -> StoreResult<Option<i64>>;
    fn text(&self, col: &str) -> StoreResult<Option<String>>;
    fn boolean(&self, col: &str) -> StoreResult<Option<bool>>;
    fn bytes(&self, col: &str) -> StoreResult<Option<Vec<u8>>>;
}

/// The position of column `col` among `count` columns named by `name_at`,
/// searched from `hint` on, which then moves past it: decoders read
/// columns in the order the `SELECT` lists them, so each lookup is
/// usually one comparison instead of a scan of the whole row.
pub(crate) fn find_column<'n>(
    count: usize,
    name_at: impl Fn(usize) -> Option<&'n str>,
    col: &str,
    hint: &Cell<usize>,
) -> StoreResult<usize> {
    let start = hint.get();
    for k in 0..count {
        let i = (start + k) % count;
        if name_at(i) == Some(col) {
            hint.set(i + 1);
            return Ok(i);
        }
    }
    Err(StoreError::Internal(format!("no column {col} in the result")))
}

fn missing(col: &str) -> StoreError {
    StoreError::Internal(format!("column {col} is null"))
}

/// Typed reads on top of [`Row`], for decoders.
impl dyn Row + '_ {
    pub fn i64(&self, col: &str) -> StoreResult<i64> {
        self.int(col)?.ok_or_else(|| missing(col))
    }

    pub fn u32(&self, col: &str) -> StoreResult<u32> {
        let v = self.i64(col)?;
        u32::try_from(v).map_err(|_| StoreError::Internal(format!("column {col}: {v} is out of range")))
    }

    pub fn u64(&self, col: &str) -> StoreResult<u64> {
        Ok(self.i64(col)?.max(0) as u64)
    }

    pub fn string(&self, col: &str) -> StoreResult<String> {
        self.text(col)?.ok_or_else(|| missing(col))
    }

    pub fn flag(&self, col: &str) -> StoreResult<bool> {
        self.boolean(col)?.ok_or_else(|| missing(col))
    }

    pub fn blob(&self, col: &str) -> StoreResult<Vec<u8>> {
        self.bytes(col)?.ok_or_else(|| missing(col))
    }

    pub fn ts(&self, col: &str) -> StoreResult<Timestamp> {
        Ok(Timestamp::from_millis(self.i64(col)?))
    }

    pub fn opt_ts(&self, col: &str) -> StoreResult<Option<Timestamp>> {
        Ok(self.int(col)?.map(Timestamp::from_millis))
    }

    /// A text column holding one of the domain's enums.
    pub fn parsed<T>(&self, col: &str, parse: fn(&str) -> Option<T>) -> StoreResult<T> {
        let s = self.string(col)?;
        parse(&s).ok_or_else(|| StoreError::Internal(format!("column {col}: unexpected value {s:?}")))
    }

    pub fn opt_parsed<T>(&self, col: &str, parse: fn(&str) -> Option<T>) -> StoreResult<Option<T>> {
        match self.text(col)? {
            Some(s) => parse(&s).map(Some).ok_or_else(|| StoreError::Internal(format!("column {col}: unexpected value {s:?}"))),
            None => Ok(None),
        }
    }

    /// A text column holding JSON.
    pub fn json<T: serde::de::DeserializeOwned>(&self, col: &str) -> StoreResult<T> {
        serde_json::from_str(&self.string(col)?).map_err(|e| StoreError::Internal(format!("column {col}: {e}")))
    }

    /// A nullable JSON column (`to_json` writes them).
    pub fn opt_json<T: serde::de::DeserializeOwned>(&self, col: &str) -> StoreResult<Option<T>> {
        match self.text(col)? {
            Some(text) => serde_json::from_str(&text).map(Some).map_err(|e| StoreError::Internal(format!("column {col}: {e}"))),
            None => Ok(None),
        }
    }
}

/// A value as a JSON column holds it (`Row::json` and `Row::opt_json`
/// read it back).
pub(super) fn to_json(value: &impl serde::Serialize) -> StoreResult<String> {
    serde_json::to_string(value).map_err(|e| StoreError::Internal(format!("a JSON column: {e}")))
}
