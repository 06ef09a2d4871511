//! Operator authentication and integer path ids.

use axum::extract::{FromRef, FromRequestParts, Path};
use axum::http::request::Parts;
use axum::http::{HeaderMap, header};
use parley_domain::auth::SignIn;
use parley_domain::model::Session;

use crate::AppState;
use crate::error::ApiError;
use crate::extract::caller::TrustedProxies;

/// The signed-in operator of a request, from `Authorization: Bearer …`.
/// A missing, malformed, expired or revoked token is 401 `unauthenticated`.
pub struct Authenticated(pub Session);

impl FromRequestParts<AppState> for Authenticated {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let token = bearer_token(&parts.headers).ok_or(parley_domain::DomainError::Unauthenticated)?;
        let mut session = state.auth.authenticate(token, SignIn::Mobile).await?;
        session.client = Some(super::caller::client_ip(parts, &TrustedProxies::from_ref(state)));
        Ok(Self(session))
    }
}

/// The token of an `Authorization: Bearer …` header.
pub fn bearer_token(headers: &HeaderMap) -> Option<&str> {
    let header = headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok());
    header
        .and_then(|h| h.split_once(' '))
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
        .map(|(_, token)| token.trim())
        .filter(|t| !t.is_empty())
}

/// A positive integer id in the last path segment named `id`. Anything
/// else cannot name a record, so it is a 404 like an unknown id.
pub struct PathId(pub i64);

impl<S: Send + Sync> FromRequestParts<S> for PathId {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        let Path(raw) =
            Path::<String>::from_request_parts(parts, state).await.map_err(|_| ApiError::Domain(parley_domain::DomainError::NotFound))?;
        match raw.parse::<i64>() {
            Ok(id) if id > 0 => Ok(Self(id)),
            _ => Err(ApiError::Domain(parley_domain::DomainError::NotFound)),
        }
    }
}

fn positive(raw: &str) -> Result<i64, ApiError> {
    match raw.parse::<i64>() {
        Ok(id) if id > 0 => Ok(id),
        _ => Err(ApiError::Domain(parley_domain::DomainError::NotFound)),
    }
}

/// Two positive integer ids in the path, such as `/webhooks/{id}/deliveries/{delivery_id}`.
pub struct PathIds(pub i64, pub i64);

impl<S: Send + Sync> FromRequestParts<S> for PathIds {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        let Path((a, b)) = Path::<(String, String)>::from_request_parts(parts, state)
            .await
            .map_err(|_| ApiError::Domain(parley_domain::DomainError::NotFound))?;
        Ok(Self(positive(&a)?, positive(&b)?))
    }
}
