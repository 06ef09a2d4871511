//! Erasing a conversation from the web app (admins): a page that says
//! what goes and asks again, and its form. The same erasure as
//! `DELETE admin/conversations/{id}` (`parley_domain::erasure`).

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use maud::html;

use super::Conversation;
use crate::AppState;
use crate::app::admin_pages::{Admin, token_field};
use crate::app::error::PageError;
use crate::app::form::CheckedForm;
use crate::app::layout::{page, respond, visitor_name};

pub async fn ask(State(s): State<AppState>, Admin(who): Admin, Conversation(id): Conversation) -> Result<Response, PageError> {
    let details = s.inbox.get(&who.session, id).await?;
    let name = visitor_name(&details.visitor);
    let main = html! {
        h1 { "Erase the conversation with " (name) "?" }
        p { "Its messages, files, notes and emails go for good, with the visitor's details if this is their only conversation. It cannot be undone. Partners who received it by webhook keep their copies." }
        form method="post" action={ "/app/conversations/" (id.0) "/erase" } {
            (token_field(&who))
            button.danger type="submit" { "Erase for good" }
            " "
            a href={ "/app/conversations/" (id.0) } { "Keep it" }
        }
    };
    Ok(respond(StatusCode::OK, page("Erase the conversation", Some(&who), main)))
}

pub async fn erase(
    State(s): State<AppState>,
    Admin(who): Admin,
    Conversation(id): Conversation,
    _form: CheckedForm,
) -> Result<Response, PageError> {
    s.erasure.erase(&who.session, id).await?;
    Ok(Redirect::to("/app").into_response())
}
