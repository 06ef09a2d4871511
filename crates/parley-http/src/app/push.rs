//! Web Push for the web app: the key browsers subscribe with, the service
//! worker that shows pushes, and the registration of a browser's
//! subscription for the session (a device like a phone's, which the
//! session's end removes).

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use super::form::CheckedForm;
use super::session::WebSession;
use crate::AppState;
use crate::error::ApiError;
use crate::requests::devices::DeviceRegisterRequest;
use crate::static_file::StaticFile;
use crate::views::mobile::DeviceResponse;

/// Shows pushes and opens their conversation when clicked. Served at
/// `/app/sw.js` so that its scope is the web app.
static SERVICE_WORKER: StaticFile = StaticFile::new(include_bytes!("../../assets/sw.js"), "text/javascript; charset=utf-8");

/// `{"public_key": …}`: the installation's VAPID key, base64url, what a
/// browser's `applicationServerKey` is. Public by nature.
pub async fn key(State(s): State<AppState>) -> Response {
    let mut response = Json(serde_json::json!({ "public_key": s.web_app.push_key })).into_response();
    response.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

/// The service worker: checked with the server on every update check, so
/// a new release's worker takes over at once.
pub async fn service_worker(headers: HeaderMap) -> Response {
    SERVICE_WORKER.respond(&headers, "no-cache")
}

/// Registers this browser's subscription (`platform=web`, `push_token`
/// its JSON) for the session, with the session's anti-forgery token.
/// Answers like `POST mobile/devices`: 201 and the device, or the API's
/// error body.
pub async fn subscribe(State(s): State<AppState>, who: WebSession, CheckedForm(form): CheckedForm) -> Response {
    let registered = match form.read::<DeviceRegisterRequest>() {
        Ok(input) => s.devices.register(&who.session, input.into()).await,
        Err(e) => Err(e),
    };
    match registered {
        Ok(device) => (StatusCode::CREATED, Json(DeviceResponse { device: (&device).into() })).into_response(),
        Err(e) => ApiError::from(e).into_response(),
    }
}
