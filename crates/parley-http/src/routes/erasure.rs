//! Erasing a conversation: an admin's answer to a visitor who asks to be
//! forgotten (see `parley_domain::erasure`).

use axum::extract::State;
use axum::http::StatusCode;
use parley_domain::model::ConversationId;
use utoipa_axum::routes;

use super::Mount;
use super::openapi::AdminRemoveErrors;
use crate::AppState;
use crate::error::ApiError;
use crate::extract::{Authenticated, PathId};

pub fn routes(api: Mount) -> Mount {
    api.routes(routes!(erase_conversation))
}

/// Erases the conversation for good, with everything that records it
/// (its files included), and its visitor when no other conversation is
/// theirs (docs/operations.md lists what goes). Admins only; it cannot be
/// undone.
#[utoipa::path(delete, path = "/admin/conversations/{id}", operation_id = "admin_erase_conversation", tag = "admin",
    security(("bearer" = [])), params(("id" = i64, Path)),
    responses((status = 204, description = "Erased"), AdminRemoveErrors))]
async fn erase_conversation(
    State(s): State<AppState>,
    Authenticated(session): Authenticated,
    PathId(id): PathId,
) -> Result<StatusCode, ApiError> {
    s.erasure.erase(&session, ConversationId(id)).await?;
    Ok(StatusCode::NO_CONTENT)
}
