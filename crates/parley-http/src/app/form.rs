//! Reading a submitted form (`application/x-www-form-urlencoded`).

use axum::extract::{FromRequest, Request};
use parley_domain::DomainError;
use serde_json::{Map, Value};

use super::error::PageError;
use super::{cookies, csrf};
use crate::error::ApiError;
use crate::extract::{Fields, FromFields, RawBody, Shape};

/// The fields of a form, in order; of a repeated name the first counts.
#[derive(Default)]
pub struct Form(Vec<(String, String)>);

impl Form {
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }

    /// Every field, in order, repeated names included.
    pub fn pairs(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// Reads the form into the request type `T`, by the API's rules:
    /// empty fields are left out, a list field is split at commas and white
    /// space (or, repeated, collected into one), a number field is read as
    /// the JSON number it spells and a true/false one as the JSON boolean.
    /// What each field is comes from `T` itself (`FromFields::FIELDS`).
    pub fn read<T: FromFields>(&self) -> Result<T, DomainError> {
        let shape = |name: &str| T::FIELDS.iter().find(|(n, _)| *n == name).map_or(Shape::Text, |(_, s)| *s);
        let mut map = Map::new();
        for (name, value) in self.pairs() {
            if name == csrf::FIELD {
                continue;
            }
            if matches!(shape(name), Shape::List | Shape::Numbers) {
                let numbers = shape(name) == Shape::Numbers;
                let items = value.split([',', '\n', '\r', ' ']).map(str::trim).filter(|s| !s.is_empty()).map(|s| match s.parse::<u64>() {
                    Ok(n) if numbers => Value::from(n),
                    _ => Value::String(s.to_owned()),
                });
                let entry = map.entry(name.to_owned()).or_insert_with(|| Value::Array(Vec::new()));
                if let Value::Array(list) = entry {
                    list.extend(items);
                }
            } else if !value.trim().is_empty() && !map.contains_key(name) {
                let typed = match shape(name) {
                    Shape::Number => value.trim().parse::<u64>().ok().map(Value::from),
                    Shape::Bool => match value.trim() {
                        "true" => Some(Value::Bool(true)),
                        "false" => Some(Value::Bool(false)),
                        _ => None,
                    },
                    Shape::Text | Shape::List | Shape::Numbers => None,
                };
                map.insert(name.to_owned(), typed.unwrap_or_else(|| Value::String(value.to_owned())));
            }
        }
        let mut fields = Fields::new(&map);
        let parsed = T::from_fields(&mut fields);
        fields.finish(parsed).map_err(|e| match e {
            ApiError::Domain(d) => d,
            _ => DomainError::invalid("form", "could not be read"),
        })
    }
}

impl<S: Send + Sync> FromRequest<S> for Form {
    type Rejection = PageError;

    /// The body is read as every other body is (`RawBody`: its size limit
    /// and deadline), and a failure shows as a page.
    async fn from_request(req: Request, state: &S) -> Result<Self, PageError> {
        let RawBody(body) = RawBody::from_request(req, state).await?;
        Ok(Self(url::form_urlencoded::parse(&body).into_owned().collect()))
    }
}

/// A rule's pattern as an HTML `pattern` attribute, so a browser refuses
/// what the server would: the attribute is anchored already, and
/// browsers read it with the `v` flag, where a `-` ending a class must be
/// escaped. A rule with no pattern, or one using what the `v` flag reads
/// differently (escapes, braces, `|`, `/`, `&`, parentheses), gets none:
/// the server checks it all the same.
pub fn html_pattern(rule: &parley_domain::validate::Rule) -> Option<String> {
    let plain = !rule.pattern.is_empty() && !rule.pattern.contains(['\\', '{', '}', '|', '/', '&', '(', ')']);
    plain.then(|| rule.pattern.trim_start_matches('^').trim_end_matches('$').replace("-]", "\\-]"))
}

/// A form of a signed-in page, accepted only with the session's
/// anti-forgery token and not from another site (see `csrf`). Every
/// state-changing route of a signed-in page reads its form through this,
/// so none can forget the check. It comes last among a handler's
/// arguments: the session and the path are answered for first.
pub struct CheckedForm(pub Form);

impl<S: Send + Sync> FromRequest<S> for CheckedForm {
    type Rejection = PageError;

    async fn from_request(req: Request, state: &S) -> Result<Self, PageError> {
        // The token derives from the session cookie (no read of the
        // database); without a cookie nothing matches.
        let expected = cookies::read(req.headers(), cookies::SESSION).map(csrf::session_token).unwrap_or_default();
        let headers = req.headers().clone();
        let form = Form::from_request(req, state).await?;
        if !csrf::accepts(&headers, form.get(csrf::FIELD), &expected) {
            return Err(PageError::Forged);
        }
        Ok(Self(form))
    }
}

#[cfg(test)]
mod tests {
    use super::html_pattern;

    #[test]
    fn a_rule_reads_as_a_browser_pattern() {
        use parley_domain::validate::{EMAIL, NEW_PASSWORD, SHORTCUT};
        assert_eq!(html_pattern(&SHORTCUT).as_deref(), Some("[A-Za-z0-9][A-Za-z0-9_\\-]*"));
        assert_eq!(html_pattern(&NEW_PASSWORD), None, "no pattern");
        assert_eq!(html_pattern(&EMAIL), None, "what the v flag reads otherwise");
    }
}
