//! The operator mobile API's requests.

use parley_domain::auth::LoginInput;
use parley_domain::feed::Cursor;
use parley_domain::inbox::PageRequest;
use parley_domain::model::{OperatorId, StatusFilter};
use utoipa::ToSchema;

use super::schema;
use super::values::{AfterId, Bounded};
use crate::extract::FromFields;

#[derive(ToSchema, FromFields)]
pub struct MobileLoginRequest {
    email: schema::Email,
    password: schema::Password,
    /// Shown in the operator's list of sessions; at most 255 characters.
    device_name: Option<schema::Name>,
    /// The `device_id` this device's last successful sign-in answered.
    /// A sign-in that carries a valid one is judged by its own failed
    /// attempts only, so failures for this email from elsewhere do not
    /// lock this device out. One that is not valid (expired, another
    /// account's) counts as none.
    device_id: Option<schema::Token>,
}

impl From<MobileLoginRequest> for LoginInput {
    fn from(r: MobileLoginRequest) -> Self {
        Self { email: r.email.0, password: r.password.0, device_name: r.device_name.map(|n| n.0), device_mark: r.device_id.map(|d| d.0) }
    }
}

/// The inbox's query: a page and a status filter.
#[derive(FromFields)]
#[fields(query)]
pub struct ConversationListParams {
    /// From 1; default 1.
    pub page: Option<PageNumber>,
    /// 1 to 100; default 20.
    pub per_page: Option<PerPage>,
    /// `unassigned`, `assigned`, `closed`, `open` (unassigned or assigned), or `mine` (assigned to the caller); all when absent.
    pub status: Option<StatusFilter>,
}

impl ConversationListParams {
    pub fn page(&self) -> PageRequest {
        page_request(self.page, self.per_page)
    }

    pub fn status(&self) -> StatusFilter {
        self.status.unwrap_or(StatusFilter::All)
    }
}

/// A page number: from 1.
pub type PageNumber = Bounded<1, 1_000_000>;
/// A page's size: 1 to 100.
pub type PerPage = Bounded<1, 100>;

/// A plain listing query: `page` and `per_page`.
#[derive(FromFields)]
#[fields(query)]
pub struct PageParams {
    /// From 1; default 1.
    pub page: Option<PageNumber>,
    /// 1 to 100; default 20.
    pub per_page: Option<PerPage>,
}

impl PageParams {
    pub fn page(&self) -> PageRequest {
        page_request(self.page, self.per_page)
    }
}

#[derive(FromFields)]
#[fields(query)]
pub struct SearchParams {
    /// What to look for (see `SEARCH_TEXT`).
    pub q: schema::SearchText,
    /// From 1; default 1.
    pub page: Option<PageNumber>,
    /// 1 to 100; default 20.
    pub per_page: Option<PerPage>,
}

impl SearchParams {
    pub fn page(&self) -> PageRequest {
        page_request(self.page, self.per_page)
    }
}

/// A page request, with the defaults of what was left out.
fn page_request(page: Option<PageNumber>, per_page: Option<PerPage>) -> PageRequest {
    PageRequest { page: page.map_or(1, |p| p.0), per_page: per_page.map_or(20, |p| p.0) }
}

/// The longest an operator's catch-up may be held, in seconds: a proxy in
/// front must wait longer for an answer (deploy/).
pub const LONG_POLL_MAX_WAIT: u32 = 30;

/// The query of an operator's catch-up.
#[derive(FromFields)]
#[fields(query)]
pub struct OperatorEventsParams {
    /// A `cursor` from an earlier answer, an event or `meta.cursor` of the inbox. Without it, no events and the current cursor.
    pub after: Option<Cursor>,
    /// Seconds (0 to 30) to hold the request while no event has come; default 0.
    pub wait: Option<Bounded<0, LONG_POLL_MAX_WAIT>>,
    /// With `Accept: text/event-stream`: replay every event after this cursor, then go live (a `Last-Event-ID` header wins over it; `after` is read the same way). Without either, only what happens from now.
    pub last_event_id: Option<Cursor>,
}

impl OperatorEventsParams {
    /// How long a long poll may wait: none when not said.
    pub fn wait(&self) -> std::time::Duration {
        std::time::Duration::from_secs(u64::from(self.wait.map_or(0, |w| w.0)))
    }
}

/// The query of an operator's message poll.
#[derive(FromFields)]
#[fields(query)]
pub struct OperatorMessagesParams {
    /// Only messages with a larger id. Without it, the latest 100.
    pub after_id: Option<AfterId>,
}

#[derive(ToSchema, FromFields)]
pub struct MobileMessageRequest {
    /// At most 5,000 characters, not blank; may be left out when
    /// `attachment_ids` names a file.
    pub body: Option<schema::MessageBody>,
    /// Uploads of operators to this conversation the reply carries (at
    /// most 10), each named by one message only.
    pub attachment_ids: Option<schema::MessageFiles>,
    /// The client's id for this reply: a repeat answers the first
    /// request's message and creates nothing.
    pub client_message_id: Option<schema::ClientMessageId>,
}

/// Leave the body out (or send `{}`) to take the conversation yourself.
#[derive(ToSchema, FromFields)]
pub struct AssignRequest {
    /// The operator to assign; the caller when absent.
    #[schema(schema_with = schema::optional_operator_id)]
    pub operator_id: Option<OperatorId>,
}

#[derive(ToSchema, FromFields)]
pub struct TransferRequest {
    /// The operator who takes over.
    #[schema(schema_with = schema::record_id)]
    pub operator_id: OperatorId,
    /// For operators only; never shown to the visitor. At most 5,000 characters.
    pub note: Option<schema::Note>,
}

/// What the operator changes of its own account; what is left out stays.
#[derive(ToSchema, FromFields)]
pub struct AccountPatchRequest {
    name: Option<schema::RequiredName>,
    /// Be pushed about new conversations and visitor messages in
    /// unassigned ones.
    notify_unassigned: Option<bool>,
    /// Be pushed about its own conversations.
    notify_mine: Option<bool>,
}

impl From<AccountPatchRequest> for parley_domain::account::AccountPatch {
    fn from(r: AccountPatchRequest) -> Self {
        Self { name: r.name.map(|n| n.0), notify_unassigned: r.notify_unassigned, notify_mine: r.notify_mine }
    }
}

/// A password chosen through an emailed link: an invitation, or a new
/// password an admin sent a link for.
#[derive(ToSchema, FromFields)]
pub struct PasswordSetRequest {
    /// The `token` of the link's address (`/app/password?token=…`).
    pub token: schema::Token,
    /// 10 to 1,024 characters.
    pub password: schema::NewPassword,
}

/// A new password, given with the current one.
#[derive(ToSchema, FromFields)]
pub struct PasswordChangeRequest {
    pub current_password: schema::Password,
    /// 10 to 1,024 characters.
    pub new_password: schema::NewPassword,
}
