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

/// Marks a field that failed; its message is already recorded.
#[derive(Debug)]
pub struct Invalid(());

/// A request input read from named fields.
pub trait FromFields: Sized {
    fn from_fields(f: &mut Fields<'_>) -> Result<Self, Invalid>;
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

    /// For checks that may themselves answer "not given" (blank text).
    pub fn optional_text(
        &mut self,
        name: &str,
        check: impl FnOnce(&str) -> Result<Option<String>, String>,
    ) -> Result<Option<String>, Invalid> {
        Ok(self.optional(name, check)?.flatten())
    }

    pub fn required_bool(&mut self, name: &str) -> Result<bool, Invalid> {
        match self.get(name) {
            Some(Given::Json(Value::Bool(b))) => Ok(*b),
            None => self.fail(name, "is required"),
            Some(_) => self.fail(name, "must be true or false"),
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

    pub fn required_id(&mut self, name: &str) -> Result<i64, Invalid> {
        match self.optional_id(name)? {
            Some(id) => Ok(id),
            None => self.fail(name, "is required"),
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
                for p in problems {
                    self.errors.add(name, p);
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
