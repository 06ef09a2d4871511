//! Field types that are not text under a rule: ids, enumerations and
//! bounded numbers, each with the check it passes, the message a bad
//! value gets, and its schema (a query shows it; a body names the same
//! schema on the field with `schema_with`, since utoipa cannot take it
//! from this crate's trait for a type of the domain).

use parley_domain::auth::MAX_PERSONAL_TOKEN_DAYS;
use parley_domain::events::EventKind;
use parley_domain::feed::Cursor;
use parley_domain::model::{ChallengeId, MessageId, OperatorId, Role, SiteId, StatusFilter};
use parley_domain::validate;
use serde_json::{Map, Value};

use super::schema;
use crate::extract::{Field, Fields, Invalid, Item, Schema, Shape, positive_id};

impl Field for Role {
    const SHAPE: Shape = Shape::Text;

    fn schema() -> Schema {
        schema::role().into()
    }

    fn read(f: &mut Fields<'_>, name: &str) -> Result<Option<Self>, Invalid> {
        f.optional(name, |s| Role::parse(s).ok_or_else(|| "must be admin or agent".into()))
    }
}

/// Records named by their id in a body: a positive JSON integer.
macro_rules! id_fields {
    ($($id:ident),*) => {$(
        impl Field for $id {
            const SHAPE: Shape = Shape::Number;

            fn schema() -> Schema {
                schema::id(false).into()
            }

            fn read(f: &mut Fields<'_>, name: &str) -> Result<Option<Self>, Invalid> {
                Ok(f.optional_id(name)?.map($id))
            }
        }
    )*};
}

id_fields!(OperatorId, ChallengeId, MessageId);

impl Item for SiteId {
    const NUMBER: bool = true;

    fn item_schema() -> Schema {
        schema::id(false).into()
    }

    fn item(v: &Value) -> Result<Self, String> {
        positive_id(v).map(SiteId).ok_or_else(|| "must be a positive integer id".into())
    }
}

/// A kind partners can subscribe to, or why `name` is none.
fn webhook_kind(name: &str) -> Result<EventKind, String> {
    EventKind::parse_webhook(name).ok_or_else(|| {
        let kinds: Vec<&str> = EventKind::WEBHOOK.iter().map(|k| k.as_str()).collect();
        format!("{name:?} is not one of {}", kinds.join(", "))
    })
}

impl Field for EventKind {
    const SHAPE: Shape = Shape::Text;

    fn schema() -> Schema {
        schema::event_kind().into()
    }

    fn read(f: &mut Fields<'_>, name: &str) -> Result<Option<Self>, Invalid> {
        f.optional(name, webhook_kind)
    }
}

impl Item for EventKind {
    fn item_schema() -> Schema {
        schema::event_kind().into()
    }

    fn item(v: &Value) -> Result<Self, String> {
        webhook_kind(v.as_str().ok_or_else(|| "must be a string".to_owned())?)
    }
}

/// The kinds a webhook receives: at least one (all are had by leaving
/// the field out).
#[derive(Debug)]
pub struct EventKinds(pub Vec<EventKind>);

impl Field for EventKinds {
    const SHAPE: Shape = Shape::List;

    fn schema() -> Schema {
        schema::event_kinds().into()
    }

    fn read(f: &mut Fields<'_>, name: &str) -> Result<Option<Self>, Invalid> {
        match Vec::<EventKind>::read(f, name)? {
            Some(list) if list.is_empty() => Err(f.reject(name, "must name at least one kind, or be left out for all")),
            other => Ok(other.map(EventKinds)),
        }
    }
}

/// `true`, the only answer that lets a conversation open.
#[derive(Debug)]
pub struct Accepted;

impl Field for Accepted {
    const SHAPE: Shape = Shape::Bool;

    fn schema() -> Schema {
        schema::always_true().into()
    }

    fn read(f: &mut Fields<'_>, name: &str) -> Result<Option<Self>, Invalid> {
        match f.optional_bool(name)? {
            None => Ok(None),
            Some(true) => Ok(Some(Accepted)),
            Some(false) => Err(f.reject(name, "must be true to open a conversation")),
        }
    }
}

/// Days a personal token lives: 1 to 365.
#[derive(Debug)]
pub struct TokenDays(pub u32);

impl Field for TokenDays {
    const SHAPE: Shape = Shape::Number;

    fn schema() -> Schema {
        schema::bounded_integer(1, i64::from(MAX_PERSONAL_TOKEN_DAYS)).into()
    }

    fn read(f: &mut Fields<'_>, name: &str) -> Result<Option<Self>, Invalid> {
        Ok(f.optional_integer(name, 1, MAX_PERSONAL_TOKEN_DAYS)?.map(TokenDays))
    }
}

/// A query integer from `MIN` to `MAX`, written in digits.
#[derive(Debug, Clone, Copy)]
pub struct Bounded<const MIN: u32, const MAX: u32>(pub u32);

impl<const MIN: u32, const MAX: u32> Field for Bounded<MIN, MAX> {
    const SHAPE: Shape = Shape::Text;

    fn schema() -> Schema {
        schema::bounded_integer(i64::from(MIN), i64::from(MAX)).into()
    }

    fn read(f: &mut Fields<'_>, name: &str) -> Result<Option<Self>, Invalid> {
        f.optional(name, |s| match s.parse::<u32>() {
            Ok(n) if (MIN..=MAX).contains(&n) && s.bytes().all(|b| b.is_ascii_digit()) => Ok(Bounded(n)),
            _ => Err(format!("must be an integer from {MIN} to {MAX}")),
        })
    }
}

/// An `after_id` query value: a non-negative integer, in digits.
#[derive(Debug, Clone, Copy)]
pub struct AfterId(pub MessageId);

impl Field for AfterId {
    const SHAPE: Shape = Shape::Text;

    fn schema() -> Schema {
        schema::after_id().into()
    }

    fn read(f: &mut Fields<'_>, name: &str) -> Result<Option<Self>, Invalid> {
        f.optional(name, |s| match s.parse::<i64>() {
            Ok(n) if n >= 0 && s.bytes().all(|b| b.is_ascii_digit()) => Ok(AfterId(MessageId(n))),
            _ => Err("must be a non-negative integer".into()),
        })
    }
}

/// An operator's feed cursor in a query.
impl Field for Cursor {
    const SHAPE: Shape = Shape::Text;

    fn schema() -> Schema {
        schema::cursor().into()
    }

    fn read(f: &mut Fields<'_>, name: &str) -> Result<Option<Self>, Invalid> {
        f.optional(name, |s| s.parse::<Cursor>().map_err(|_| "must be a cursor this service returned".to_owned()))
    }
}

/// Any text: checked where it is used (a link's code is compared, not
/// parsed).
#[derive(Debug)]
pub struct Text(pub String);

impl Field for Text {
    const SHAPE: Shape = Shape::Text;

    fn schema() -> Schema {
        utoipa::openapi::schema::ObjectBuilder::new().schema_type(utoipa::openapi::schema::Type::String).build().into()
    }

    fn read(f: &mut Fields<'_>, name: &str) -> Result<Option<Self>, Invalid> {
        f.optional(name, |s| Ok(Text(s.to_owned())))
    }
}

/// An inbox filter.
impl Field for StatusFilter {
    const SHAPE: Shape = Shape::Text;

    fn schema() -> Schema {
        schema::one_of(&StatusFilter::NAMES, false).into()
    }

    fn read(f: &mut Fields<'_>, name: &str) -> Result<Option<Self>, Invalid> {
        f.optional(name, |s| StatusFilter::parse(s).ok_or_else(|| format!("must be one of {}", StatusFilter::NAMES.join(", "))))
    }
}

/// A webhook's address as sent (its host is checked later, when it is
/// resolved): http or https, under the page URL rule, its fragment kept.
#[derive(Debug)]
pub struct WebhookUrl(pub String);

impl Field for WebhookUrl {
    const SHAPE: Shape = Shape::Text;

    fn schema() -> Schema {
        schema::webhook_url().into()
    }

    fn read(f: &mut Fields<'_>, name: &str) -> Result<Option<Self>, Invalid> {
        f.optional(name, |s| validate::PAGE_URL.check(s).map(|()| WebhookUrl(s.to_owned())))
    }
}

/// Facts about a visitor a page sets: an object of at most 50 keys whose
/// values are text, numbers, booleans or null (null removes a key).
#[derive(Debug)]
pub struct Attributes(pub Map<String, Value>);

impl Field for Attributes {
    const SHAPE: Shape = Shape::Text;

    fn schema() -> Schema {
        schema::attributes().into()
    }

    fn read(f: &mut Fields<'_>, name: &str) -> Result<Option<Self>, Invalid> {
        let Some(map) = f.optional_object(name)? else { return Ok(None) };
        // The rules are the domain's: checked here against nothing, so
        // that a 422 names every bad field of the request at once.
        match parley_domain::identity::merge_attributes(&mut Default::default(), map) {
            Err(parley_domain::DomainError::Validation(errors)) => Err(f.reject(name, joined(&errors))),
            _ => Ok(Some(Attributes(map.clone()))),
        }
    }
}

/// A site's language: one of the widget's languages, or `auto` (each
/// visitor's browser chooses). `None` inside: `auto`.
#[derive(Debug)]
pub struct SiteLocale(pub Option<String>);

impl Field for SiteLocale {
    const SHAPE: Shape = Shape::Text;

    fn schema() -> Schema {
        schema::site_locale().into()
    }

    fn read(f: &mut Fields<'_>, name: &str) -> Result<Option<Self>, Invalid> {
        f.optional(name, |s| match s {
            "auto" => Ok(SiteLocale(None)),
            tag => parley_domain::locale::LANGUAGES
                .iter()
                .find(|l| **l == tag)
                .map(|l| SiteLocale(Some((*l).to_owned())))
                .ok_or_else(|| format!("must be auto or one of {}", parley_domain::locale::LANGUAGES.join(", "))),
        })
    }
}

/// A site's title, greeting and privacy text per language.
#[derive(Debug)]
pub struct SiteTextsByLanguage(pub std::collections::BTreeMap<String, parley_domain::model::SiteTexts>);

impl Field for SiteTextsByLanguage {
    const SHAPE: Shape = Shape::Text;

    fn schema() -> Schema {
        schema::site_texts().into()
    }

    fn read(f: &mut Fields<'_>, name: &str) -> Result<Option<Self>, Invalid> {
        let Some(map) = f.optional_object(name)? else { return Ok(None) };
        let mut out = std::collections::BTreeMap::new();
        let mut problems = Vec::new();
        for (language, texts) in map {
            if !parley_domain::locale::LANGUAGES.contains(&language.as_str()) {
                problems.push(format!("{language} is not one of {}", parley_domain::locale::LANGUAGES.join(", ")));
                continue;
            }
            match site_texts(texts) {
                Ok(texts) => {
                    out.insert(language.clone(), texts);
                }
                Err(problem) => problems.push(format!("{language}: {problem}")),
            }
        }
        if problems.is_empty() { Ok(Some(SiteTextsByLanguage(out))) } else { Err(f.reject(name, problems.join("; "))) }
    }
}

/// One language's texts: `title` under the name rule, `greeting` and
/// `privacy_text` under the long text rule; blank counts as not given.
fn site_texts(value: &Value) -> Result<parley_domain::model::SiteTexts, String> {
    let Value::Object(map) = value else { return Err("must be an object of title, greeting and privacy_text".into()) };
    let mut texts = parley_domain::model::SiteTexts::default();
    for (key, v) in map {
        let text = v.as_str().ok_or_else(|| format!("{key} must be a string"))?;
        let slot = match key.as_str() {
            "title" => {
                texts.title = validate::name(text).map_err(|m| format!("title {m}"))?;
                continue;
            }
            "greeting" => &mut texts.greeting,
            "privacy_text" => &mut texts.privacy_text,
            other => return Err(format!("{other} is not title, greeting or privacy_text")),
        };
        *slot = validate::optional(&validate::LONG_TEXT, text).map_err(|m| format!("{key} {m}"))?;
    }
    Ok(texts)
}

/// A site's business hours; `{}` removes them (always open).
#[derive(Debug)]
pub struct Hours(pub Option<parley_domain::hours::BusinessHours>);

impl Field for Hours {
    const SHAPE: Shape = Shape::Text;

    fn schema() -> Schema {
        schema::business_hours().into()
    }

    fn read(f: &mut Fields<'_>, name: &str) -> Result<Option<Self>, Invalid> {
        let Some(map) = f.optional_object(name)? else { return Ok(None) };
        if map.is_empty() {
            return Ok(Some(Hours(None)));
        }
        let hours: parley_domain::hours::BusinessHours =
            serde_json::from_value(Value::Object(map.clone())).map_err(|e| f.reject(name, format!("{e}")))?;
        let problems = hours.check(name);
        if problems.is_empty() { Ok(Some(Hours(Some(hours)))) } else { Err(f.reject(name, joined(&problems))) }
    }
}

/// A domain rule's problems as one sentence for the field that broke it.
fn joined(errors: &parley_domain::FieldErrors) -> String {
    errors.fields().values().flatten().cloned().collect::<Vec<_>>().join("; ")
}

/// A link's expiry: seconds since the epoch, in digits.
#[derive(Debug, Clone, Copy)]
pub struct Expires(pub i64);

impl Field for Expires {
    const SHAPE: Shape = Shape::Text;

    fn schema() -> Schema {
        utoipa::openapi::schema::ObjectBuilder::new()
            .schema_type(utoipa::openapi::schema::Type::Integer)
            .minimum(Some(0))
            .maximum(Some(999_999_999_999_i64))
            .description(Some("When the link expires, in seconds since the epoch: as the link has it."))
            .build()
            .into()
    }

    fn read(f: &mut Fields<'_>, name: &str) -> Result<Option<Self>, Invalid> {
        f.optional(name, |s| match s.parse::<i64>() {
            Ok(n) if n >= 0 && s.len() <= 12 && s.bytes().all(|b| b.is_ascii_digit()) => Ok(Expires(n)),
            _ => Err("must be the expiry of a link this service made".into()),
        })
    }
}
