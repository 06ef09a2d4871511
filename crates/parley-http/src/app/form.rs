//! Reading a submitted form (`application/x-www-form-urlencoded`).

use axum::extract::{FromRequest, Request};

use super::error::PageError;
use super::{cookies, csrf};
use crate::extract::RawBody;

/// The fields of a form, in order; of a repeated name the first counts.
pub struct Form(Vec<(String, String)>);

impl Form {
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }

    /// Every field, in order, repeated names included.
    pub fn pairs(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0.iter().map(|(k, v)| (k.as_str(), v.as_str()))
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

/// A form of a signed-in page, accepted only with the session's
/// anti-forgery token and not from another site (see `csrf`). Every
/// state-changing route of a signed-in page reads its form through this,
/// so none can forget the check. It comes last among a handler's
/// arguments: the session and the path are answered for first.
pub struct CheckedForm(pub Form);

impl<S: Send + Sync> FromRequest<S> for CheckedForm {
    type Rejection = PageError;

    async fn from_request(req: Request, state: &S) -> Result<Self, PageError> {
        // The token derives from the session cookie (no read of the
        // database); without a cookie nothing matches.
        let expected = cookies::read(req.headers(), cookies::SESSION).map(csrf::session_token).unwrap_or_default();
        let headers = req.headers().clone();
        let form = Form::from_request(req, state).await?;
        if !csrf::accepts(&headers, form.get(csrf::FIELD), &expected) {
            return Err(PageError::Forged);
        }
        Ok(Self(form))
    }
}
