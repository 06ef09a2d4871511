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

mod account;
mod admin_pages;
mod assets;
mod conversation;
mod cookies;
mod csrf;
mod error;
mod events;
mod form;
mod inbox;
mod integrations;
mod layout;
mod login;
mod next;
mod password;
mod path;
mod push;
mod search;
mod session;
mod settings;

use axum::Router;
use axum::routing::{any, get, post};
use tower_http::compression::CompressionLayer;

use crate::AppState;

/// What the web app's pages need of the service's settings: how cookies
/// are set, the public address they show, and the clock they judge expiry
/// by.
#[derive(Clone)]
pub struct WebAppSettings {
    /// `Secure` cookies, when `PARLEY_PUBLIC_URL` is `https://`.
    pub secure_cookies: bool,
    /// `PARLEY_PUBLIC_URL`, for the addresses pages show (the API's).
    pub public_url: String,
    /// The service's clock: pages say what has expired by it.
    pub clock: std::sync::Arc<dyn parley_domain::clock::Clock>,
    /// The installation's VAPID public key, base64url: what browsers
    /// subscribe to pushes with (`GET /app/push/key`).
    pub push_key: String,
}

pub fn routes() -> Router<AppState> {
    use conversation as c;
    // A form's address opened as a page (the address bar shows it after
    // a refused form) leads to the conversation page.
    Router::new()
        .route("/app", get(inbox::page))
        .route("/app/login", get(login::form).post(login::submit))
        .route("/app/logout", post(login::logout))
        .route("/app/password", get(password::form).post(password::submit))
        .route(account::HERE, get(account::page_view).post(account::save))
        .route("/app/account/password", get(account::to_page).post(account::change_password))
        .route("/app/account/sign-ins/{id}/end", get(account::to_page).post(account::end_sign_in))
        .route("/app/account/devices/{id}/remove", get(account::to_page).post(account::remove_device))
        .route("/app/events", get(events::stream))
        .route("/app/search", get(search::page))
        .route("/app/conversations/{id}", get(c::page))
        .route("/app/conversations/{id}/reply", get(c::show_page).post(c::reply))
        .route("/app/conversations/{id}/note", get(c::show_page).post(c::note))
        .route("/app/conversations/{id}/typing", get(c::show_page).post(c::typing))
        .route("/app/conversations/{id}/attachments", get(c::show_page).post(c::upload))
        .route("/app/conversations/{id}/take", get(c::show_page).post(c::take))
        .route("/app/conversations/{id}/hand-over", get(c::show_page).post(c::hand_over))
        .route("/app/conversations/{id}/close", get(c::show_page).post(c::close))
        .route("/app/conversations/{id}/reopen", get(c::show_page).post(c::reopen))
        .route("/app/conversations/{id}/erase", get(c::ask_erase).post(c::erase))
        .route("/app/assets/app.css", get(assets::stylesheet))
        .route("/app/assets/live.js", get(assets::live_script))
        .route("/app/assets/integrations.js", get(assets::integrations_script))
        .route("/app/assets/push.js", get(assets::push_script))
        .route("/app/sw.js", get(push::service_worker))
        .route("/app/push/key", get(push::key))
        .route("/app/push/subscribe", post(push::subscribe))
        .merge(integrations::routes())
        .merge(settings::routes())
        .route("/app/", any(not_found))
        .route("/app/{*rest}", any(not_found))
        // Set before the service's own addresses below, which answer
        // as the API does.
        .method_not_allowed_fallback(method_not_allowed)
        // The service's address opened in a browser: the app, which asks
        // to sign in first.
        .route("/", get(|| async { axum::response::Redirect::to("/app") }))
        .route("/favicon.ico", get(assets::favicon))
        // Pages are text that repeats itself (markup around every message)
        // and are fetched again at every live change: gzip keeps a long
        // conversation a few tens of kilobytes. Streams are left alone.
        .layer(CompressionLayer::new().gzip(true))
}

/// Any other address under `/app` answers a page, as the app's do.
async fn not_found() -> axum::response::Response {
    layout::message(axum::http::StatusCode::NOT_FOUND, "Not found", "There is no such page.")
}

/// A page's address asked with a method it does not take (a form's
/// address fetched with PUT, say) answers a page too, not the API's JSON.
async fn method_not_allowed() -> axum::response::Response {
    layout::message(axum::http::StatusCode::METHOD_NOT_ALLOWED, "Not allowed", "This page does not take that kind of request.")
}
