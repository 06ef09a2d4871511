//! Field schemas built from the same rules the server checks, so the
//! OpenAPI document states exactly what is accepted: a value the document
//! allows passes the checks, and one it forbids is refused.
//!
//! Each function here is a `schema_with` for one kind of field. The
//! nullable ones are for optional fields, which may also be sent as
//! `null` (the same as leaving them out).

use parley_domain::validate::{self, Rule};
use serde_json::Value;

use crate::extract::{Field, Fields, Invalid, Item, Schema, Shape};
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

/// The text fields of requests, one type per rule: a request declares a
/// field by its type (`Option<Email>` for an optional email), which both
/// reads it (the rule's check, and what the value becomes) and documents
/// it (a named schema under `components.schemas`, stated once). A check
/// that answers `None` (blank text where blank means not given) reads as
/// a field left out.
macro_rules! rule_types {
    ($($(#[$doc:meta])* $name:ident($out:ty) => $rule:expr, $check:expr;)*) => {$(
        $(#[$doc])*
        #[derive(Debug)]
        pub struct $name(pub $out);

        impl utoipa::PartialSchema for $name {
            fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
                let rule: &Rule = &$rule;
                ObjectBuilder::from(self::rule(rule, false)).description(Some(rule.describe)).into()
            }
        }

        impl utoipa::ToSchema for $name {}

        impl Field for $name {
            const SHAPE: Shape = Shape::Text;

            fn schema() -> Schema {
                self::rule(&$rule, false).into()
            }

            fn read(f: &mut Fields<'_>, name: &str) -> Result<Option<Self>, Invalid> {
                let check: fn(&str) -> validate::Check<Option<$out>> = $check;
                Ok(f.optional(name, check)?.flatten().map($name))
            }
        }
    )*};
}

/// Text that passes `rule`, kept as sent.
fn as_sent(rule: &Rule, s: &str) -> validate::Check<Option<String>> {
    rule.check(s)?;
    Ok(Some(s.to_owned()))
}

rule_types! {
    Token(String) => validate::TOKEN, |s| validate::token(s).map(Some);
    VisitorUuid(String) => validate::VISITOR_UUID, |s| validate::visitor_uuid(s).map(Some);
    RequiredName(String) => validate::REQUIRED_NAME, |s| validate::required_name(s).map(Some);
    /// Blank counts as not given.
    Name(String) => validate::NAME, validate::name;
    ShortText(String) => validate::SHORT_TEXT, |s| validate::optional(&validate::SHORT_TEXT, s);
    LongText(String) => validate::LONG_TEXT, |s| validate::optional(&validate::LONG_TEXT, s);
    Note(String) => validate::NOTE, |s| validate::optional(&validate::NOTE, s);
    MessageBody(String) => validate::MESSAGE_BODY, |s| validate::message_body(s).map(Some);
    Shortcut(String) => validate::SHORTCUT, |s| validate::shortcut(s).map(Some);
    SearchText(String) => validate::SEARCH_TEXT, |s| as_sent(&validate::SEARCH_TEXT, s);
    ClientMessageId(String) => validate::CLIENT_MESSAGE_ID, |s| validate::client_message_id(s).map(Some);
    AttachmentId(String) => validate::ATTACHMENT_ID, |s| as_sent(&validate::ATTACHMENT_ID, s);
    Email(String) => validate::EMAIL, |s| validate::email(s).map(Some);
    Phone(String) => validate::PHONE, |s| validate::phone(s).map(Some);
    PageUrl(validate::PageUrl) => validate::PAGE_URL, |s| validate::page_url(s).map(Some);
    /// Empty removes the address set.
    PageUrlOrEmpty(Option<String>) => validate::PAGE_URL_OR_EMPTY, |s| validate::page_url_or_empty(s).map(Some);
    Domain(String) => validate::DOMAIN, |s| validate::domain(s).map(Some);
    Colour(String) => validate::COLOUR, |s| validate::colour(s).map(Some);
    Password(String) => validate::PASSWORD, |s| as_sent(&validate::PASSWORD, s);
    NewPassword(String) => validate::NEW_PASSWORD, |s| validate::new_password(s).map(Some);
    Code(String) => validate::CODE, |s| validate::code(s).map(Some);
    UserId(String) => validate::USER_ID, |s| as_sent(&validate::USER_ID, s);
    Languages(String) => validate::LANGUAGE_LIST, |s| as_sent(&validate::LANGUAGE_LIST, s);
    Locale(String) => validate::LOCALE, |s| as_sent(&validate::LOCALE, s);
    Signature(String) => validate::SIGNATURE, |s| as_sent(&validate::SIGNATURE, s);
    /// Checked for its shape only: it is opened against its conversation
    /// once that is known.
    VisitorCursor(String) => validate::VISITOR_CURSOR, |s| as_sent(&validate::VISITOR_CURSOR, s);
}

impl Item for Domain {
    fn item_schema() -> Schema {
        rule(&validate::DOMAIN, false).into()
    }

    fn item(v: &Value) -> Result<Self, String> {
        v.as_str().ok_or_else(|| "must be a string".to_owned()).and_then(validate::domain).map(Domain)
    }
}

impl Item for AttachmentId {
    fn item_schema() -> Schema {
        rule(&validate::ATTACHMENT_ID, false).into()
    }

    fn item(v: &Value) -> Result<Self, String> {
        let s = v.as_str().ok_or_else(|| "must be a string".to_owned())?;
        validate::ATTACHMENT_ID.check(s)?;
        Ok(AttachmentId(s.to_owned()))
    }
}

/// A kind of file a site takes (`images`, `pdf`, …).
pub struct FileKindName(pub parley_domain::attachments::kinds::FileKind);

impl utoipa::PartialSchema for FileKindName {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        <Self as Item>::item_schema()
    }
}

impl utoipa::ToSchema for FileKindName {}

impl Item for FileKindName {
    fn item_schema() -> Schema {
        let names: Vec<&str> = parley_domain::attachments::kinds::FileKind::ALL.iter().map(|k| k.as_str()).collect();
        one_of(&names, false).into()
    }

    fn item(v: &Value) -> Result<Self, String> {
        let names: Vec<&str> = parley_domain::attachments::kinds::FileKind::ALL.iter().map(|k| k.as_str()).collect();
        v.as_str()
            .and_then(parley_domain::attachments::kinds::FileKind::parse)
            .map(FileKindName)
            .ok_or_else(|| format!("must be one of {}", names.join(", ")))
    }
}

/// The uploads a message names, at most ten. Read after `body`, which
/// it makes optional: a message without them needs its text, and that
/// is told with the other fields' problems.
pub struct MessageFiles(pub Vec<String>);

impl utoipa::PartialSchema for MessageFiles {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        <Self as Field>::schema()
    }
}

impl utoipa::ToSchema for MessageFiles {}

impl Field for MessageFiles {
    const SHAPE: Shape = Shape::List;

    fn schema() -> Schema {
        ArrayBuilder::new()
            .items(rule(&validate::ATTACHMENT_ID, false))
            .max_items(Some(parley_domain::model::MAX_ATTACHMENTS))
            .description(Some("Uploads of the sender's side to this conversation the message carries, at most 10; each is sent once."))
            .build()
            .into()
    }

    fn read(f: &mut Fields<'_>, name: &str) -> Result<Option<Self>, Invalid> {
        let ids = <Vec<AttachmentId> as Field>::read(f, name)?.unwrap_or_default();
        // How many it may name is the domain's rule (`Content::new`).
        if ids.is_empty() && f.json("body").is_none() {
            return Err(f.reject("body", "is required without attachment_ids"));
        }
        Ok(Some(MessageFiles(ids.into_iter().map(|a| a.0).collect())))
    }
}

/// A message's text and files, as the domain takes them.
pub fn content(
    body: Option<MessageBody>,
    files: Option<MessageFiles>,
) -> Result<parley_domain::model::Content, parley_domain::DomainError> {
    parley_domain::model::Content::new(body.map(|b| b.0), files.map(|f| f.0).unwrap_or_default())
}

/// The roles' names, as the domain spells them.
fn roles() -> Vec<&'static str> {
    parley_domain::model::Role::ALL.iter().map(|r| r.as_str()).collect()
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
    role => one_of(&roles(), false);
    optional_role => one_of(&roles(), true);
    /// A record named by its id (an operator, a challenge, a message).
    record_id => id(false);
    optional_operator_id => id(true);
    /// A page URL's rule, kept whole: a webhook's address keeps its
    /// fragment, so `PageUrl`'s description would not hold. The field's
    /// description is here, since `schema_with` drops a doc comment.
    webhook_url => ObjectBuilder::from(rule(&validate::PAGE_URL, false)).description(Some(
        "http or https; its host must resolve, and not to an address inside the network (unless the service allows private targets), or the answer is 422.",
    ));
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
    /// A site's language.
    site_locale => {
        let mut values = vec!["auto"];
        values.extend(parley_domain::locale::LANGUAGES);
        ObjectBuilder::from(one_of(&values, true)).description(Some("The widget's language for every visitor, or `auto`: each visitor's browser chooses."))
    };
    /// A site's texts per language.
    site_texts => {
        let text = |max: usize| ObjectBuilder::new().schema_type(SchemaType::new(Type::String)).max_length(Some(max));
        let texts = ObjectBuilder::new()
            .schema_type(SchemaType::new(Type::Object))
            .property("title", text(validate::NAME.max_chars))
            .property("greeting", text(validate::LONG_TEXT.max_chars))
            .property("privacy_text", text(validate::LONG_TEXT.max_chars))
            .additional_properties(Some(utoipa::openapi::schema::AdditionalProperties::FreeForm(false)));
        let languages: Vec<Value> = parley_domain::locale::LANGUAGES.iter().map(|l| Value::from(*l)).collect();
        ObjectBuilder::new()
            .schema_type(SchemaType::from_iter([Type::Object, Type::Null]))
            .property_names(Some(ObjectBuilder::new().schema_type(SchemaType::new(Type::String)).enum_values(Some(languages))))
            .additional_properties(Some(texts))
            .description(Some("The widget's title, greeting and privacy text by language (`de`, `fr`, …); what a language does not give is the site's default. Replaces every language's texts; `{}` removes them."))
    };
    /// A site's business hours.
    business_hours => {
        let time = |close: bool| {
            let pattern = if close { "^(?:[01][0-9]|2[0-3]):[0-5][0-9]$|^24:00$" } else { "^(?:[01][0-9]|2[0-3]):[0-5][0-9]$" };
            ObjectBuilder::new().schema_type(SchemaType::new(Type::String)).pattern(Some(pattern))
        };
        let opening = ObjectBuilder::new()
            .schema_type(SchemaType::new(Type::Object))
            .property("day", one_of(&parley_domain::hours::Day::NAMES, false))
            .required("day")
            .property("open", time(false))
            .required("open")
            .property("close", time(true))
            .required("close")
            .additional_properties(Some(utoipa::openapi::schema::AdditionalProperties::FreeForm(false)));
        ObjectBuilder::new()
            .schema_type(SchemaType::from_iter([Type::Object, Type::Null]))
            .property("time_zone", ObjectBuilder::new().schema_type(SchemaType::new(Type::String)).description(Some("An IANA time zone such as Europe/Berlin.")))
            .property("weekly", ArrayBuilder::new().items(opening).max_items(Some(parley_domain::hours::OPENINGS_MAX)))
            .property("closed_dates", ArrayBuilder::new().items(ObjectBuilder::new().schema_type(SchemaType::new(Type::String)).format(Some(SchemaFormat::KnownFormat(KnownFormat::Date)))).max_items(Some(parley_domain::hours::CLOSED_DATES_MAX)))
            .additional_properties(Some(utoipa::openapi::schema::AdditionalProperties::FreeForm(false)))
            .description(Some("When the team is there, in the site's time zone: `time_zone` and `weekly` openings (`day`, `open`, `close` as HH:MM; close after open, up to 24:00), and `closed_dates`. Replaces the hours; `{}` removes them (always open). Outside them the widget says when the team is back, asks for an email first, and the conversation gets one automatic reply."))
    };
    /// A visitor's attributes.
    attributes => {
        use parley_domain::identity::{ATTRIBUTE_KEY_MAX, ATTRIBUTE_TEXT_MAX, ATTRIBUTES_MAX};
        let value = ObjectBuilder::new()
            .schema_type(SchemaType::from_iter([Type::String, Type::Number, Type::Boolean, Type::Null]))
            .max_length(Some(ATTRIBUTE_TEXT_MAX));
        ObjectBuilder::new()
            .schema_type(SchemaType::from_iter([Type::Object, Type::Null]))
            .additional_properties(Some(value))
            .property_names(Some(
                ObjectBuilder::new()
                    .schema_type(SchemaType::new(Type::String))
                    .min_length(Some(1))
                    .max_length(Some(ATTRIBUTE_KEY_MAX))
                    .pattern(Some("^[^\\u0000-\\u001F\\u007F-\\u009F]+$")),
            ))
            .max_properties(Some(ATTRIBUTES_MAX))
            .description(Some("Facts about the visitor that operators see: at most 50 keys of 1 to 64 characters; values are text (at most 1,000 characters), numbers, booleans, or null to remove the key."))
            .build()
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
