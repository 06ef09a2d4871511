//! The web app's live updates: the operator stream of the mobile API
//! (`mobile/events`), the same entries and events, authenticated by the
//! session cookie instead of a bearer token. The cookie is scoped to
//! `/app`, so the stream lives here rather than under `/api`.
//!
//! A script reads it (`EventSource`), so a failure is a status, not a
//! page: 401 without a live session, which the script answers by
//! reloading into the sign-in page. A page opens it from the cursor it
//! was rendered at, so nothing that changed in between is missed; a
//! reconnect resumes from `Last-Event-ID`, as any stream does.

use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::Response;
use parley_domain::auth::SignIn;

use super::csrf;
use super::session::WebSession;
use crate::AppState;
use crate::error::ApiError;
use crate::extract::{ClientCaller, QueryFields};
use crate::requests::mobile::OperatorEventsParams;
use crate::stream;

pub async fn stream(
    State(s): State<AppState>,
    ClientCaller(caller): ClientCaller,
    headers: HeaderMap,
    QueryFields(q): QueryFields<OperatorEventsParams>,
) -> Result<Response, ApiError> {
    // Only the app's own pages follow it; CORS without credentials
    // already keeps other sites from reading it, and this holds if that
    // ever changes.
    if csrf::cross_origin(&headers) {
        return Err(parley_domain::DomainError::Forbidden("the live updates are for the web app's own pages").into());
    }
    let (who, token) = WebSession::from_headers(&headers, &s).await?;
    let slot = s.streams.take(caller.key())?;
    stream::open_operator(&s, slot, &headers, q.last_event_id.or(q.after), token, SignIn::Web, who.session.operator.scope()).await
}
