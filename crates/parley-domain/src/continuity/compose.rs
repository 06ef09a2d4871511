//! The words and threading of a visitor's emails. The MIME is lettre's
//! (in `parley-notify`); this decides what the email says and which
//! thread it joins.

use super::tokens::MailTokens;
use super::{MailContext, MailKind, MailSettings, SentThread, UNSUBSCRIBE_PATH};
use crate::model::{Message, SenderKind, Site};
use crate::verification::channels::{Email, Threading};
use crate::verification::messages::escape;

/// The email of `kind` to `to`, and what its thread records once sent.
pub fn email(kind: MailKind, to: &str, ctx: &MailContext, settings: &MailSettings, tokens: &MailTokens) -> (Email, SentThread) {
    let site = ctx.details.site.name.as_str();
    let conversation = ctx.details.conversation.id;
    let message_id = format!("{}@{}", crate::ids::message_token(), settings.message_id_domain());
    let root_id = ctx.thread.root_id.clone().unwrap_or_else(|| message_id.clone());
    let in_reply_to = ctx.thread.last_id.clone();
    let mut references: Vec<String> = ctx.thread.root_id.iter().cloned().collect();
    if let Some(last) = &in_reply_to
        && !references.contains(last)
    {
        references.push(last.clone());
    }
    let unsubscribe = format!("{}{UNSUBSCRIBE_PATH}{}", settings.public_url, tokens.unsubscribe_token(conversation));
    let reply_to = settings.inbound_domain.as_deref().map(|d| tokens.reply_address(conversation, d));
    let page = ctx.details.visitor.profile.last_url.clone().filter(|url| on_site(url, &ctx.site));

    let subject = match kind {
        MailKind::Reply => format!("Your conversation with {site}"),
        MailKind::Transcript => format!("Transcript of your conversation with {site}"),
    };
    let intro = match kind {
        MailKind::Reply => format!("You have a new answer from {site}:"),
        MailKind::Transcript => format!("Here is your conversation with {site}, as you asked:"),
    };
    let how_to_answer = match (reply_to.is_some(), &page) {
        (true, Some(_)) => "Reply to this email to answer, or go back to the page:",
        (true, None) => "Reply to this email to answer.",
        (false, Some(_)) => "Go back to the page to answer:",
        (false, None) => "",
    };
    let footer = format!(
        "You get this email because you wrote to {site} in a chat and gave your email address. Unsubscribe from this conversation:"
    );

    let mut text = format!("{intro}\n\n");
    let mut html = format!("<p>{}</p>\n", escape(&intro));
    for m in &ctx.messages {
        let who = sender(m, site);
        let said = m.text_and_files();
        text.push_str(&format!("{who}:\n{said}\n\n"));
        html.push_str(&format!(
            "<p style=\"margin:0 0 4px 0;color:#555\"><strong>{}</strong></p>\n<p style=\"margin:0 0 16px 0;white-space:pre-wrap\">{}</p>\n",
            escape(&who),
            escape(&said)
        ));
    }
    if !how_to_answer.is_empty() {
        text.push_str(how_to_answer);
        html.push_str(&format!("<p>{}", escape(how_to_answer)));
        if let Some(page) = &page {
            text.push_str(&format!("\n{page}"));
            html.push_str(&format!(" <a href=\"{}\">{}</a>", escape(page), escape(page)));
        }
        text.push_str("\n\n");
        html.push_str("</p>\n");
    }
    text.push_str(&format!("-- \n{footer}\n{unsubscribe}\n"));
    html.push_str(&format!(
        "<p style=\"color:#777;font-size:12px\">{} <a href=\"{}\">Unsubscribe</a></p>\n",
        escape(&footer),
        escape(&unsubscribe)
    ));

    let email = Email {
        to: to.to_owned(),
        subject,
        text,
        html,
        thread: Some(Threading {
            from_name: site.to_owned(),
            message_id: message_id.clone(),
            in_reply_to,
            references,
            reply_to,
            unsubscribe,
        }),
    };
    let emailed_through = match kind {
        MailKind::Reply => ctx.messages.last().map(|m| m.id),
        MailKind::Transcript => None,
    };
    let more = kind == MailKind::Reply && ctx.messages.len() >= super::REPLY_LIMIT as usize;
    (email, SentThread { root_id, message_id, emailed_through, more })
}

/// Whether the link back may go to `url`: a page of one of the site's
/// domains. The visitor's last page is whatever its widget reported, and
/// an email must not send anyone elsewhere in the site's name; a site
/// that lists no domain gets no link.
fn on_site(url: &str, site: &Site) -> bool {
    !site.domains.is_empty() && url::Url::parse(url).ok().and_then(|u| u.host_str().map(|h| site.allows_host(h))).unwrap_or(false)
}

/// Who said it, as the visitor is shown: a system line is the site's.
fn sender(m: &Message, site: &str) -> String {
    match m.sender.kind {
        SenderKind::Visitor => "You".to_owned(),
        SenderKind::Operator => m.sender.name.clone().unwrap_or_else(|| site.to_owned()),
        SenderKind::System => site.to_owned(),
    }
}
