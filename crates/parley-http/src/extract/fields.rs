//! Field-by-field reading of a JSON object (or a query string) that
//! collects every problem before answering, so a 422 names all bad fields.

use std::borrow::Cow;

use parley_domain::FieldErrors;
use serde_json::{Map, Value};

use crate::error::ApiError;

/// A positive integer that fits an id. `7.0` is the integer 7 in JSON (as
/// JSON Schema counts it), so integral floats are read too.
pub fn positive_id(v: &Value) -> Option<i64> {
    if let Some(n) = v.as_i64() {
        return (n > 0).then_some(n);
    }
    let f = v.as_f64()?;
    // 2^63 is the first float past i64::MAX; every integral float below it
    // converts exactly.
    (f.fract() == 0.0 && (1.0..9_223_372_036_854_775_808.0).contains(&f)).then_some(f as i64)
}

/// The bad items of a list named in an answer; the rest are counted.
const MAX_ITEM_PROBLEMS: usize = 10;

/// Marks a field that failed; its message is already recorded.
#[derive(Debug)]
pub struct Invalid(());

/// A request input read from named fields. Request types derive it
/// (`#[derive(FromFields)]`, beside `utoipa::ToSchema`), so one struct
/// is both what the server reads and what the document states; only
/// inputs whose fields depend on each other are read by hand.
pub trait FromFields: Sized {
    /// Each field's name and how a form spells it (see `Shape`): the
    /// derive states it from the fields' types, a hand-written reader
    /// must state it itself.
    const FIELDS: &'static [(&'static str, Shape)];

    fn from_fields(f: &mut Fields<'_>) -> Result<Self, Invalid>;
}

/// How a field's value is written in JSON, and so how a form (where every
/// value is text) must be turned into it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    Text,
    Number,
    Bool,
    /// A list: a form gives it comma-separated or as a repeated field.
    List,
    /// A list of numbers (ids), given as a list is.
    Numbers,
}

/// A type a request field is read as: the check it passes and what it
/// becomes. `read` answers `None` for a field left out, `null` or, for
/// text that may be blank, blank; the derive turns that into "is
/// required" where the field is not an `Option`.
pub trait Field: Sized {
    /// Stated by every type, so that a number or a list is never read
    /// from a form as text by a forgotten default.
    const SHAPE: Shape;

    /// What the document shows for it as a query parameter (a body shows
    /// its type's `ToSchema`, or the field's `schema_with`).
    fn schema() -> Schema;

    fn read(f: &mut Fields<'_>, name: &str) -> Result<Option<Self>, Invalid>;
}

/// A schema of the document.
pub type Schema = utoipa::openapi::RefOr<utoipa::openapi::schema::Schema>;

/// A type a list's items are read as.
pub trait Item: Sized {
    /// Whether an item is a JSON number (a form's text is read as one).
    const NUMBER: bool = false;

    fn item(v: &Value) -> Result<Self, String>;

    fn item_schema() -> Schema;
}

impl<T: Item> Field for Vec<T> {
    const SHAPE: Shape = if T::NUMBER { Shape::Numbers } else { Shape::List };

    fn schema() -> Schema {
        utoipa::openapi::schema::ArrayBuilder::new().items(T::item_schema()).build().into()
    }

    fn read(f: &mut Fields<'_>, name: &str) -> Result<Option<Self>, Invalid> {
        f.optional_list(name, T::item)
    }
}

impl Field for bool {
    const SHAPE: Shape = Shape::Bool;

    fn schema() -> Schema {
        utoipa::openapi::schema::ObjectBuilder::new().schema_type(utoipa::openapi::schema::Type::Boolean).build().into()
    }

    fn read(f: &mut Fields<'_>, name: &str) -> Result<Option<Self>, Invalid> {
        f.optional_bool(name)
    }
}

/// Where the fields come from.
enum Source<'a> {
    Json(&'a Map<String, Value>),
    /// Query pairs, every value a string; of a repeated name the last
    /// counts. Read in place: a poll's query is parsed on every request.
    Query(&'a [(Cow<'a, str>, Cow<'a, str>)]),
}

/// One field's value as given.
enum Given<'a> {
    Json(&'a Value),
    Text(&'a str),
}

pub struct Fields<'a> {
    source: Source<'a>,
    errors: FieldErrors,
}

impl<'a> Fields<'a> {
    pub fn new(map: &'a Map<String, Value>) -> Self {
        Self { source: Source::Json(map), errors: FieldErrors::new() }
    }

    pub fn query(pairs: &'a [(Cow<'a, str>, Cow<'a, str>)]) -> Self {
        Self { source: Source::Query(pairs), errors: FieldErrors::new() }
    }

    /// A field's value: `None` when absent or `null`.
    fn get(&self, name: &str) -> Option<Given<'a>> {
        match self.source {
            Source::Json(map) => map.get(name).filter(|v| !v.is_null()).map(Given::Json),
            Source::Query(pairs) => pairs.iter().rev().find(|(k, _)| k == name).map(|(_, v)| Given::Text(v.as_ref())),
        }
    }

    fn fail<T>(&mut self, name: &str, message: impl Into<String>) -> Result<T, Invalid> {
        Err(self.reject(name, message))
    }

    /// A field's JSON value as sent, for a reader that takes an object
    /// (`None` when absent, `null`, or in a query).
    pub fn json(&self, name: &str) -> Option<&'a Value> {
        match self.get(name)? {
            Given::Json(v) => Some(v),
            Given::Text(_) => None,
        }
    }

    /// A field whose value is a JSON object: `None` when absent or
    /// `null`; anything else (text from a query or a form included) is
    /// refused.
    pub fn optional_object(&mut self, name: &str) -> Result<Option<&'a Map<String, Value>>, Invalid> {
        match self.get(name) {
            None => Ok(None),
            Some(Given::Json(Value::Object(map))) => Ok(Some(map)),
            Some(_) => self.fail(name, "must be an object"),
        }
    }

    /// Records a problem found by a rule that spans more than one check.
    pub fn reject(&mut self, name: &str, message: impl Into<String>) -> Invalid {
        self.errors.add(name, message);
        Invalid(())
    }

    /// The string value of a field: `None` when absent or `null`.
    fn string(&mut self, name: &str) -> Result<Option<&'a str>, Invalid> {
        match self.get(name) {
            None => Ok(None),
            Some(Given::Text(s)) => Ok(Some(s)),
            Some(Given::Json(Value::String(s))) => Ok(Some(s.as_str())),
            Some(Given::Json(_)) => self.fail(name, "must be a string"),
        }
    }

    /// A field that must be given: `read`'s "not given" becomes "is
    /// required".
    pub fn present<T>(&mut self, name: &str, read: Result<Option<T>, Invalid>) -> Result<T, Invalid> {
        match read? {
            Some(v) => Ok(v),
            None => self.fail(name, "is required"),
        }
    }

    pub fn required<T>(&mut self, name: &str, check: impl FnOnce(&str) -> Result<T, String>) -> Result<T, Invalid> {
        match self.string(name)? {
            None => self.fail(name, "is required"),
            Some(s) => check(s).or_else(|m| self.fail(name, m)),
        }
    }

    pub fn optional<T>(&mut self, name: &str, check: impl FnOnce(&str) -> Result<T, String>) -> Result<Option<T>, Invalid> {
        match self.string(name)? {
            None => Ok(None),
            Some(s) => check(s).map(Some).or_else(|m| self.fail(name, m)),
        }
    }

    pub fn optional_bool(&mut self, name: &str) -> Result<Option<bool>, Invalid> {
        match self.get(name) {
            None => Ok(None),
            Some(Given::Json(Value::Bool(b))) => Ok(Some(*b)),
            Some(_) => self.fail(name, "must be true or false"),
        }
    }

    /// A whole JSON number from `min` to `max`.
    pub fn optional_integer(&mut self, name: &str, min: u32, max: u32) -> Result<Option<u32>, Invalid> {
        match self.get(name) {
            None => Ok(None),
            Some(Given::Json(v))
                if let Some(n) = positive_id(v).and_then(|n| u32::try_from(n).ok()).filter(|n| (min..=max).contains(n)) =>
            {
                Ok(Some(n))
            }
            Some(_) => self.fail(name, format!("must be an integer from {min} to {max}")),
        }
    }

    /// A positive integer id given as a JSON number.
    pub fn optional_id(&mut self, name: &str) -> Result<Option<i64>, Invalid> {
        match self.get(name) {
            None => Ok(None),
            Some(Given::Json(v)) if let Some(n) = positive_id(v) => Ok(Some(n)),
            Some(_) => self.fail(name, "must be a positive integer id"),
        }
    }

    /// A JSON array whose items each pass `check`; `None` when absent.
    pub fn optional_list<T>(&mut self, name: &str, mut check: impl FnMut(&Value) -> Result<T, String>) -> Result<Option<Vec<T>>, Invalid> {
        match self.get(name) {
            None => Ok(None),
            Some(Given::Json(Value::Array(items))) => {
                let mut out = Vec::with_capacity(items.len());
                let mut problems = Vec::new();
                for (i, item) in items.iter().enumerate() {
                    match check(item) {
                        Ok(v) => out.push(v),
                        Err(m) => problems.push(format!("item {i}: {m}")),
                    }
                }
                if problems.is_empty() {
                    return Ok(Some(out));
                }
                // A long list of bad items is named by its first few: the
                // answer stays small whatever the body holds.
                let more = problems.len().saturating_sub(MAX_ITEM_PROBLEMS);
                for p in problems.into_iter().take(MAX_ITEM_PROBLEMS) {
                    self.errors.add(name, p);
                }
                if more > 0 {
                    self.errors.add(name, format!("and {more} more items"));
                }
                Err(Invalid(()))
            }
            Some(_) => self.fail(name, "must be an array"),
        }
    }

    /// Returns the parsed input, or every recorded problem.
    pub fn finish<T>(self, parsed: Result<T, Invalid>) -> Result<T, ApiError> {
        if !self.errors.is_empty() {
            return Err(self.errors.into());
        }
        // `Invalid` is only made together with a recorded error.
        parsed.map_err(|_| ApiError::Internal)
    }
}
