//! The operator mobile API's requests.
#![allow(dead_code)]

use parley_domain::auth::LoginInput;
use parley_domain::feed::Cursor;
use parley_domain::inbox::PageRequest;
use parley_domain::model::{MessageId, OperatorId, StatusFilter};
use parley_domain::validate;
use utoipa::{IntoParams, ToSchema};

use super::schema;
use crate::extract::{Fields, FromFields, Invalid};

#[derive(ToSchema)]
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

impl FromFields for LoginInput {
    fn from_fields(f: &mut Fields<'_>) -> Result<Self, Invalid> {
        let email = f.required("email", validate::email);
        let password = f.required("password", |s| validate::PASSWORD.check(s).map(|()| s.to_owned()));
        let device_name = f.optional_text("device_name", validate::name);
        let device_mark = f.optional("device_id", validate::token);
        Ok(Self { email: email?, password: password?, device_name: device_name?, device_mark: device_mark? })
    }
}

/// The inbox query: a page and a status filter.
pub struct ConversationListQuery;

impl IntoParams for ConversationListQuery {
    fn into_params(in_: impl Fn() -> Option<utoipa::openapi::path::ParameterIn>) -> Vec<utoipa::openapi::path::Parameter> {
        let mut params = PageQuery::into_params(in_);
        params.push(schema::query(
            "status",
            false,
            "`unassigned`, `assigned`, `closed`, or `open` (unassigned or assigned); all when absent.",
            schema::one_of(&["unassigned", "assigned", "closed", "open"], false),
        ));
        params
    }
}

pub struct ConversationListParams {
    pub page: PageRequest,
    pub status: StatusFilter,
}

#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PageQuery {
    /// From 1; default 1.
    #[param(minimum = 1, maximum = 1000000)]
    page: Option<u32>,
    /// 1 to 100; default 20.
    #[param(minimum = 1, maximum = 100)]
    per_page: Option<u32>,
}

/// A plain listing query: `page` and `per_page`.
pub struct PageParams {
    pub page: PageRequest,
}

impl FromFields for PageParams {
    fn from_fields(f: &mut Fields<'_>) -> Result<Self, Invalid> {
        Ok(Self { page: page_request(f)? })
    }
}

/// A query integer from `min` to `max`, written in digits.
fn bounded(s: &str, min: u32, max: u32) -> Result<u32, String> {
    match s.parse::<u32>() {
        Ok(n) if (min..=max).contains(&n) && s.bytes().all(|b| b.is_ascii_digit()) => Ok(n),
        _ => Err(format!("must be an integer from {min} to {max}")),
    }
}

/// Reads `page` and `per_page` of a listing query.
pub fn page_request(f: &mut Fields<'_>) -> Result<PageRequest, Invalid> {
    let page = f.optional("page", |s| bounded(s, 1, 1_000_000));
    let per_page = f.optional("per_page", |s| bounded(s, 1, 100));
    Ok(PageRequest { page: page?.unwrap_or(1), per_page: per_page?.unwrap_or(20) })
}

impl FromFields for ConversationListParams {
    fn from_fields(f: &mut Fields<'_>) -> Result<Self, Invalid> {
        let page = page_request(f);
        let status =
            f.optional("status", |s| StatusFilter::parse(s).ok_or_else(|| "must be one of unassigned, assigned, closed, open".to_owned()));
        Ok(Self { page: page?, status: status?.unwrap_or(StatusFilter::All) })
    }
}

/// The query of an operator's catch-up.
pub struct OperatorEventsQuery;

impl IntoParams for OperatorEventsQuery {
    fn into_params(_: impl Fn() -> Option<utoipa::openapi::path::ParameterIn>) -> Vec<utoipa::openapi::path::Parameter> {
        vec![
            schema::query(
                "after",
                false,
                "A `cursor` from an earlier answer, an event or `meta.cursor` of the inbox. Without it, no events and the current cursor.",
                schema::cursor(),
            ),
            schema::query(
                "wait",
                false,
                "Seconds (0 to 30) to hold the request while no event has come; default 0.",
                schema::bounded_integer(0, 30),
            ),
            schema::query(
                "last_event_id",
                false,
                "With `Accept: text/event-stream`: replay every event after this cursor, then go live (a `Last-Event-ID` header wins over it; `after` is read the same way). Without either, only what happens from now.",
                schema::cursor(),
            ),
        ]
    }
}

pub struct OperatorEventsParams {
    pub after: Option<Cursor>,
    pub wait: std::time::Duration,
    pub last_event_id: Option<Cursor>,
}

impl FromFields for OperatorEventsParams {
    fn from_fields(f: &mut Fields<'_>) -> Result<Self, Invalid> {
        let after = f.optional("after", super::widget::cursor);
        let wait = f.optional("wait", |s| bounded(s, 0, 30));
        let last_event_id = f.optional("last_event_id", super::widget::cursor);
        Ok(Self { after: after?, wait: std::time::Duration::from_secs(u64::from(wait?.unwrap_or(0))), last_event_id: last_event_id? })
    }
}

/// The query of an operator's message poll.
pub struct OperatorMessagesQuery;

impl IntoParams for OperatorMessagesQuery {
    fn into_params(_: impl Fn() -> Option<utoipa::openapi::path::ParameterIn>) -> Vec<utoipa::openapi::path::Parameter> {
        vec![schema::query("after_id", false, "Only messages with a larger id. Without it, the latest 100.", schema::after_id())]
    }
}

pub struct OperatorMessagesParams {
    pub after_id: Option<MessageId>,
}

impl FromFields for OperatorMessagesParams {
    fn from_fields(f: &mut Fields<'_>) -> Result<Self, Invalid> {
        Ok(Self { after_id: f.optional("after_id", super::widget::after_id)? })
    }
}

#[derive(ToSchema)]
pub struct MobileMessageRequest {
    /// At most 5,000 characters, not blank.
    body: schema::MessageBody,
    /// The client's id for this reply: a repeat answers the first
    /// request's message and creates nothing.
    client_message_id: Option<schema::ClientMessageId>,
}

pub struct Reply {
    pub body: String,
    pub client_message_id: Option<String>,
}

impl FromFields for Reply {
    fn from_fields(f: &mut Fields<'_>) -> Result<Self, Invalid> {
        let body = f.required("body", validate::message_body);
        let client_message_id = f.optional("client_message_id", validate::client_message_id);
        Ok(Self { body: body?, client_message_id: client_message_id? })
    }
}

/// Leave the body out (or send `{}`) to take the conversation yourself.
#[derive(ToSchema)]
pub struct AssignRequest {
    /// The operator to assign; the caller when absent.
    #[schema(schema_with = schema::optional_operator_id)]
    operator_id: Option<i64>,
}

pub struct Assign {
    pub operator_id: Option<OperatorId>,
}

impl FromFields for Assign {
    fn from_fields(f: &mut Fields<'_>) -> Result<Self, Invalid> {
        Ok(Self { operator_id: f.optional_id("operator_id")?.map(OperatorId) })
    }
}

#[derive(ToSchema)]
pub struct TransferRequest {
    /// The operator who takes over.
    #[schema(schema_with = schema::operator_id)]
    operator_id: i64,
    /// For operators only; never shown to the visitor. At most 5,000 characters.
    note: Option<schema::Note>,
}

pub struct Transfer {
    pub operator_id: OperatorId,
    pub note: Option<String>,
}

impl FromFields for Transfer {
    fn from_fields(f: &mut Fields<'_>) -> Result<Self, Invalid> {
        let operator_id = f.required_id("operator_id");
        let note = f.optional_text("note", |s| validate::optional(&validate::NOTE, s));
        Ok(Self { operator_id: OperatorId(operator_id?), note: note? })
    }
}
