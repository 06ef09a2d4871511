//! What the operator apps see.

use parley_domain::feed::{Cursor, FeedItem};
use parley_domain::inbox::PageMeta;
use parley_domain::model::{ConversationDetails, Device, Message, Operator, ReadMarker, Session, Visitor};
use parley_domain::search::{SearchHit, snippet};
use serde::Serialize;
use utoipa::ToSchema;

use super::widget::{AttachmentView, MessageView, SenderView, TenantView};
use super::{DateTime, at};
use parley_domain::attachments::links::Links;

#[derive(Serialize, ToSchema)]
pub struct UserView {
    pub id: i64,
    pub email: String,
    pub name: String,
    #[schema(value_type = crate::views::names::RoleName)]
    pub role: &'static str,
    pub active: bool,
    /// Sites whose conversations the operator sees (all sites for an admin).
    pub site_ids: Vec<i64>,
    /// False for an invited operator that has not chosen its password yet.
    pub password_set: bool,
    /// What the operator chose to be pushed about (its account page).
    pub notifications: NotificationChoicesView,
}

#[derive(Serialize, ToSchema)]
pub struct NotificationChoicesView {
    /// New conversations, and visitor messages in unassigned ones.
    pub unassigned: bool,
    /// Visitor messages in its own conversations, and assignments and
    /// transfers to it.
    pub mine: bool,
}

impl From<&Operator> for UserView {
    fn from(o: &Operator) -> Self {
        Self {
            id: o.id.0,
            email: o.email.clone(),
            name: o.name.clone(),
            role: o.role.as_str(),
            active: o.active,
            site_ids: o.site_ids.iter().map(|s| s.0).collect(),
            password_set: o.password_set,
            notifications: NotificationChoicesView { unassigned: o.notify.unassigned, mine: o.notify.mine },
        }
    }
}

#[derive(Serialize, ToSchema)]
pub struct MobileLoginResponse {
    /// Opaque bearer token, shown once.
    pub token: String,
    #[schema(value_type = crate::views::names::TokenTypeName)]
    pub token_type: &'static str,
    pub expires_at: DateTime,
    pub user: UserView,
    pub tenant: TenantView,
    /// This device's mark: keep it and send it as `device_id` with the
    /// next sign-in from this device (a new one comes each time).
    pub device_id: String,
}

#[derive(Serialize, ToSchema)]
pub struct MobileMeResponse {
    pub user: UserView,
    pub tenant: TenantView,
    /// Open conversations the operator sees whose visitor wrote after the
    /// operator's read marker: the badge of its devices.
    pub unread_conversations: u64,
}

impl MobileMeResponse {
    pub fn new(s: &Session, unread_conversations: u64) -> Self {
        Self { user: (&s.operator).into(), tenant: (&s.tenant).into(), unread_conversations }
    }
}

/// The visitor as operators see it, with what a verification proved.
/// `name` is never proven; `email` and `phone` only when their
/// `*_verified` flag says so.
#[derive(Serialize, ToSchema)]
pub struct ConversationVisitorView {
    pub uuid: String,
    pub name: Option<String>,
    pub email: Option<String>,
    pub phone: Option<String>,
    /// The page the visitor was last seen on (without its fragment).
    pub current_url: Option<String>,
    /// The visitor completed a verification (see `verified_method` and
    /// `verified_target` for what it proved).
    pub verified: bool,
    /// How the visitor verified; null when not verified.
    #[schema(value_type = Option<crate::views::names::MethodName>)]
    pub verified_method: Option<&'static str>,
    /// The email address or phone number the verification proved.
    pub verified_target: Option<String>,
    /// `email` is the address a verification proved.
    pub email_verified: bool,
    /// `phone` is the number a verification proved.
    pub phone_verified: bool,
    /// Who proved `email`: `verification` (Parley's own code or link),
    /// `site` (the site's signed identity token named it), or null.
    #[schema(value_type = Option<String>, example = "site")]
    pub email_proven_by: Option<&'static str>,
    /// The page identified the visitor as one of its signed-in users
    /// with a valid signature.
    pub identified: bool,
    /// The site's own id of that user.
    pub user_id: Option<String>,
    /// What the page set about the visitor (`Parley('set')`).
    #[schema(value_type = Object)]
    pub attributes: parley_domain::identity::Attributes,
}

impl From<&Visitor> for ConversationVisitorView {
    fn from(v: &Visitor) -> Self {
        let proof = v.proof();
        Self {
            uuid: v.uuid.clone(),
            name: v.profile.name.clone(),
            email: v.profile.email.clone(),
            phone: v.profile.phone.clone(),
            current_url: v.profile.last_url.clone(),
            verified: proof.is_some(),
            verified_method: proof.as_ref().map(|p| p.method.as_str()),
            verified_target: proof.as_ref().map(|p| p.target.clone()),
            email_verified: proof.as_ref().is_some_and(|p| p.email),
            phone_verified: proof.as_ref().is_some_and(|p| p.phone),
            email_proven_by: v.email_proven_by(),
            identified: v.user_id.is_some(),
            user_id: v.user_id.clone(),
            attributes: v.attributes.clone(),
        }
    }
}

#[derive(Serialize, ToSchema)]
pub struct AssigneeView {
    pub id: i64,
    pub name: String,
    pub email: String,
}

#[derive(Serialize, ToSchema)]
pub struct ConversationSiteView {
    pub id: i64,
    pub name: String,
}

/// A conversation as operators see it.
#[derive(Serialize, ToSchema)]
pub struct MobileConversationView {
    pub id: i64,
    pub public_id: String,
    /// `unassigned`, `assigned` or `closed`.
    #[schema(value_type = crate::views::names::ConversationStatusName)]
    pub status: &'static str,
    pub subject: Option<String>,
    pub visitor: ConversationVisitorView,
    pub assignee: Option<AssigneeView>,
    pub site: ConversationSiteView,
    pub last_message_at: DateTime,
    pub verified: bool,
    pub created_at: DateTime,
    /// The visitor's messages after the reading operator's read marker
    /// (`POST mobile/conversations/{id}/read`); all of them before it
    /// reads any.
    pub unread_count: u64,
    /// The first line of the latest message the visitor or an operator
    /// wrote (not a note), at most 140 characters and `…`; null before
    /// any has text.
    pub last_message_preview: Option<String>,
    /// Since when the visitor has waited for an answer: its first message
    /// after the last operator reply; null when answered.
    pub waiting_since: Option<DateTime>,
}

/// Characters of the latest message a list shows.
const PREVIEW_CHARS: usize = 140;

impl From<&ConversationDetails> for MobileConversationView {
    fn from(d: &ConversationDetails) -> Self {
        let c = &d.conversation;
        let v = &d.visitor;
        Self {
            id: c.id.0,
            public_id: c.public_id.clone(),
            status: c.status.as_str(),
            subject: c.subject.clone(),
            visitor: v.into(),
            assignee: d.assignee.as_ref().map(|a| AssigneeView { id: a.id.0, name: a.name.clone(), email: a.email.clone() }),
            site: ConversationSiteView { id: d.site.id.0, name: d.site.name.clone() },
            last_message_at: at(c.last_message_at),
            verified: c.verified_at.is_some(),
            created_at: at(c.created_at),
            unread_count: d.unread_count,
            last_message_preview: d.preview(PREVIEW_CHARS),
            waiting_since: d.waiting_since.map(at),
        }
    }
}

/// The standard pagination block.
#[derive(Serialize, ToSchema)]
pub struct PageMetaView {
    pub current_page: u32,
    pub per_page: u32,
    pub total: u64,
    pub last_page: u64,
}

impl From<PageMeta> for PageMetaView {
    fn from(m: PageMeta) -> Self {
        Self { current_page: m.current_page, per_page: m.per_page, total: m.total, last_page: m.last_page }
    }
}

/// The inbox's pagination block, with where to follow the inbox from.
#[derive(Serialize, ToSchema)]
pub struct ConversationListMetaView {
    #[serde(flatten)]
    pub page: PageMetaView,
    /// The feed's position as of this read: `GET mobile/events?after=`
    /// (or the operator stream's `Last-Event-ID`) from here returns every
    /// change committed since, perhaps with some this list already shows.
    pub cursor: String,
}

impl ConversationListMetaView {
    pub fn new(m: PageMeta, cursor: &Cursor) -> Self {
        Self { page: m.into(), cursor: cursor.to_string() }
    }
}

#[derive(Serialize, ToSchema)]
pub struct MobileConversationListResponse {
    /// Most recent activity first.
    pub conversations: Vec<MobileConversationView>,
    pub meta: ConversationListMetaView,
}

/// What an operator's event is about: the conversation as it is now and,
/// for `message.created`, the message.
#[derive(Serialize, ToSchema)]
pub struct OperatorEventData {
    pub conversation: MobileConversationView,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<OperatorMessageView>,
}

/// One entry of the feed, as operators see it.
#[derive(Serialize, ToSchema)]
pub struct OperatorEventView {
    /// Ask `after` this to continue from here.
    pub cursor: String,
    /// `conversation.created`, `conversation.updated` or `message.created`.
    #[schema(value_type = crate::views::names::StreamEventName)]
    pub event: &'static str,
    pub occurred_at: DateTime,
    pub data: OperatorEventData,
}

impl OperatorEventView {
    pub fn new(item: &FeedItem, links: &Links) -> Self {
        Self {
            cursor: item.cursor().to_string(),
            event: item.kind.stream_name(),
            occurred_at: at(item.occurred_at),
            data: OperatorEventData::new(item, links),
        }
    }
}

impl OperatorEventData {
    pub fn new(item: &FeedItem, links: &Links) -> Self {
        Self { conversation: (&item.conversation).into(), message: item.message.as_ref().map(|m| OperatorMessageView::new(m, links)) }
    }
}

#[derive(Serialize, ToSchema)]
pub struct OperatorEventsResponse {
    /// Oldest first, at most 100.
    pub events: Vec<OperatorEventView>,
    /// Ask `after` this next: past the last event, or further when the
    /// feed holds entries this operator does not see.
    pub cursor: String,
}

#[derive(Serialize, ToSchema)]
pub struct MobileConversationResponse {
    pub conversation: MobileConversationView,
}

/// A message as operators see it: operator-only notes are marked.
#[derive(Serialize, ToSchema)]
pub struct OperatorMessageView {
    pub id: i64,
    pub body: String,
    pub created_at: DateTime,
    pub sender: SenderView,
    /// An operator-only note (a transfer note); never shown to the visitor.
    pub internal: bool,
    /// The sender's own id for the message, when its client gave one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_message_id: Option<String>,
    /// When the visitor's widget showed this operator message (its read
    /// receipt); null until then, and for other messages.
    pub read_by_visitor_at: Option<DateTime>,
    /// The files it carries.
    pub attachments: Vec<AttachmentView>,
}

impl OperatorMessageView {
    /// A message as operators see it: a system line names the operator
    /// whose action it tells, if any.
    pub fn new(m: &Message, links: &Links) -> Self {
        let MessageView { id, body, created_at, client_message_id, read_by_visitor_at, attachments, .. } = MessageView::new(m, links);
        let sender = SenderView { kind: m.sender.kind.as_str(), name: m.sender.name.clone() };
        Self { id, body, created_at, sender, internal: m.internal, client_message_id, read_by_visitor_at, attachments }
    }
}

#[derive(Serialize, ToSchema)]
pub struct MobileMessagesResponse {
    /// Oldest first, at most 100.
    pub messages: Vec<OperatorMessageView>,
}

#[derive(Serialize, ToSchema)]
pub struct MobileMessageResponse {
    pub message: OperatorMessageView,
    pub conversation: MobileConversationView,
}

/// Where the operator's reading of a conversation stands.
#[derive(Serialize, ToSchema)]
pub struct ReadMarkerResponse {
    pub conversation_id: i64,
    /// The last message read; a marker never moves backwards.
    pub message_id: i64,
    /// The visitor's messages after it.
    pub unread_count: u64,
}

impl From<&ReadMarker> for ReadMarkerResponse {
    fn from(m: &ReadMarker) -> Self {
        Self { conversation_id: m.conversation_id.0, message_id: m.message_id.0, unread_count: m.unread_count }
    }
}

/// A device notifications go to; its push token is never shown.
#[derive(Serialize, ToSchema)]
pub struct DeviceView {
    pub id: i64,
    /// `ios`, `android` or `web`.
    #[schema(value_type = crate::views::names::PlatformName)]
    pub platform: &'static str,
    pub name: Option<String>,
    pub created_at: DateTime,
    /// When a push last reached its provider; null before the first.
    pub last_push_at: Option<DateTime>,
}

impl From<&Device> for DeviceView {
    fn from(d: &Device) -> Self {
        Self {
            id: d.id.0,
            platform: d.platform.as_str(),
            name: d.name.clone(),
            created_at: at(d.created_at),
            last_push_at: d.last_push_at.map(at),
        }
    }
}

#[derive(Serialize, ToSchema)]
pub struct DeviceResponse {
    pub device: DeviceView,
}

#[derive(Serialize, ToSchema)]
pub struct DeviceListResponse {
    pub devices: Vec<DeviceView>,
}

/// One conversation a search found.
#[derive(Serialize, ToSchema)]
pub struct SearchResultView {
    pub conversation: MobileConversationView,
    /// Its latest message that matched; null when only the visitor's name
    /// or email did.
    pub message_id: Option<i64>,
    /// That message around the first word found, on one line, with `…`
    /// where it was cut.
    pub snippet: Option<String>,
}

impl SearchResultView {
    pub fn new(hit: &SearchHit, terms: &[String]) -> Self {
        Self {
            conversation: (&hit.conversation).into(),
            message_id: hit.message.as_ref().map(|m| m.id.0),
            snippet: hit.message.as_ref().map(|m| snippet(&m.body, terms)),
        }
    }
}

#[derive(Serialize, ToSchema)]
pub struct SearchMetaView {
    pub page: u32,
    pub per_page: u32,
    /// Whether a next page has results.
    pub more: bool,
}

#[derive(Serialize, ToSchema)]
pub struct SearchResponse {
    /// The latest match first: a matching message's time, or the
    /// conversation's last activity when its visitor matched.
    pub results: Vec<SearchResultView>,
    /// The words searched for, in lower case: what to highlight.
    pub terms: Vec<String>,
    pub meta: SearchMetaView,
}

/// One of the operator's sign-ins that still holds.
#[derive(Serialize, ToSchema)]
pub struct SignInView {
    pub id: i64,
    /// `login` (the mobile app), `session` (the web app) or `personal` (a
    /// personal access token).
    pub kind: &'static str,
    /// The device a mobile login named, or a personal token's name.
    pub name: Option<String>,
    pub created_at: DateTime,
    pub expires_at: DateTime,
    /// To the minute.
    pub last_used_at: Option<DateTime>,
    /// The sign-in this request was made with.
    pub current: bool,
}

impl SignInView {
    pub fn new(r: &parley_domain::model::SignInRecord, current: parley_domain::model::TokenId) -> Self {
        Self {
            id: r.id.0,
            kind: r.kind.as_str(),
            name: r.name.clone(),
            created_at: at(r.created_at),
            expires_at: at(r.expires_at),
            last_used_at: r.last_used_at.map(at),
            current: r.id == current,
        }
    }
}

#[derive(Serialize, ToSchema)]
pub struct SignInListResponse {
    pub sign_ins: Vec<SignInView>,
}

/// Whose password a link set: the email to sign in with.
#[derive(Serialize, ToSchema)]
pub struct PasswordSetResponse {
    pub email: String,
    pub name: String,
}

#[derive(Serialize, ToSchema)]
pub struct AccountResponse {
    pub user: UserView,
}
