//! What a web app request that fails gets: a page, never JSON. Status and
//! message come from the API's one mapping (`ApiError`), so both say the
//! same thing about the same failure.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use parley_domain::DomainError;

use super::{layout, next};
use crate::error::ApiError;

#[derive(Debug)]
pub enum PageError {
    /// No live session: the sign-in page, then back to the page given
    /// (a path checked by `next`).
    SignIn(Option<String>),
    /// The form's anti-forgery token is missing or wrong, or the browser
    /// says the request came from another site.
    Forged,
    Api(ApiError),
}

impl From<DomainError> for PageError {
    fn from(e: DomainError) -> Self {
        match e {
            DomainError::Unauthenticated => Self::SignIn(None),
            other => Self::Api(ApiError::Domain(other)),
        }
    }
}

impl From<ApiError> for PageError {
    fn from(e: ApiError) -> Self {
        match e {
            ApiError::Domain(d) => d.into(),
            other => Self::Api(other),
        }
    }
}

impl IntoResponse for PageError {
    fn into_response(self) -> Response {
        match self {
            Self::SignIn(back) => Redirect::to(&next::sign_in_url(back.as_deref())).into_response(),
            Self::Forged => layout::message(
                StatusCode::FORBIDDEN,
                "This form cannot be accepted",
                "It came from another site, or the page was open from an earlier session. Go back, reload the page and try again.",
            ),
            Self::Api(e) => {
                let answer = e.answer();
                let mut response = layout::message(answer.status, "Something went wrong", &answer.message);
                if let Some(secs) = answer.retry_after {
                    response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(secs));
                }
                response
            }
        }
    }
}
