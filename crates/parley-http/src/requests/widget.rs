//! The widget's requests.
#![allow(dead_code)]

use parley_domain::feed::Cursor;
use parley_domain::model::MessageId;
use parley_domain::validate::{self, PageUrl};
use parley_domain::widget::{OpenConversationInput, PingInput, PostMessageInput, VisitorInput};
use utoipa::{IntoParams, ToSchema};

use super::schema;
use crate::extract::{Fields, FromFields, Invalid};

#[derive(ToSchema)]
pub struct WidgetPingRequest {
    /// The installation token.
    token: schema::Token,
    /// The page the widget runs on: an absolute http(s) URL (its fragment
    /// is best left out).
    current_url: Option<schema::PageUrl>,
    installation_type: Option<schema::ShortText>,
    /// The widget's version.
    version: Option<schema::ShortText>,
}

impl FromFields for PingInput {
    fn from_fields(f: &mut Fields<'_>) -> Result<Self, Invalid> {
        let token = f.required("token", validate::token);
        let current_url = f.optional("current_url", validate::page_url);
        let installation_type = f.optional_text("installation_type", |s| validate::optional(&validate::SHORT_TEXT, s));
        let version = f.optional_text("version", |s| validate::optional(&validate::SHORT_TEXT, s));
        Ok(Self { token: token?, current_url: current_url?, installation_type: installation_type?, version: version? })
    }
}

#[derive(ToSchema)]
pub struct WidgetVisitorRequest {
    token: schema::Token,
    /// Visitor identifier chosen by the client: 1 to 128 printable characters.
    uuid: schema::VisitorUuid,
    /// At most 255 characters; blank counts as not given.
    name: Option<schema::Name>,
    email: Option<schema::Email>,
    /// E.164, such as `+14155550123`.
    phone: Option<schema::Phone>,
    current_url: Option<schema::PageUrl>,
}

impl FromFields for VisitorInput {
    fn from_fields(f: &mut Fields<'_>) -> Result<Self, Invalid> {
        let token = f.required("token", validate::token);
        let uuid = f.required("uuid", validate::visitor_uuid);
        let name = f.optional_text("name", validate::name);
        let email = f.optional("email", validate::email);
        let phone = f.optional("phone", validate::phone);
        let current_url = f.optional("current_url", validate::page_url);
        Ok(Self { token: token?, uuid: uuid?, name: name?, email: email?, phone: phone?, current_url: current_url? })
    }
}

#[derive(ToSchema)]
pub struct WidgetConversationRequest {
    token: schema::Token,
    /// The visitor's `uuid`.
    visitor_uuid: schema::VisitorUuid,
    /// The first message: at most 5,000 characters, not blank.
    message: schema::MessageBody,
    /// Must be `true`.
    #[schema(schema_with = schema::always_true)]
    privacy_accepted: bool,
    /// At most 255 characters; blank counts as not given.
    subject: Option<schema::Name>,
    current_url: Option<schema::PageUrl>,
    /// The client's id for the first message: a repeat answers the
    /// conversation it opened and creates nothing.
    client_message_id: Option<schema::ClientMessageId>,
}

impl FromFields for OpenConversationInput {
    fn from_fields(f: &mut Fields<'_>) -> Result<Self, Invalid> {
        let token = f.required("token", validate::token);
        let visitor_uuid = f.required("visitor_uuid", validate::visitor_uuid);
        let message = f.required("message", validate::message_body);
        let privacy = match f.required_bool("privacy_accepted") {
            Ok(true) => Ok(()),
            Ok(false) => Err(f.reject("privacy_accepted", "must be true to open a conversation")),
            Err(e) => Err(e),
        };
        let subject = f.optional_text("subject", validate::name);
        let current_url = f.optional("current_url", validate::page_url);
        let client_message_id = f.optional("client_message_id", validate::client_message_id);
        privacy?;
        Ok(Self {
            token: token?,
            visitor_uuid: visitor_uuid?,
            message: message?,
            subject: subject?,
            current_url: current_url?,
            client_message_id: client_message_id?,
        })
    }
}

#[derive(ToSchema)]
pub struct WidgetMessageCreateRequest {
    token: schema::Token,
    /// At most 5,000 characters, not blank.
    body: schema::MessageBody,
    current_url: Option<schema::PageUrl>,
    /// The client's id for this message: a repeat answers the first
    /// request's message and creates nothing.
    client_message_id: Option<schema::ClientMessageId>,
}

/// A visitor message before its conversation is known from the path.
pub struct NewVisitorMessage {
    pub token: String,
    pub body: String,
    pub current_url: Option<PageUrl>,
    pub client_message_id: Option<String>,
}

impl NewVisitorMessage {
    pub fn into_input(self, public_id: String) -> PostMessageInput {
        PostMessageInput {
            token: self.token,
            public_id,
            body: self.body,
            current_url: self.current_url,
            client_message_id: self.client_message_id,
        }
    }
}

impl FromFields for NewVisitorMessage {
    fn from_fields(f: &mut Fields<'_>) -> Result<Self, Invalid> {
        let token = f.required("token", validate::token);
        let body = f.required("body", validate::message_body);
        let current_url = f.optional("current_url", validate::page_url);
        let client_message_id = f.optional("client_message_id", validate::client_message_id);
        Ok(Self { token: token?, body: body?, current_url: current_url?, client_message_id: client_message_id? })
    }
}

/// The query of a message poll: `token` and `after_id`.
pub struct MessagesQuery;

impl IntoParams for MessagesQuery {
    fn into_params(_: impl Fn() -> Option<utoipa::openapi::path::ParameterIn>) -> Vec<utoipa::openapi::path::Parameter> {
        vec![
            schema::query("token", true, "The installation token.", schema::rule(&validate::TOKEN, false)),
            schema::query(
                "after_id",
                false,
                "Only messages with a larger id (incremental polling). Without it, the latest 100.",
                schema::after_id(),
            ),
        ]
    }
}

pub struct MessagesParams {
    pub token: String,
    pub after_id: Option<MessageId>,
}

impl FromFields for MessagesParams {
    fn from_fields(f: &mut Fields<'_>) -> Result<Self, Invalid> {
        let token = f.required("token", validate::token);
        let after_id = f.optional("after_id", after_id);
        Ok(Self { token: token?, after_id: after_id? })
    }
}

/// The query of a conversation's stream.
pub struct StreamQuery;

impl IntoParams for StreamQuery {
    fn into_params(_: impl Fn() -> Option<utoipa::openapi::path::ParameterIn>) -> Vec<utoipa::openapi::path::Parameter> {
        vec![
            schema::query("token", true, "The installation token.", schema::rule(&validate::TOKEN, false)),
            schema::query(
                "last_event_id",
                false,
                "Replay every event after this cursor (`cursor` of the messages, or an event's `id`), then go live. A `Last-Event-ID` header wins over it. Without either, only what happens from now.",
                schema::rule(&validate::VISITOR_CURSOR, false),
            ),
        ]
    }
}

pub struct StreamParams {
    pub token: String,
    /// A visitor's cursor, sealed: opened once the conversation is known.
    pub last_event_id: Option<String>,
}

impl FromFields for StreamParams {
    fn from_fields(f: &mut Fields<'_>) -> Result<Self, Invalid> {
        let token = f.required("token", validate::token);
        // Checked for its shape here, opened against its conversation by
        // the stream.
        let last_event_id = f.optional("last_event_id", |s| validate::VISITOR_CURSOR.check(s).map(|()| s.to_owned()));
        Ok(Self { token: token?, last_event_id: last_event_id? })
    }
}

/// A cursor in a query.
pub(crate) fn cursor(s: &str) -> Result<Cursor, String> {
    s.parse::<Cursor>().map_err(|_| "must be a cursor this service returned".to_owned())
}

/// The query of the installation health: an optional page URL.
pub struct HealthQuery;

impl IntoParams for HealthQuery {
    fn into_params(_: impl Fn() -> Option<utoipa::openapi::path::ParameterIn>) -> Vec<utoipa::openapi::path::Parameter> {
        vec![schema::query(
            "current_url",
            false,
            "A page URL to check against the site's domains: an absolute http(s) URL.",
            schema::rule(&validate::PAGE_URL, false),
        )]
    }
}

pub struct HealthParams {
    pub current_url: Option<PageUrl>,
}

impl FromFields for HealthParams {
    fn from_fields(f: &mut Fields<'_>) -> Result<Self, Invalid> {
        Ok(Self { current_url: f.optional("current_url", validate::page_url)? })
    }
}

/// An `after_id` query value: a non-negative integer, in digits.
pub fn after_id(s: &str) -> Result<MessageId, String> {
    match s.parse::<i64>() {
        Ok(n) if n >= 0 && s.bytes().all(|b| b.is_ascii_digit()) => Ok(MessageId(n)),
        _ => Err("must be a non-negative integer".into()),
    }
}
