//! The operators' web app (`/app`): server-rendered pages a support team
//! works in from a browser. Pages are maud templates, checked at compile
//! time and escaped by construction; every form works without
//! JavaScript, and the scripts that make pages live are files of their
//! own (no inline script, so the strict page policy holds).
//!
//! The session is the `parley_session` cookie: a token stored only as a
//! digest, in the same table as the mobile API's bearer tokens, so logout,
//! disabling the operator and a password change end it the same way.
//! Every state-changing form carries a token derived from the session
//! (`csrf`), which a page of another site can neither read nor compute.

mod assets;
mod conversation;
mod cookies;
mod csrf;
mod error;
mod events;
mod form;
mod inbox;
mod layout;
mod login;
mod session;

use axum::Router;
use axum::routing::{get, post};

use crate::AppState;

/// How the web app's cookies are set.
#[derive(Clone, Copy, Debug)]
pub struct WebAppSettings {
    /// `Secure` cookies, when `PARLEY_PUBLIC_URL` is `https://`.
    pub secure_cookies: bool,
}

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/app", get(inbox::page))
        .route("/app/login", get(login::form).post(login::submit))
        .route("/app/logout", post(login::logout))
        .route("/app/events", get(events::stream))
        .route("/app/conversations/{id}", get(conversation::page))
        .route("/app/conversations/{id}/reply", post(conversation::reply))
        .route("/app/conversations/{id}/note", post(conversation::note))
        .route("/app/conversations/{id}/take", post(conversation::take))
        .route("/app/conversations/{id}/hand-over", post(conversation::hand_over))
        .route("/app/conversations/{id}/close", post(conversation::close))
        .route("/app/conversations/{id}/reopen", post(conversation::reopen))
        .route("/app/assets/app.css", get(assets::stylesheet))
        .route("/app/assets/live.js", get(assets::live_script))
}
