//! `/app/settings`: what admins set for their team, one file per section.
//! As the integrations do, every page is a view over the same domain calls
//! as the admin API, forms are read by its own rules, a change answers a
//! redirect back to its page, and a refused form shows its page again
//! with the problem beside it.

mod audit;
mod canned;
mod operators;
mod sites;

use axum::Router;
use axum::response::Redirect;
use axum::routing::get;

use crate::AppState;

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/app/settings", get(|| async { Redirect::to(operators::HERE) }))
        .route(canned::HERE, get(canned::page).post(canned::create))
        .route("/app/settings/canned/{id}", get(canned::to_page).post(canned::update))
        .route("/app/settings/canned/{id}/delete", get(canned::to_page).post(canned::delete))
        .route("/app/canned-responses", get(canned::offered))
        .route(audit::HERE, get(audit::page))
        .route(operators::HERE, get(operators::page).post(operators::invite))
        .route(sites::HERE, get(sites::page))
        .route("/app/settings/sites/{id}", get(sites::to_page).post(sites::save))
        .route("/app/settings/sites/{id}/hours", get(sites::to_page).post(sites::save_hours))
        .route("/app/settings/operators/{id}", get(operators::to_page).post(operators::update))
        .route("/app/settings/operators/{id}/password-link", get(operators::to_page).post(operators::send_link))
}
