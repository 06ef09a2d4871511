//! The audit log (admin bearer token).

use axum::Json;
use axum::extract::State;
use utoipa_axum::routes;

use super::Mount;
use super::openapi::AdminReadErrors;
use crate::AppState;
use crate::error::ApiError;
use crate::extract::{Authenticated, QueryFields};
use crate::requests::mobile::PageParams;
use crate::views::admin::{AuditEntryView, AuditListResponse};

pub fn routes(api: Mount) -> Mount {
    api.routes(routes!(list_audit))
}

/// Every change admins made to the tenant, newest first: who (and from
/// which address), what and when. Erasures by retention are in it too.
#[utoipa::path(get, path = "/admin/audit", operation_id = "admin_list_audit", tag = "admin",
    security(("bearer" = [])), params(PageParams), responses((status = 200, body = AuditListResponse), AdminReadErrors))]
async fn list_audit(
    State(s): State<AppState>,
    Authenticated(session): Authenticated,
    QueryFields(q): QueryFields<PageParams>,
) -> Result<Json<AuditListResponse>, ApiError> {
    let (entries, meta) = s.audit.entries(&session, q.page()).await?;
    Ok(Json(AuditListResponse { entries: entries.iter().map(AuditEntryView::from).collect(), meta: meta.into() }))
}
