//! The widget's requests.
#![allow(dead_code)]

use parley_domain::model::MessageId;
use parley_domain::validate;
use parley_domain::widget::{OpenConversationInput, PingInput, PostMessageInput, VisitorInput};
use utoipa::{IntoParams, ToSchema};

use crate::extract::{Fields, FromFields, Invalid};

#[derive(ToSchema)]
pub struct WidgetPingRequest {
    /// The installation token.
    token: String,
    /// The page the widget runs on (absolute http(s) URL).
    #[schema(format = "uri")]
    current_url: Option<String>,
    installation_type: Option<String>,
    /// The widget's version.
    version: Option<String>,
}

impl FromFields for PingInput {
    fn from_fields(f: &mut Fields<'_>) -> Result<Self, Invalid> {
        let token = f.required("token", validate::token);
        let current_url = f.optional("current_url", validate::page_url);
        let installation_type = f.optional_text("installation_type", |s| validate::optional_text(s, validate::MAX_SHORT_TEXT_CHARS));
        let version = f.optional_text("version", |s| validate::optional_text(s, validate::MAX_SHORT_TEXT_CHARS));
        Ok(Self { token: token?, current_url: current_url?, installation_type: installation_type?, version: version? })
    }
}

#[derive(ToSchema)]
pub struct WidgetVisitorRequest {
    token: String,
    /// Visitor identifier chosen by the client: 1 to 128 printable characters.
    uuid: String,
    /// At most 255 characters.
    name: Option<String>,
    #[schema(format = Email)]
    email: Option<String>,
    /// E.164, such as `+14155550123`.
    phone: Option<String>,
    #[schema(format = "uri")]
    current_url: Option<String>,
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
    token: String,
    /// The visitor's `uuid`.
    visitor_uuid: String,
    /// The first message: 1 to 5,000 characters after trimming.
    message: String,
    /// Must be `true`.
    privacy_accepted: bool,
    /// At most 255 characters.
    subject: Option<String>,
    #[schema(format = "uri")]
    current_url: Option<String>,
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
        privacy?;
        Ok(Self { token: token?, visitor_uuid: visitor_uuid?, message: message?, subject: subject?, current_url: current_url? })
    }
}

#[derive(ToSchema)]
pub struct WidgetMessageCreateRequest {
    token: String,
    /// 1 to 5,000 characters after trimming.
    body: String,
    #[schema(format = "uri")]
    current_url: Option<String>,
}

/// A visitor message before its conversation is known from the path.
pub struct NewVisitorMessage {
    pub token: String,
    pub body: String,
    pub current_url: Option<url::Url>,
}

impl NewVisitorMessage {
    pub fn into_input(self, public_id: String) -> PostMessageInput {
        PostMessageInput { token: self.token, public_id, body: self.body, current_url: self.current_url }
    }
}

impl FromFields for NewVisitorMessage {
    fn from_fields(f: &mut Fields<'_>) -> Result<Self, Invalid> {
        let token = f.required("token", validate::token);
        let body = f.required("body", validate::message_body);
        let current_url = f.optional("current_url", validate::page_url);
        Ok(Self { token: token?, body: body?, current_url: current_url? })
    }
}

#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
pub struct MessagesQuery {
    /// The installation token.
    token: String,
    /// Only messages with a larger id (incremental polling). Without it, the latest 100.
    #[param(minimum = 0)]
    after_id: Option<i64>,
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

#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
pub struct HealthQuery {
    /// A page URL to check against the site's domains.
    current_url: Option<String>,
}

pub struct HealthParams {
    pub current_url: Option<url::Url>,
}

impl FromFields for HealthParams {
    fn from_fields(f: &mut Fields<'_>) -> Result<Self, Invalid> {
        Ok(Self { current_url: f.optional("current_url", validate::page_url)? })
    }
}

/// An `after_id` query value: a non-negative integer.
pub fn after_id(s: &str) -> Result<MessageId, String> {
    match s.parse::<i64>() {
        Ok(n) if n >= 0 => Ok(MessageId(n)),
        _ => Err("must be a non-negative integer".into()),
    }
}
