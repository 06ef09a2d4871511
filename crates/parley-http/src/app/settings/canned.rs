//! Canned responses: the admins' page to add, change and delete them, and
//! the list the reply box offers after `/` (every operator).

use axum::Json;
use axum::extract::{RawQuery, State};
use axum::http::StatusCode;
use axum::response::Response;
use maud::html;
use parley_domain::canned::CannedPatch;
use parley_domain::model::CannedId;
use parley_domain::validate::{MESSAGE_BODY, SHORTCUT};

use crate::AppState;
use crate::app::admin_pages::{Admin, Refused, back, done_message, message, notice, problem, refusal, settings_frame, token_field, typed};
use crate::app::error::PageError;
use crate::app::form::{CheckedForm, html_pattern};
use crate::app::path::Id;
use crate::app::session::WebSession;
use crate::requests::admin::CannedResponseCreateRequest;
use crate::views::admin::{CannedResponseListResponse, CannedResponseView};

pub const HERE: &str = "/app/settings/canned";

const DONE: [(&str, &str); 3] = [
    ("added", "The canned response is added."),
    ("saved", "The canned response is saved."),
    ("deleted", "The canned response is deleted."),
];

pub async fn to_page() -> Response {
    back(HERE)
}

pub async fn page(State(s): State<AppState>, Admin(who): Admin, RawQuery(query): RawQuery) -> Result<Response, PageError> {
    render(&s, &who, StatusCode::OK, done_message(query.as_deref(), &DONE), None).await
}

/// The form refused, and which response it was for (`None`: a new one).
type Held = (Option<i64>, Refused);

async fn render(
    s: &AppState,
    who: &WebSession,
    status: StatusCode,
    done: Option<&str>,
    refused: Option<Held>,
) -> Result<Response, PageError> {
    let list = s.canned.list(&who.session).await?;
    let refused_for = |id: Option<i64>| refused.as_ref().filter(|(at, _)| *at == id).map(|(_, r)| r);
    let new = refused_for(None);
    let main = html! {
        h1 { "Canned responses" }
        (notice(done))
        p { "Texts your team answers with often. In a conversation's reply box, type " kbd { "/" } " and the start of a shortcut to put one in. Every operator can use them; admins change them here." }
        section aria-labelledby="new-canned" {
            h2 #new-canned { "Add one" }
            form.stack method="post" action=(HERE) {
                (token_field(who))
                label for="canned-shortcut" { "Shortcut" }
                input #canned-shortcut name="shortcut" required maxlength=(SHORTCUT.max_chars) pattern=[html_pattern(&SHORTCUT)] placeholder="thanks"
                    value=(typed(new, "shortcut")) aria-describedby="canned-shortcut-help canned-problem" aria-invalid=[message(new).map(|_| "true")];
                p.help #canned-shortcut-help { "Letters, digits, - and _; at most " (SHORTCUT.max_chars) "." }
                label for="canned-body" { "Text" }
                textarea #canned-body name="body" required maxlength=(MESSAGE_BODY.max_chars) rows="4" aria-invalid=[message(new).map(|_| "true")] { (typed(new, "body")) }
                (problem("canned-problem", message(new)))
                button type="submit" { "Add" }
            }
        }
        section aria-labelledby="canned-list" {
            h2 #canned-list { "Your team's" }
            @if list.is_empty() { p.empty { "None yet." } }
            @for c in &list {
                @let held = refused_for(Some(c.id.0));
                @let id = format!("canned-{}", c.id.0);
                article.canned aria-labelledby=(id) {
                    h3 #(id) { "/" (c.shortcut) }
                    form.stack method="post" action={ (HERE) "/" (c.id.0) } {
                        (token_field(who))
                        label for={ (id) "-shortcut" } { "Shortcut" }
                        input id={ (id) "-shortcut" } name="shortcut" required maxlength=(SHORTCUT.max_chars) pattern=[html_pattern(&SHORTCUT)]
                            value=(held.map_or(c.shortcut.as_str(), |r| typed(Some(r), "shortcut")));
                        label for={ (id) "-body" } { "Text" }
                        textarea id={ (id) "-body" } name="body" required maxlength=(MESSAGE_BODY.max_chars) rows="3" { (held.map_or(c.body.as_str(), |r| typed(Some(r), "body"))) }
                        (problem(&format!("{id}-problem"), message(held)))
                        button type="submit" aria-label={ "Save /" (c.shortcut) } { "Save" }
                    }
                    form method="post" action={ (HERE) "/" (c.id.0) "/delete" } {
                        (token_field(who))
                        button.danger type="submit" aria-label={ "Delete /" (c.shortcut) } { "Delete" }
                    }
                }
            }
        }
    };
    Ok(settings_frame(who, "Canned responses", HERE, status, main))
}

pub async fn create(State(s): State<AppState>, Admin(who): Admin, CheckedForm(form): CheckedForm) -> Result<Response, PageError> {
    let made = match form.read::<CannedResponseCreateRequest>() {
        Ok(input) => s.canned.create(&who.session, input.into()).await.map(drop),
        Err(e) => Err(e),
    };
    match made {
        Ok(()) => Ok(back(&format!("{HERE}?done=added"))),
        Err(e) => {
            let (status, message) = refusal(e)?;
            render(&s, &who, status, None, Some((None, Refused { message, held: form }))).await
        }
    }
}

pub async fn update(
    State(s): State<AppState>,
    Admin(who): Admin,
    Id(id): Id,
    CheckedForm(form): CheckedForm,
) -> Result<Response, PageError> {
    // The form shows both fields, so it sends both: a field left blank
    // is refused, where the API's patch would keep what was there.
    let saved = match form.read::<CannedResponseCreateRequest>() {
        Ok(input) => {
            let text = parley_domain::canned::CannedText::from(input);
            let patch = CannedPatch { shortcut: Some(text.shortcut), body: Some(text.body) };
            s.canned.update(&who.session, CannedId(id), patch).await.map(drop)
        }
        Err(e) => Err(e),
    };
    match saved {
        Ok(()) => Ok(back(&format!("{HERE}?done=saved"))),
        Err(e) => {
            let (status, message) = refusal(e)?;
            render(&s, &who, status, None, Some((Some(id), Refused { message, held: form }))).await
        }
    }
}

pub async fn delete(State(s): State<AppState>, Admin(who): Admin, Id(id): Id, _form: CheckedForm) -> Result<Response, PageError> {
    s.canned.delete(&who.session, CannedId(id)).await?;
    Ok(back(&format!("{HERE}?done=deleted")))
}

/// The responses the reply box offers (`live.js`), for every operator
/// signed in to the web app: the same list as `GET mobile/canned-responses`.
pub async fn offered(State(s): State<AppState>, who: WebSession) -> Result<Json<CannedResponseListResponse>, PageError> {
    let list = s.canned.list(&who.session).await?;
    Ok(Json(CannedResponseListResponse { canned_responses: list.iter().map(CannedResponseView::from).collect() }))
}
