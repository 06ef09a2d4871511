//! The records Parley keeps, as the domain sees them.
//!
//! These are plain data: storage fills them, services apply rules to them,
//! and the HTTP layer chooses which of their fields a client sees.

mod attachment;
mod conversation;
mod device;
mod installation;
mod message;
mod operator;
mod site;
mod tenant;
mod visitor;

pub use attachment::{Attachment, AttachmentFacts, AttachmentRef, FileRemoval, Finished, NewAttachment, PictureFacts};
pub use conversation::{
    Conversation, ConversationDetails, ConversationStatus, LAST_MESSAGE_CHARS, NewConversation, OperatorRef, ReadMarker, SiteRef,
    StatusFilter,
};
pub use device::{Device, NewDevice, Platform, WebPushKeys};
pub use installation::{Heartbeat, Installation, InstallationStatus, NewInstallation};
pub use message::{Content, MAX_ATTACHMENTS, Message, NewMessage, Sender, SenderKind};
pub use operator::{
    NewOperator, NewOperatorToken, NewPasswordLink, NotifyChoices, Operator, OperatorChanges, OperatorScope, PasswordLink, PersonalToken,
    Role, Session, SignInRecord, TokenKind,
};
pub use site::{NewSite, Site, SiteSettings, SiteTexts, WidgetAppearance};
pub use tenant::{NewTenant, Tenant};
pub use visitor::{NewVisitor, Proof, Visitor, VisitorProfile};

macro_rules! id_type {
    ($($(#[$doc:meta])* $name:ident),* $(,)?) => {$(
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
        #[serde(transparent)]
        pub struct $name(pub i64);
    )*};
}

/// Calls `$m!` with every record id type, so code that must do something
/// for each (the storage layer binds them as arguments) cannot miss one.
#[macro_export]
macro_rules! for_each_id {
    ($m:ident) => {
        $m!(
            TenantId,
            SiteId,
            InstallationId,
            VisitorId,
            ConversationId,
            MessageId,
            OperatorId,
            WebhookId,
            DeliveryId,
            ChallengeId,
            TokenId,
            LoginFailureId,
            DeviceId,
            PushId,
            AttachmentId,
            CannedId,
            AuditId
        );
    };
}

for_each_id!(id_type);

/// The part of a tenant a widget request may touch: one site of one tenant.
///
/// It is obtained only by resolving an installation token, and every storage
/// query that reads visitor-side data takes it, so a handler cannot read
/// another site's conversation by forgetting a check.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SiteScope {
    pub tenant: TenantId,
    pub site: SiteId,
}

/// An installation with the tenant and site it belongs to: what a public
/// token resolves to.
#[derive(Clone, Debug)]
pub struct InstallationContext {
    pub tenant: Tenant,
    pub site: Site,
    pub installation: Installation,
}

impl InstallationContext {
    pub fn scope(&self) -> SiteScope {
        SiteScope { tenant: self.tenant.id, site: self.site.id }
    }
}

/// Which conversations a query may see: those of one tenant, narrowed to
/// one site (a widget request) and/or to what one operator may see (an
/// admin sees the tenant's, an agent those of its sites). Storage puts all
/// of it into the query itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConversationScope {
    pub tenant: TenantId,
    pub site: Option<SiteId>,
    pub operator: Option<(OperatorId, Role)>,
}

impl From<SiteScope> for ConversationScope {
    fn from(s: SiteScope) -> Self {
        Self { tenant: s.tenant, site: Some(s.site), operator: None }
    }
}

impl From<OperatorScope> for ConversationScope {
    fn from(s: OperatorScope) -> Self {
        Self { tenant: s.tenant, site: None, operator: Some((s.operator, s.role)) }
    }
}
