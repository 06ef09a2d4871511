//! Reading a submitted form (`application/x-www-form-urlencoded`).

use axum::extract::{FromRequest, Request};

use super::error::PageError;
use crate::extract::RawBody;

/// The fields of a form, in order; of a repeated name the first counts.
pub struct Form(Vec<(String, String)>);

impl Form {
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }
}

impl<S: Send + Sync> FromRequest<S> for Form {
    type Rejection = PageError;

    /// The body is read as every other body is (`RawBody`: its size limit
    /// and deadline), and a failure shows as a page.
    async fn from_request(req: Request, state: &S) -> Result<Self, PageError> {
        let RawBody(body) = RawBody::from_request(req, state).await?;
        Ok(Self(url::form_urlencoded::parse(&body).into_owned().collect()))
    }
}
