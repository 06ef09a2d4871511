//! The operator mobile API's requests.
#![allow(dead_code)]

use parley_domain::auth::LoginInput;
use parley_domain::inbox::PageRequest;
use parley_domain::model::{MessageId, OperatorId, StatusFilter};
use parley_domain::validate;
use utoipa::{IntoParams, ToSchema};

use crate::extract::{Fields, FromFields, Invalid};

#[derive(ToSchema)]
pub struct MobileLoginRequest {
    #[schema(format = Email)]
    email: String,
    password: String,
    /// Shown in the operator's list of sessions; at most 255 characters.
    device_name: Option<String>,
}

impl FromFields for LoginInput {
    fn from_fields(f: &mut Fields<'_>) -> Result<Self, Invalid> {
        let email = f.required("email", validate::email);
        let password = f.required("password", |s| match s.chars().count() {
            0 => Err("must not be empty".into()),
            1..=1024 => Ok(s.to_owned()),
            _ => Err("must be at most 1024 characters".into()),
        });
        let device_name = f.optional_text("device_name", validate::name);
        Ok(Self { email: email?, password: password?, device_name: device_name? })
    }
}

#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ConversationListQuery {
    /// From 1; default 1.
    #[param(minimum = 1)]
    page: Option<u32>,
    /// 1 to 100; default 20.
    #[param(minimum = 1, maximum = 100)]
    per_page: Option<u32>,
    /// `unassigned`, `assigned`, `closed` or `open` (unassigned or assigned).
    status: Option<String>,
}

pub struct ConversationListParams {
    pub page: PageRequest,
    pub status: StatusFilter,
}

#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PageQuery {
    /// From 1; default 1.
    #[param(minimum = 1)]
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

/// Reads `page` and `per_page` of a listing query.
pub fn page_request(f: &mut Fields<'_>) -> Result<PageRequest, Invalid> {
    let page = f.optional("page", |s| match s.parse::<u32>() {
        Ok(n) if (1..=1_000_000).contains(&n) => Ok(n),
        _ => Err("must be an integer from 1".into()),
    });
    let per_page = f.optional("per_page", |s| match s.parse::<u32>() {
        Ok(n) if (1..=100).contains(&n) => Ok(n),
        _ => Err("must be an integer from 1 to 100".into()),
    });
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

#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
pub struct OperatorMessagesQuery {
    /// Only messages with a larger id. Without it, the latest 100.
    #[param(minimum = 0)]
    after_id: Option<i64>,
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
    /// 1 to 5,000 characters after trimming.
    body: String,
}

pub struct Reply {
    pub body: String,
}

impl FromFields for Reply {
    fn from_fields(f: &mut Fields<'_>) -> Result<Self, Invalid> {
        Ok(Self { body: f.required("body", validate::message_body)? })
    }
}

/// Leave the body out (or send `{}`) to take the conversation yourself.
#[derive(ToSchema)]
pub struct AssignRequest {
    /// The operator to assign; the caller when absent.
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
    operator_id: i64,
    /// For operators only; never shown to the visitor. At most 5,000 characters.
    note: Option<String>,
}

pub struct Transfer {
    pub operator_id: OperatorId,
    pub note: Option<String>,
}

impl FromFields for Transfer {
    fn from_fields(f: &mut Fields<'_>) -> Result<Self, Invalid> {
        let operator_id = f.required_id("operator_id");
        let note = f.optional_text("note", |s| validate::optional_text(s, validate::MAX_MESSAGE_CHARS));
        Ok(Self { operator_id: OperatorId(operator_id?), note: note? })
    }
}
