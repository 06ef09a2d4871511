//! The signed-in operator of a web app request, from its session cookie.

use axum::extract::{FromRequestParts, OptionalFromRequestParts};
use axum::http::request::Parts;
use parley_domain::auth::SignIn;
use parley_domain::model::Session;

use super::error::PageError;
use super::{cookies, csrf};
use crate::AppState;

/// A live session; a request without one is sent to the sign-in page.
pub struct WebSession {
    pub session: Session,
    /// The session's form token (see `csrf`).
    pub csrf: String,
}

impl FromRequestParts<AppState> for WebSession {
    type Rejection = PageError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, PageError> {
        let token = cookies::read(&parts.headers, cookies::SESSION).ok_or(PageError::SignIn)?;
        let session = state.auth.authenticate(token, SignIn::Web).await?;
        Ok(Self { session, csrf: csrf::session_token(token) })
    }
}

/// For pages that differ for someone signed in (the sign-in form):
/// no session or a dead one is `None`, a failing database an error.
impl OptionalFromRequestParts<AppState> for WebSession {
    type Rejection = PageError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Option<Self>, PageError> {
        match <Self as FromRequestParts<AppState>>::from_request_parts(parts, state).await {
            Ok(session) => Ok(Some(session)),
            Err(PageError::SignIn) => Ok(None),
            Err(e) => Err(e),
        }
    }
}

impl WebSession {
    /// Refuses a form that does not carry this session's token, or that
    /// the browser says came from another site.
    pub fn check_form(&self, headers: &axum::http::HeaderMap, given: Option<&str>) -> Result<(), PageError> {
        csrf::accepts(headers, given, &self.csrf).then_some(()).ok_or(PageError::Forged)
    }
}
