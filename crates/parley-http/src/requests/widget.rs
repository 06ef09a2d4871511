//! The widget's requests.

use parley_domain::DomainError;
use parley_domain::identity::Claim;
use parley_domain::widget::{OpenConversationInput, PingInput, PostMessageInput, VisitorInput};
use utoipa::ToSchema;

use super::schema;
use super::values::{Accepted, AfterId, Attributes};
use crate::extract::FromFields;

#[derive(ToSchema, FromFields)]
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

impl From<WidgetPingRequest> for PingInput {
    fn from(r: WidgetPingRequest) -> Self {
        Self {
            token: r.token.0,
            current_url: r.current_url.map(|u| u.0),
            installation_type: r.installation_type.map(|t| t.0),
            version: r.version.map(|v| v.0),
        }
    }
}

#[derive(ToSchema, FromFields)]
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
    /// The site's own id of its signed-in user, with `user_hash`.
    user_id: Option<schema::UserId>,
    /// Hex of HMAC-SHA256(identity secret, user_id), made by the site's server.
    user_hash: Option<schema::Signature>,
    /// Instead of `user_id` and `user_hash`: an HS256 token signed with the
    /// identity secret, with `sub` (the user id), `exp` (at most 24 hours
    /// ahead) and optionally `email` and `name`, which the site vouches for.
    jwt: Option<schema::Signature>,
    #[schema(schema_with = schema::attributes)]
    attributes: Option<Attributes>,
    /// The language the widget speaks (the configuration's `locale`):
    /// what the server writes to the visitor is in it.
    locale: Option<schema::Locale>,
}

impl From<WidgetVisitorRequest> for VisitorInput {
    fn from(r: WidgetVisitorRequest) -> Self {
        Self {
            token: r.token.0,
            uuid: r.uuid.0,
            name: r.name.map(|n| n.0),
            email: r.email.map(|e| e.0),
            phone: r.phone.map(|p| p.0),
            current_url: r.current_url.map(|u| u.0),
            identity: Claim { user_id: r.user_id.map(|u| u.0), user_hash: r.user_hash.map(|h| h.0), jwt: r.jwt.map(|j| j.0) },
            attributes: r.attributes.map(|a| a.0),
            locale: r.locale.map(|l| l.0),
        }
    }
}

#[derive(ToSchema, FromFields)]
pub struct WidgetConversationRequest {
    token: schema::Token,
    /// The visitor's `uuid`.
    visitor_uuid: schema::VisitorUuid,
    /// The first message: at most 5,000 characters, not blank.
    message: schema::MessageBody,
    /// Must be `true`.
    #[schema(schema_with = schema::always_true)]
    #[allow(dead_code, reason = "read to refuse anything but true; nothing else is in it")]
    privacy_accepted: Accepted,
    /// At most 255 characters; blank counts as not given.
    subject: Option<schema::Name>,
    current_url: Option<schema::PageUrl>,
    /// The client's id for the first message: a repeat answers the
    /// conversation it opened and creates nothing.
    client_message_id: Option<schema::ClientMessageId>,
    /// For an identified visitor, the same signature as on
    /// `widget/visitors` (its uuid alone is refused with 401).
    user_id: Option<schema::UserId>,
    user_hash: Option<schema::Signature>,
    jwt: Option<schema::Signature>,
}

impl From<WidgetConversationRequest> for OpenConversationInput {
    fn from(r: WidgetConversationRequest) -> Self {
        Self {
            token: r.token.0,
            visitor_uuid: r.visitor_uuid.0,
            message: r.message.0,
            subject: r.subject.map(|s| s.0),
            current_url: r.current_url.map(|u| u.0),
            client_message_id: r.client_message_id.map(|c| c.0),
            identity: Claim { user_id: r.user_id.map(|u| u.0), user_hash: r.user_hash.map(|h| h.0), jwt: r.jwt.map(|j| j.0) },
        }
    }
}

#[derive(ToSchema, FromFields)]
pub struct WidgetMessageCreateRequest {
    token: schema::Token,
    /// At most 5,000 characters, not blank; may be left out when
    /// `attachment_ids` names a file.
    body: Option<schema::MessageBody>,
    /// Uploads of this visitor to this conversation the message carries
    /// (at most 10), each named by one message only.
    attachment_ids: Option<schema::MessageFiles>,
    current_url: Option<schema::PageUrl>,
    /// The client's id for this message: a repeat answers the first
    /// request's message and creates nothing.
    client_message_id: Option<schema::ClientMessageId>,
}

impl WidgetMessageCreateRequest {
    /// The message, once its conversation is known from the path.
    pub fn into_input(self, public_id: String) -> Result<PostMessageInput, DomainError> {
        Ok(PostMessageInput {
            token: self.token.0,
            public_id,
            content: schema::content(self.body, self.attachment_ids)?,
            current_url: self.current_url.map(|u| u.0),
            client_message_id: self.client_message_id.map(|c| c.0),
        })
    }
}

/// The query of a message poll.
#[derive(FromFields)]
#[fields(query)]
pub struct MessagesParams {
    /// The installation token.
    pub token: schema::Token,
    /// Only messages with a larger id (incremental polling). Without it, the latest 100.
    pub after_id: Option<AfterId>,
}

/// The query of a conversation's stream.
#[derive(FromFields)]
#[fields(query)]
pub struct StreamParams {
    /// The installation token.
    pub token: schema::Token,
    /// Replay every event after this cursor (`cursor` of the messages, or an event's `id`), then go live. A `Last-Event-ID` header wins over it. Without either, only what happens from now.
    pub last_event_id: Option<schema::VisitorCursor>,
}

/// The query of the widget's configuration.
#[derive(FromFields)]
#[fields(query)]
pub struct ConfigParams {
    /// The browser's languages, best first, comma-separated (`navigator.languages`): the widget speaks the first it has words for, unless the site set its language.
    pub lang: Option<schema::Languages>,
}

/// The query of the installation health: an optional page URL.
#[derive(FromFields)]
#[fields(query)]
pub struct HealthParams {
    /// A page URL to check against the site's domains: an absolute http(s) URL.
    pub current_url: Option<schema::PageUrl>,
}

/// The messages the widget's panel showed.
#[derive(ToSchema, FromFields)]
pub struct WidgetReadRequest {
    pub token: schema::Token,
    /// The last message shown, of this conversation: the operator messages
    /// up to it are read. An earlier one than before changes nothing.
    #[schema(schema_with = schema::record_id)]
    pub message_id: parley_domain::model::MessageId,
}

/// Says the visitor is typing.
#[derive(ToSchema, FromFields)]
pub struct WidgetTypingRequest {
    pub token: schema::Token,
}

/// Asks for the conversation by email.
#[derive(ToSchema, FromFields)]
pub struct WidgetTranscriptRequest {
    pub token: schema::Token,
}

/// The query of a visitor's upload (its body is the file).
#[derive(FromFields)]
#[fields(query)]
pub struct UploadParams {
    /// The installation token.
    pub token: schema::Token,
}

/// The query of a link to a file: as the link has it.
#[derive(FromFields)]
#[fields(query)]
pub struct FileLinkParams {
    pub expires: super::values::Expires,
    /// The link's signature.
    pub sig: super::values::Text,
}
