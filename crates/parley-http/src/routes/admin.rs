//! Tenant administration (bearer token of an admin operator).

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use parley_domain::model::{InstallationId, OperatorId, SiteId};
use utoipa_axum::routes;

use super::Mount;
use super::openapi::{AdminErrors, AdminReadErrors, InviteErrors, PasswordLinkErrors};
use crate::AppState;
use crate::error::ApiError;
use crate::extract::{Authenticated, JsonBody, PathId};
use crate::requests::admin::*;
use crate::views::admin::*;

pub fn routes(api: Mount) -> Mount {
    api.routes(routes!(list_sites, create_site))
        .routes(routes!(update_site))
        .routes(routes!(list_installations, create_installation))
        .routes(routes!(update_installation))
        .routes(routes!(rotate_identity_secret))
        .routes(routes!(list_operators, create_operator))
        .routes(routes!(update_operator))
        .routes(routes!(invite_operator))
        .routes(routes!(send_password_link))
}

/// The tenant's sites.
#[utoipa::path(get, path = "/admin/sites", operation_id = "admin_list_sites", tag = "admin",
    security(("bearer" = [])), responses((status = 200, body = SiteListResponse), AdminReadErrors))]
async fn list_sites(State(s): State<AppState>, Authenticated(session): Authenticated) -> Result<Json<SiteListResponse>, ApiError> {
    let sites = s.admin.sites(&session).await?;
    Ok(Json(SiteListResponse { sites: sites.iter().map(Into::into).collect() }))
}

/// Creates a site.
#[utoipa::path(post, path = "/admin/sites", operation_id = "admin_create_site", tag = "admin",
    security(("bearer" = [])), request_body = SiteCreateRequest,
    responses((status = 201, body = SiteResponse), AdminErrors))]
async fn create_site(
    State(s): State<AppState>,
    Authenticated(session): Authenticated,
    JsonBody(input): JsonBody<SiteCreateRequest>,
) -> Result<(StatusCode, Json<SiteResponse>), ApiError> {
    let site = s.admin.create_site(&session, input.into()).await?;
    Ok((StatusCode::CREATED, Json(SiteResponse { site: (&site).into() })))
}

/// Sets the site's language, its widget texts per language and its
/// business hours.
#[utoipa::path(patch, path = "/admin/sites/{id}", operation_id = "admin_update_site", tag = "admin",
    security(("bearer" = [])), params(("id" = i64, Path, description = "Site id")), request_body = SitePatchRequest,
    responses((status = 200, body = SiteResponse), AdminErrors))]
async fn update_site(
    State(s): State<AppState>,
    Authenticated(session): Authenticated,
    PathId(id): PathId,
    JsonBody(input): JsonBody<SitePatchRequest>,
) -> Result<Json<SiteResponse>, ApiError> {
    let site = s.admin.update_site(&session, SiteId(id), input.patch()?).await?;
    Ok(Json(SiteResponse { site: (&site).into() }))
}

/// The site's installations.
#[utoipa::path(get, path = "/admin/sites/{id}/installations", operation_id = "admin_list_installations", tag = "admin",
    security(("bearer" = [])), params(("id" = i64, Path, description = "Site id")),
    responses((status = 200, body = InstallationListResponse), AdminReadErrors))]
async fn list_installations(
    State(s): State<AppState>,
    Authenticated(session): Authenticated,
    PathId(id): PathId,
) -> Result<Json<InstallationListResponse>, ApiError> {
    let (site, list) = s.admin.installations(&session, SiteId(id)).await?;
    Ok(Json(InstallationListResponse { installations: list.iter().map(|i| installation_view(&s, &site, i)).collect() }))
}

/// An installation as admins read it, with its snippet and warnings.
fn installation_view(s: &AppState, site: &parley_domain::model::Site, i: &parley_domain::model::Installation) -> AdminInstallationView {
    AdminInstallationView::new(i, s.admin.embed_snippet(i), s.widget.warnings(site, i, None))
}

/// Creates an installation and returns its embed snippet.
#[utoipa::path(post, path = "/admin/sites/{id}/installations", operation_id = "admin_create_installation", tag = "admin",
    security(("bearer" = [])), params(("id" = i64, Path, description = "Site id")), request_body = InstallationCreateRequest,
    responses((status = 201, body = InstallationCreatedResponse), AdminErrors))]
async fn create_installation(
    State(s): State<AppState>,
    Authenticated(session): Authenticated,
    PathId(id): PathId,
    JsonBody(input): JsonBody<InstallationCreateRequest>,
) -> Result<(StatusCode, Json<InstallationCreatedResponse>), ApiError> {
    let (installation, site) = s.admin.create_installation(&session, SiteId(id), input.into()).await?;
    let embed_snippet = s.admin.embed_snippet(&installation);
    let installation = installation_view(&s, &site, &installation);
    Ok((StatusCode::CREATED, Json(InstallationCreatedResponse { installation, embed_snippet })))
}

/// Enables or disables an installation, or sets whether it takes
/// identified visitors only.
#[utoipa::path(patch, path = "/admin/installations/{id}", operation_id = "admin_update_installation", tag = "admin",
    security(("bearer" = [])), params(("id" = i64, Path)), request_body = InstallationPatchRequest,
    responses((status = 200, body = InstallationResponse), AdminErrors))]
async fn update_installation(
    State(s): State<AppState>,
    Authenticated(session): Authenticated,
    PathId(id): PathId,
    JsonBody(input): JsonBody<InstallationPatchRequest>,
) -> Result<Json<InstallationResponse>, ApiError> {
    let (installation, site) = s.admin.update_installation(&session, InstallationId(id), input.patch()?).await?;
    Ok(Json(InstallationResponse { installation: installation_view(&s, &site, &installation) }))
}

/// Makes a new identity secret and shows it, this once. The secret it
/// replaces keeps checking signatures for 24 hours.
#[utoipa::path(post, path = "/admin/installations/{id}/identity-secret", operation_id = "admin_rotate_identity_secret", tag = "admin",
    security(("bearer" = [])), params(("id" = i64, Path)),
    responses((status = 200, body = IdentitySecretResponse), AdminReadErrors))]
async fn rotate_identity_secret(
    State(s): State<AppState>,
    Authenticated(session): Authenticated,
    PathId(id): PathId,
) -> Result<Json<IdentitySecretResponse>, ApiError> {
    let (installation, site, identity_secret) = s.admin.rotate_identity_secret(&session, InstallationId(id), None).await?;
    Ok(Json(IdentitySecretResponse { installation: installation_view(&s, &site, &installation), identity_secret }))
}

/// The tenant's operators.
#[utoipa::path(get, path = "/admin/operators", operation_id = "admin_list_operators", tag = "admin",
    security(("bearer" = [])), responses((status = 200, body = OperatorListResponse), AdminReadErrors))]
async fn list_operators(State(s): State<AppState>, Authenticated(session): Authenticated) -> Result<Json<OperatorListResponse>, ApiError> {
    let list = s.admin.operators(&session).await?;
    Ok(Json(OperatorListResponse { operators: list.iter().map(Into::into).collect() }))
}

/// Creates an operator.
#[utoipa::path(post, path = "/admin/operators", operation_id = "admin_create_operator", tag = "admin",
    security(("bearer" = [])), request_body = OperatorCreateRequest,
    responses((status = 201, body = OperatorResponse), AdminErrors))]
async fn create_operator(
    State(s): State<AppState>,
    Authenticated(session): Authenticated,
    JsonBody(input): JsonBody<OperatorCreateRequest>,
) -> Result<(StatusCode, Json<OperatorResponse>), ApiError> {
    let operator = s.admin.create_operator(&session, input.into()).await?;
    Ok((StatusCode::CREATED, Json(OperatorResponse { operator: (&operator).into() })))
}

/// Changes an operator: name, password, role, sites, or `active`.
/// Disabling it or changing its password revokes all its tokens.
#[utoipa::path(patch, path = "/admin/operators/{id}", operation_id = "admin_update_operator", tag = "admin",
    security(("bearer" = [])), params(("id" = i64, Path)), request_body = OperatorPatchRequest,
    responses((status = 200, body = OperatorResponse), AdminErrors))]
async fn update_operator(
    State(s): State<AppState>,
    Authenticated(session): Authenticated,
    PathId(id): PathId,
    JsonBody(input): JsonBody<OperatorPatchRequest>,
) -> Result<Json<OperatorResponse>, ApiError> {
    let operator = s.admin.update_operator(&session, OperatorId(id), input.into()).await?;
    Ok(Json(OperatorResponse { operator: (&operator).into() }))
}

/// Invites an operator by email: it is made without a password, and the
/// email carries a link (valid 72 hours, once) to choose one. The answer
/// says whether the email left; when not, send a link again.
#[utoipa::path(post, path = "/admin/operators/invite", operation_id = "admin_invite_operator", tag = "admin",
    security(("bearer" = [])), request_body = OperatorInviteRequest,
    responses((status = 201, body = OperatorInvitedResponse), InviteErrors))]
async fn invite_operator(
    State(s): State<AppState>,
    Authenticated(session): Authenticated,
    JsonBody(input): JsonBody<OperatorInviteRequest>,
) -> Result<(StatusCode, Json<OperatorInvitedResponse>), ApiError> {
    let (operator, link) = s.invitations.invite(&session, input.into()).await?;
    Ok((StatusCode::CREATED, Json(OperatorInvitedResponse { operator: (&operator).into(), password_link: (&link).into() })))
}

/// Emails the operator a new link to choose its password (an invitation
/// not taken up is sent again this way). Its earlier links stop working;
/// its password works until it chooses another. A disabled operator is 409.
#[utoipa::path(post, path = "/admin/operators/{id}/password-link", operation_id = "admin_send_password_link", tag = "admin",
    security(("bearer" = [])), params(("id" = i64, Path)),
    responses((status = 202, body = PasswordLinkResponse), PasswordLinkErrors))]
async fn send_password_link(
    State(s): State<AppState>,
    Authenticated(session): Authenticated,
    PathId(id): PathId,
) -> Result<(StatusCode, Json<PasswordLinkResponse>), ApiError> {
    let link = s.invitations.send_link(&session, OperatorId(id)).await?;
    Ok((StatusCode::ACCEPTED, Json(PasswordLinkResponse { password_link: (&link).into() })))
}
