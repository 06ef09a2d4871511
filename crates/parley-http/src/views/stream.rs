//! The events of the two live streams, as the document states them: one
//! schema per event (`event`, `data` as JSON text with its own schema,
//! `id`), so that a client generator or a validator knows every event a
//! stream can send, `reset` included.

use std::borrow::Cow;

use parley_domain::events::EventKind;
use utoipa::openapi::schema::{ObjectBuilder, OneOfBuilder, Schema, SchemaType, Type};
use utoipa::openapi::{Ref, RefOr};
use utoipa::{PartialSchema, ToSchema};

use super::mobile::OperatorEventData;
use super::widget::{WidgetConversationEventData, WidgetMessageEventData};

/// The schema of one event: its name, its `data` (JSON, of schema
/// `data`), and its `id` when it has one.
fn event(name: &str, description: &str, data: RefOr<Schema>, with_id: bool) -> RefOr<Schema> {
    let text = || ObjectBuilder::new().schema_type(SchemaType::new(Type::String));
    let mut event = ObjectBuilder::new()
        .schema_type(SchemaType::new(Type::Object))
        .description(Some(description))
        .property("event", text().enum_values(Some([name])))
        .required("event")
        .property("data", text().content_media_type("application/json").content_schema(Some(data)))
        .required("data")
        .property("id", text().description(Some("The cursor to resume from (`Last-Event-ID`).")))
        .property("retry", ObjectBuilder::new().schema_type(SchemaType::new(Type::Integer)));
    if with_id {
        event = event.required("id");
    }
    event.into()
}

fn reference<T: ToSchema>() -> RefOr<Schema> {
    Ref::from_schema_name(T::name()).into()
}

/// `reset`: the client's cursor is unknown or expired; `data` is `{}`.
fn reset() -> RefOr<Schema> {
    let empty = ObjectBuilder::new().schema_type(SchemaType::new(Type::Object)).max_properties(Some(0)).into();
    event("reset", "The cursor is unknown or expired: reload, then follow from the new cursor. The stream ends.", empty, false)
}

/// Who is typing, as a `typing` event tells it.
#[derive(serde::Serialize, ToSchema)]
pub struct TypingSender {
    /// `operator` on a visitor's stream, `visitor` on an operator's.
    #[schema(example = "operator")]
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// The operator's name, or the visitor's if it gave one.
    pub name: Option<String>,
}

/// `data` of a `typing` event: show "… is typing" for `expires_in_ms`,
/// unless another comes.
#[derive(serde::Serialize, ToSchema)]
pub struct TypingEventData {
    /// The conversation's id (operators' streams only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub conversation_id: Option<i64>,
    /// The conversation's public id.
    pub public_id: String,
    pub sender: TypingSender,
    #[schema(example = 5000)]
    pub expires_in_ms: u64,
}

impl TypingEventData {
    pub fn new(t: &parley_domain::typing::Typing, operators: bool) -> Self {
        let kind = match t.side {
            parley_domain::typing::Side::Visitor => "visitor",
            parley_domain::typing::Side::Operator => "operator",
        };
        Self {
            conversation_id: operators.then_some(t.conversation),
            public_id: t.public_id.clone(),
            sender: TypingSender { kind, name: t.name.clone() },
            expires_in_ms: u64::try_from(parley_domain::typing::SHOWN_FOR.as_millis()).unwrap_or(5000),
        }
    }
}

/// `typing`: the other side is writing. Never stored: it has no `id`,
/// and a replay after a reconnect does not bring it.
fn typing() -> RefOr<Schema> {
    event(
        "typing",
        "The other side is writing: show it for `expires_in_ms`. Not stored, never replayed; it has no `id`.",
        reference::<TypingEventData>(),
        false,
    )
}

/// An event of a visitor's stream.
pub struct WidgetStreamEvent;

impl PartialSchema for WidgetStreamEvent {
    fn schema() -> RefOr<Schema> {
        OneOfBuilder::new()
            .description(Some("One event of a visitor's stream."))
            .item(event(
                EventKind::MessageCreated.stream_name(),
                "A message of the conversation (never an operator-only one).",
                reference::<WidgetMessageEventData>(),
                true,
            ))
            .item(event(
                EventKind::ConversationUpdated.stream_name(),
                "The conversation's status or verification changed.",
                reference::<WidgetConversationEventData>(),
                true,
            ))
            .item(typing())
            .item(reset())
            .into()
    }
}

impl ToSchema for WidgetStreamEvent {
    fn name() -> Cow<'static, str> {
        Cow::Borrowed("WidgetStreamEvent")
    }

    fn schemas(schemas: &mut Vec<(String, RefOr<Schema>)>) {
        schemas.push((WidgetMessageEventData::name().into(), WidgetMessageEventData::schema()));
        <WidgetMessageEventData as ToSchema>::schemas(schemas);
        schemas.push((WidgetConversationEventData::name().into(), WidgetConversationEventData::schema()));
        <WidgetConversationEventData as ToSchema>::schemas(schemas);
        typing_schemas(schemas);
    }
}

/// An event of an operator's stream.
pub struct OperatorStreamEvent;

impl PartialSchema for OperatorStreamEvent {
    fn schema() -> RefOr<Schema> {
        let mut one_of = OneOfBuilder::new().description(Some("One event of an operator's stream."));
        for kind in EventKind::STREAM {
            let description = match kind {
                EventKind::ConversationCreated => "A visitor opened a conversation.",
                EventKind::MessageCreated => "A message, operator-only notes included.",
                _ => "The conversation's status, assignee or verification changed.",
            };
            one_of = one_of.item(event(kind.stream_name(), description, reference::<OperatorEventData>(), true));
        }
        one_of.item(typing()).item(reset()).into()
    }
}

impl ToSchema for OperatorStreamEvent {
    fn name() -> Cow<'static, str> {
        Cow::Borrowed("OperatorStreamEvent")
    }

    fn schemas(schemas: &mut Vec<(String, RefOr<Schema>)>) {
        schemas.push((OperatorEventData::name().into(), OperatorEventData::schema()));
        <OperatorEventData as ToSchema>::schemas(schemas);
        typing_schemas(schemas);
    }
}

fn typing_schemas(schemas: &mut Vec<(String, RefOr<Schema>)>) {
    schemas.push((TypingEventData::name().into(), TypingEventData::schema()));
    <TypingEventData as ToSchema>::schemas(schemas);
}
