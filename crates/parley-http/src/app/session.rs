//! The signed-in operator of a web app request, from its session cookie.

use axum::extract::{FromRef, FromRequestParts, OptionalFromRequestParts};
use axum::http::HeaderMap;
use axum::http::request::Parts;
use parley_domain::DomainError;
use parley_domain::auth::SignIn;
use parley_domain::model::Session;

use super::error::PageError;
use super::{cookies, csrf, next};
use crate::AppState;
use crate::extract::{TrustedProxies, client_ip};

/// A live session; a request without one is sent to the sign-in page.
pub struct WebSession {
    pub session: Session,
    /// The session's form token (see `csrf`).
    pub csrf: String,
}

impl FromRequestParts<AppState> for WebSession {
    type Rejection = PageError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, PageError> {
        match Self::from_headers(&parts.headers, state).await {
            Ok((mut web, _)) => {
                web.session.client = Some(client_ip(parts, &TrustedProxies::from_ref(state)));
                Ok(web)
            }
            Err(DomainError::Unauthenticated) => Err(PageError::SignIn(next::of(&parts.uri))),
            Err(e) => Err(e.into()),
        }
    }
}

/// For pages that differ for someone signed in (the sign-in form):
/// no session or a dead one is `None`, a failing database an error.
impl OptionalFromRequestParts<AppState> for WebSession {
    type Rejection = PageError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Option<Self>, PageError> {
        match <Self as FromRequestParts<AppState>>::from_request_parts(parts, state).await {
            Ok(session) => Ok(Some(session)),
            Err(PageError::SignIn(_)) => Ok(None),
            Err(e) => Err(e),
        }
    }
}

impl WebSession {
    /// The session of the request's cookie, with the cookie's token (a
    /// live stream rechecks it); `Unauthenticated` without a live one.
    pub async fn from_headers(headers: &HeaderMap, state: &AppState) -> Result<(Self, String), DomainError> {
        let token = cookies::read(headers, cookies::SESSION).ok_or(DomainError::Unauthenticated)?;
        let session = state.auth.authenticate(token, SignIn::Web).await?;
        Ok((Self { session, csrf: csrf::session_token(token) }, token.to_owned()))
    }
}
