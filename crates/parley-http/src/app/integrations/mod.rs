//! `/app/integrations`: the tenant's own sandbox, for admins. Partners get
//! every credential the interface names here (installation tokens and
//! snippets, personal access tokens for the mobile API, webhook secrets)
//! and test each part against their own tenant: the widget on a *try it*
//! page, webhooks with test events, verification with test messages.
//!
//! Every page is a view of the admin API's domain calls, so both say the
//! same and refuse the same. Forms post to routes of their own: a change
//! answers a redirect back to its page (a reload never repeats it); a
//! secret is shown in the answer that made it, once, never stored to be
//! shown again; a refused form shows its page again with the problem
//! beside it (422, 409).

mod channels;

mod sites;
mod tokens;
mod webhooks;

use axum::Router;
use axum::routing::get;

use crate::AppState;

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/app/integrations", get(sites::page))
        .route("/app/integrations/sites", get(crate::app::admin_pages::to_overview).post(sites::create_site))
        .route("/app/integrations/sites/{id}/installations", get(crate::app::admin_pages::to_overview).post(sites::create_installation))
        .route("/app/integrations/installations/{id}/enable", get(crate::app::admin_pages::to_overview).post(sites::enable))
        .route("/app/integrations/installations/{id}/disable", get(crate::app::admin_pages::to_overview).post(sites::disable))
        .route("/app/integrations/installations/{id}/try", get(sites::try_it))
        .route(
            "/app/integrations/installations/{id}/identity-secret",
            get(crate::app::admin_pages::to_overview).post(sites::rotate_identity),
        )
        .route(
            "/app/integrations/installations/{id}/identity-required",
            get(crate::app::admin_pages::to_overview).post(sites::set_identity_required),
        )
        .route("/app/integrations/tokens", get(tokens::page).post(tokens::create))
        .route("/app/integrations/tokens/{id}/revoke", get(tokens::to_page).post(tokens::revoke))
        .route("/app/integrations/webhooks", get(webhooks::list).post(webhooks::create))
        .route("/app/integrations/webhooks/{id}", get(webhooks::detail))
        .route("/app/integrations/webhooks/{id}/rotate", get(webhooks::to_detail).post(webhooks::rotate))
        .route("/app/integrations/webhooks/{id}/delete", get(webhooks::to_detail).post(webhooks::delete))
        .route("/app/integrations/webhooks/{id}/test", get(webhooks::to_detail).post(webhooks::send_test))
        .route("/app/integrations/webhooks/{id}/deliveries/{delivery}/redeliver", get(webhooks::to_log).post(webhooks::redeliver))
        .route("/app/integrations/verification", get(channels::page))
        .route("/app/integrations/verification/test", get(channels::to_page).post(channels::send_test))
}
