//! The fixed sets of words that responses use (statuses, roles, kinds),
//! as named schemas of the document, each listing its values from the
//! domain's own list. Fields refer to them with `value_type`, so each
//! keeps its own description.

use parley_domain::events::EventKind;
use parley_domain::health::Status;
use parley_domain::model::{ConversationStatus, InstallationStatus, Platform, Role, SenderKind};
use parley_domain::verification::Method;
use parley_domain::webhooks::DeliveryStatus;
use utoipa::openapi::RefOr;
use utoipa::openapi::schema::{ObjectBuilder, Schema, SchemaType, Type};

fn words(values: Vec<&'static str>, description: &str) -> RefOr<Schema> {
    ObjectBuilder::new().schema_type(SchemaType::new(Type::String)).enum_values(Some(values)).description(Some(description)).into()
}

macro_rules! names {
    ($($name:ident => $values:expr, $description:literal;)*) => {$(
        pub struct $name;

        impl utoipa::PartialSchema for $name {
            fn schema() -> RefOr<Schema> {
                words($values, $description)
            }
        }

        impl utoipa::ToSchema for $name {}
    )*};
}

names! {
    ConversationStatusName => ConversationStatus::ALL.iter().map(|s| s.as_str()).collect(), "A conversation's state.";
    InstallationStatusName => InstallationStatus::ALL.iter().map(|s| s.as_str()).collect(), "An installation's health.";
    SenderName => SenderKind::ALL.iter().map(|s| s.as_str()).collect(), "Who wrote a message.";
    RoleName => Role::ALL.iter().map(|r| r.as_str()).collect(), "An operator's role.";
    DeliveryStatusName => DeliveryStatus::ALL.iter().map(|s| s.as_str()).collect(), "A webhook delivery's state.";
    EventName => EventKind::WEBHOOK.iter().map(|k| k.as_str()).collect(), "A webhook event kind.";
    StreamEventName => EventKind::STREAM.iter().map(|k| k.stream_name()).collect(), "A live event's kind.";
    MethodName => Method::ALL.iter().map(|m| m.as_str()).collect(), "A verification method.";
    PlatformName => Platform::ALL.iter().map(|p| p.as_str()).collect(), "The push service a device is reached through.";
    HealthStatusName => Status::ALL.iter().map(|s| s.as_str()).collect(), "How a check or the whole service is doing.";
    TokenTypeName => vec!["Bearer"], "The kind of token.";
    VerificationStatusName => vec!["verified"], "The outcome of a confirmed verification.";
    BackendName => vec!["sqlite", "postgres"], "The database behind the service.";
    ChannelName => vec!["email", "sms"], "How a message would have been sent.";
}
