//! Reading a submitted form (`application/x-www-form-urlencoded`).

use axum::body::Bytes;
use axum::extract::{FromRequest, Request};

use super::error::PageError;
use crate::error::ApiError;

/// The fields of a form, in order; of a repeated name the first counts.
pub struct Form(Vec<(String, String)>);

impl Form {
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }
}

impl<S: Send + Sync> FromRequest<S> for Form {
    type Rejection = PageError;

    async fn from_request(req: Request, state: &S) -> Result<Self, PageError> {
        let body = Bytes::from_request(req, state).await.map_err(|e| {
            if e.status() == axum::http::StatusCode::PAYLOAD_TOO_LARGE { ApiError::PayloadTooLarge } else { ApiError::RequestTimeout }
        })?;
        Ok(Self(url::form_urlencoded::parse(&body).into_owned().collect()))
    }
}
