//! What the operator apps see.

use parley_domain::inbox::PageMeta;
use parley_domain::model::{ConversationDetails, Message, Operator, Session};
use serde::Serialize;
use utoipa::ToSchema;

use super::widget::{MessageView, SenderView, TenantView};
use super::{DateTime, at};

#[derive(Serialize, ToSchema)]
pub struct UserView {
    pub id: i64,
    pub email: String,
    pub name: String,
    /// `admin` or `agent`.
    pub role: &'static str,
    pub active: bool,
    /// Sites whose conversations the operator sees (all sites for an admin).
    pub site_ids: Vec<i64>,
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
        }
    }
}

#[derive(Serialize, ToSchema)]
pub struct MobileLoginResponse {
    /// Opaque bearer token, shown once.
    pub token: String,
    #[schema(example = "Bearer")]
    pub token_type: &'static str,
    pub expires_at: DateTime,
    pub user: UserView,
    pub tenant: TenantView,
}

#[derive(Serialize, ToSchema)]
pub struct MobileMeResponse {
    pub user: UserView,
    pub tenant: TenantView,
}

impl From<&Session> for MobileMeResponse {
    fn from(s: &Session) -> Self {
        Self { user: (&s.operator).into(), tenant: (&s.tenant).into() }
    }
}

#[derive(Serialize, ToSchema)]
pub struct ConversationVisitorView {
    pub uuid: String,
    pub name: Option<String>,
    pub email: Option<String>,
    pub phone: Option<String>,
    pub verified: bool,
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
    pub status: &'static str,
    pub subject: Option<String>,
    pub visitor: ConversationVisitorView,
    pub assignee: Option<AssigneeView>,
    pub site: ConversationSiteView,
    pub last_message_at: DateTime,
    pub verified: bool,
    pub created_at: DateTime,
}

impl From<&ConversationDetails> for MobileConversationView {
    fn from(d: &ConversationDetails) -> Self {
        let c = &d.conversation;
        let v = &d.visitor;
        Self {
            id: c.id.0,
            public_id: c.public_id.clone(),
            status: c.status.as_str(),
            subject: c.subject.clone(),
            visitor: ConversationVisitorView {
                uuid: v.uuid.clone(),
                name: v.profile.name.clone(),
                email: v.profile.email.clone(),
                phone: v.profile.phone.clone(),
                verified: v.verified_at.is_some(),
            },
            assignee: d.assignee.as_ref().map(|a| AssigneeView { id: a.id.0, name: a.name.clone(), email: a.email.clone() }),
            site: ConversationSiteView { id: d.site.id.0, name: d.site.name.clone() },
            last_message_at: at(c.last_message_at),
            verified: c.verified_at.is_some(),
            created_at: at(c.created_at),
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

#[derive(Serialize, ToSchema)]
pub struct MobileConversationListResponse {
    /// Most recent activity first.
    pub conversations: Vec<MobileConversationView>,
    pub meta: PageMetaView,
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
}

impl From<&Message> for OperatorMessageView {
    fn from(m: &Message) -> Self {
        let MessageView { id, body, created_at, sender } = m.into();
        Self { id, body, created_at, sender, internal: m.internal }
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
