//! Field schemas built from the same rules the server checks, so the
//! OpenAPI document states exactly what is accepted: a value the document
//! allows passes the checks, and one it forbids is refused.
//!
//! Each function here is a `schema_with` for one kind of field. The
//! nullable ones are for optional fields, which may also be sent as
//! `null` (the same as leaving them out).

use parley_domain::validate::{self, Rule};
use serde_json::Value;
use utoipa::openapi::schema::{ArrayBuilder, Object, ObjectBuilder, SchemaType, Type};
use utoipa::openapi::{Array, KnownFormat, SchemaFormat};

/// The largest id and the largest `after_id`.
pub const MAX_ID: i64 = i64::MAX;

fn string_type(nullable: bool) -> SchemaType {
    if nullable { SchemaType::from_iter([Type::String, Type::Null]) } else { SchemaType::new(Type::String) }
}

/// A string under `rule`.
pub fn rule(rule: &Rule, nullable: bool) -> Object {
    let pattern = (!rule.pattern.is_empty()).then_some(rule.pattern);
    ObjectBuilder::new()
        .schema_type(string_type(nullable))
        .min_length((rule.min_chars > 0).then_some(rule.min_chars))
        .max_length(Some(rule.max_chars))
        .pattern(pattern)
        .build()
}

/// One of a fixed set of strings.
pub fn one_of(values: &[&str], nullable: bool) -> Object {
    let mut list: Vec<Value> = values.iter().map(|v| Value::from(*v)).collect();
    if nullable {
        list.push(Value::Null);
    }
    ObjectBuilder::new().schema_type(string_type(nullable)).enum_values(Some(list)).build()
}

/// A feed cursor: three base-36 numbers (at most 12 digits each) joined
/// by dashes.
pub fn cursor() -> Object {
    ObjectBuilder::new()
        .schema_type(SchemaType::new(Type::String))
        .pattern(Some("^[0-9a-z]{1,12}-[0-9a-z]{1,12}-[0-9a-z]{1,12}$"))
        .max_length(Some(64))
        .build()
}

/// An integer from `min` to `max`.
pub fn bounded_integer(min: i64, max: i64) -> Object {
    ObjectBuilder::new().schema_type(SchemaType::new(Type::Integer)).minimum(Some(min)).maximum(Some(max)).build()
}

/// An integer from `min` to `max`, or null for not given.
pub fn nullable_bounded_integer(min: i64, max: i64) -> Object {
    ObjectBuilder::new().schema_type(SchemaType::from_iter([Type::Integer, Type::Null])).minimum(Some(min)).maximum(Some(max)).build()
}

/// A positive integer id.
pub fn id(nullable: bool) -> Object {
    let t = if nullable { SchemaType::from_iter([Type::Integer, Type::Null]) } else { SchemaType::new(Type::Integer) };
    ObjectBuilder::new()
        .schema_type(t)
        .format(Some(SchemaFormat::KnownFormat(KnownFormat::Int64)))
        .minimum(Some(1))
        .maximum(Some(MAX_ID))
        .build()
}

/// An `after_id`: a non-negative integer.
pub fn after_id() -> Object {
    ObjectBuilder::new()
        .schema_type(SchemaType::new(Type::Integer))
        .format(Some(SchemaFormat::KnownFormat(KnownFormat::Int64)))
        .minimum(Some(0))
        .maximum(Some(MAX_ID))
        .build()
}

/// A list of positive integer ids.
pub fn ids(nullable: bool) -> Array {
    let t = if nullable { SchemaType::from_iter([Type::Array, Type::Null]) } else { SchemaType::new(Type::Array) };
    ArrayBuilder::new().schema_type(t).items(id(false)).build()
}

/// Named string types of the document, one per rule: request fields use
/// them as their types (`Option<Email>` for an optional email), so each
/// field keeps its own description and the rule is stated once, under
/// `components.schemas`.
macro_rules! rule_types {
    ($($(#[$doc:meta])* $name:ident => $rule:expr;)*) => {$(
        $(#[$doc])*
        pub struct $name;

        impl utoipa::PartialSchema for $name {
            fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
                let rule: &Rule = &$rule;
                ObjectBuilder::from(self::rule(rule, false)).description(Some(rule.describe)).into()
            }
        }

        impl utoipa::ToSchema for $name {}
    )*};
}

rule_types! {
    Token => validate::TOKEN;
    VisitorUuid => validate::VISITOR_UUID;
    RequiredName => validate::REQUIRED_NAME;
    Name => validate::NAME;
    ShortText => validate::SHORT_TEXT;
    LongText => validate::LONG_TEXT;
    Note => validate::NOTE;
    MessageBody => validate::MESSAGE_BODY;
    ClientMessageId => validate::CLIENT_MESSAGE_ID;
    Email => validate::EMAIL;
    Phone => validate::PHONE;
    PageUrl => validate::PAGE_URL;
    Domain => validate::DOMAIN;
    Colour => validate::COLOUR;
    Password => validate::PASSWORD;
    NewPassword => validate::NEW_PASSWORD;
    Code => validate::CODE;
    VisitorCursor => validate::VISITOR_CURSOR;
}

macro_rules! fields {
    ($($(#[$doc:meta])* $name:ident => $body:expr;)*) => {$(
        $(#[$doc])*
        pub fn $name() -> impl Into<utoipa::openapi::RefOr<utoipa::openapi::schema::Schema>> {
            $body
        }
    )*};
}

fields! {
    role => one_of(&["admin", "agent"], false);
    optional_role => one_of(&["admin", "agent"], true);
    operator_id => id(false);
    optional_operator_id => id(true);
    challenge_id => id(false);
    site_ids => ids(true);
    /// Event kinds, at least one.
    event_kinds => {
        let kinds: Vec<&str> = parley_domain::events::EventKind::WEBHOOK.iter().map(|k| k.as_str()).collect();
        ArrayBuilder::new()
            .schema_type(SchemaType::from_iter([Type::Array, Type::Null]))
            .items(one_of(&kinds, false))
            .min_items(Some(1))
            .build()
    };
    /// One event kind.
    event_kind => {
        let kinds: Vec<&str> = parley_domain::events::EventKind::WEBHOOK.iter().map(|k| k.as_str()).collect();
        one_of(&kinds, false)
    };
    /// Must be `true`.
    always_true => ObjectBuilder::new().schema_type(SchemaType::new(Type::Boolean)).enum_values(Some([true])).build();
}

/// A query parameter with its schema (hand-built parameters keep their
/// description and required flag, which `schema_with` would drop).
pub fn query(
    name: &str,
    required: bool,
    description: &str,
    schema: impl Into<utoipa::openapi::RefOr<utoipa::openapi::schema::Schema>>,
) -> utoipa::openapi::path::Parameter {
    use utoipa::openapi::Required;
    use utoipa::openapi::path::{ParameterBuilder, ParameterIn};
    ParameterBuilder::new()
        .name(name)
        .parameter_in(ParameterIn::Query)
        .required(if required { Required::True } else { Required::False })
        .description(Some(description))
        .schema(Some(schema))
        .build()
}
