//! Statement parameters, typed even when null.
//!
//! PostgreSQL needs each parameter's type when it prepares a statement
//! (`?1 IS NULL OR c.site_id = ?1` gives it no clue on its own), so a null
//! is still a null *integer* or a null *text*. SQLite ignores the type.

use parley_domain::Timestamp;
use parley_domain::model::*;

#[derive(Clone, Copy, Debug)]
pub enum Arg<'a> {
    Int(Option<i64>),
    Text(Option<&'a str>),
    Bool(Option<bool>),
    Bytes(Option<&'a [u8]>),
}

/// A parameter's declared type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ty {
    Int,
    Text,
    Bool,
    Bytes,
}

impl Arg<'_> {
    pub fn ty(&self) -> Ty {
        match self {
            Arg::Int(_) => Ty::Int,
            Arg::Text(_) => Ty::Text,
            Arg::Bool(_) => Ty::Bool,
            Arg::Bytes(_) => Ty::Bytes,
        }
    }
}

/// `args![a, b, c]`: a parameter list from anything with an `Arg` conversion.
macro_rules! args {
    ($($value:expr),* $(,)?) => { &[$($crate::sql::Arg::from($value)),*] as &[$crate::sql::Arg<'_>] };
}
pub(crate) use args;

impl From<i64> for Arg<'_> {
    fn from(v: i64) -> Self {
        Arg::Int(Some(v))
    }
}

impl From<Option<i64>> for Arg<'_> {
    fn from(v: Option<i64>) -> Self {
        Arg::Int(v)
    }
}

impl From<u32> for Arg<'_> {
    fn from(v: u32) -> Self {
        Arg::Int(Some(i64::from(v)))
    }
}

impl From<Option<u16>> for Arg<'_> {
    fn from(v: Option<u16>) -> Self {
        Arg::Int(v.map(i64::from))
    }
}

/// Counts and offsets beyond `i64::MAX` mean "everything".
impl From<u64> for Arg<'_> {
    fn from(v: u64) -> Self {
        Arg::Int(Some(i64::try_from(v).unwrap_or(i64::MAX)))
    }
}

impl From<bool> for Arg<'_> {
    fn from(v: bool) -> Self {
        Arg::Bool(Some(v))
    }
}

impl From<Option<bool>> for Arg<'_> {
    fn from(v: Option<bool>) -> Self {
        Arg::Bool(v)
    }
}

impl<'a> From<&'a str> for Arg<'a> {
    fn from(v: &'a str) -> Self {
        Arg::Text(Some(v))
    }
}

impl<'a> From<&'a String> for Arg<'a> {
    fn from(v: &'a String) -> Self {
        Arg::Text(Some(v))
    }
}

impl<'a> From<Option<&'a str>> for Arg<'a> {
    fn from(v: Option<&'a str>) -> Self {
        Arg::Text(v)
    }
}

impl<'a> From<&'a Option<String>> for Arg<'a> {
    fn from(v: &'a Option<String>) -> Self {
        Arg::Text(v.as_deref())
    }
}

impl<'a> From<&'a [u8]> for Arg<'a> {
    fn from(v: &'a [u8]) -> Self {
        Arg::Bytes(Some(v))
    }
}

impl<'a> From<&'a Vec<u8>> for Arg<'a> {
    fn from(v: &'a Vec<u8>) -> Self {
        Arg::Bytes(Some(v))
    }
}

impl From<Timestamp> for Arg<'_> {
    fn from(v: Timestamp) -> Self {
        Arg::Int(Some(v.as_millis()))
    }
}

impl From<Option<Timestamp>> for Arg<'_> {
    fn from(v: Option<Timestamp>) -> Self {
        Arg::Int(v.map(Timestamp::as_millis))
    }
}

macro_rules! id_args {
    ($($id:ident),*) => {$(
        impl From<$id> for Arg<'_> {
            fn from(v: $id) -> Self {
                Arg::Int(Some(v.0))
            }
        }
        impl From<Option<$id>> for Arg<'_> {
            fn from(v: Option<$id>) -> Self {
                Arg::Int(v.map(|id| id.0))
            }
        }
    )*};
}

parley_domain::for_each_id!(id_args);
