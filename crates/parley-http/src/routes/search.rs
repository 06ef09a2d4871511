//! Searching conversations (see `parley_domain::search`).

use axum::Json;
use axum::extract::State;
use parley_domain::search::SearchQuery;
use utoipa_axum::routes;

use super::Mount;
use super::openapi::OperatorQueryErrors;
use crate::AppState;
use crate::error::ApiError;
use crate::extract::{Authenticated, QueryFields};
use crate::requests::mobile::SearchParams;
use crate::views::mobile::{SearchMetaView, SearchResponse, SearchResultView};

pub fn routes(api: Mount) -> Mount {
    api.routes(routes!(search))
}

/// The conversations the operator sees in which one message has every
/// word of `q` (the last one may be the start of a word), or whose
/// visitor's name and email do; the latest match first, each with a
/// snippet of its latest matching message.
#[utoipa::path(get, path = "/mobile/search", operation_id = "mobile_search", tag = "mobile",
    security(("bearer" = [])), params(SearchParams),
    responses((status = 200, body = SearchResponse), OperatorQueryErrors))]
async fn search(
    State(s): State<AppState>,
    Authenticated(session): Authenticated,
    QueryFields(q): QueryFields<SearchParams>,
) -> Result<Json<SearchResponse>, ApiError> {
    let query = SearchQuery::parse(&q.q.0)?;
    let terms = query.words.clone();
    let page = q.page();
    let found = s.inbox.search(&session, query, page).await?;
    Ok(Json(SearchResponse {
        results: found.hits.iter().map(|hit| SearchResultView::new(hit, &terms)).collect(),
        terms,
        meta: SearchMetaView { page: page.page, per_page: page.per_page, more: found.more },
    }))
}
