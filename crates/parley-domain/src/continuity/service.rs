//! What visitors (and their mail) ask of continuity: read markers, a
//! transcript, leaving a conversation's emails, and replies by email.

use std::sync::Arc;
use std::time::Duration;

use sha2::{Digest, Sha256};

use super::tokens::MailTokens;
use super::{TRANSCRIPT_SPACING, UNSUBSCRIBE_PATH, VisitorRead, reply_text};
use crate::clock::Clock;
use crate::error::DomainError;
use crate::limits::RateLimits;
use crate::metrics::Metrics;
use crate::model::{ConversationScope, MessageId, NewMessage};
use crate::store::Database;
use crate::widget::{Caller, WidgetService, visitor_message};

/// What the emails say about where they come from and lead back to.
#[derive(Clone, Debug)]
pub struct MailSettings {
    /// `PARLEY_VISITOR_EMAIL_DELAY`: how long an operator message waits
    /// unread before it is emailed.
    pub delay: Duration,
    /// `PARLEY_PUBLIC_URL`, where the unsubscribe link points.
    pub public_url: String,
    /// `PARLEY_INBOUND_DOMAIN`: replies go to `reply+…@` it. Without it
    /// the emails carry no reply address and say to answer on the page.
    pub inbound_domain: Option<String>,
    /// Whether an email channel is configured (SMTP, or the demo's
    /// outbox): without one nothing is emailed and transcripts are refused.
    pub mail_enabled: bool,
}

impl MailSettings {
    /// The right part of the emails' `Message-ID`s.
    pub fn message_id_domain(&self) -> String {
        if let Some(domain) = &self.inbound_domain {
            return domain.clone();
        }
        url::Url::parse(&self.public_url).ok().and_then(|u| u.host_str().map(str::to_owned)).unwrap_or_else(|| "parley.invalid".into())
    }
}

/// A raw email, as the MIME parser read it.
#[derive(Clone, Debug, Default)]
pub struct InboundMail {
    /// Without angle brackets.
    pub message_id: Option<String>,
    /// The `From` address.
    pub from: Option<String>,
    /// Every address it was delivered to: `To`, `Cc`, `Delivered-To`,
    /// `X-Original-To`, `Envelope-To`.
    pub recipients: Vec<String>,
    /// The text part, or the HTML part made text.
    pub text: String,
    /// An automatic answer (out of office, a bounce): never a visitor's.
    pub automatic: bool,
}

/// What became of an emailed reply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InboundOutcome {
    Added(MessageId),
    /// Its `Message-ID` was taken before.
    Repeated(MessageId),
    /// Answered 202 and dropped: routed nowhere, or not from the visitor.
    Dropped(&'static str),
}

#[derive(Clone)]
pub struct ContinuityService {
    db: Database,
    clock: Arc<dyn Clock>,
    widget: WidgetService,
    limits: Arc<RateLimits>,
    tokens: MailTokens,
    settings: MailSettings,
    metrics: Metrics,
}

impl ContinuityService {
    pub fn new(
        db: Database,
        clock: Arc<dyn Clock>,
        widget: WidgetService,
        limits: Arc<RateLimits>,
        tokens: MailTokens,
        settings: MailSettings,
        metrics: Metrics,
    ) -> Self {
        Self { db, clock, widget, limits, tokens, settings, metrics }
    }

    pub fn settings(&self) -> &MailSettings {
        &self.settings
    }

    pub fn tokens(&self) -> &MailTokens {
        &self.tokens
    }

    /// The visitor's widget showed the messages up to `message`: their
    /// receipts are written (operator messages not read before), and
    /// operators hear of it. Never backwards. 404 for a conversation the
    /// token does not reach, 422 for a message of another conversation.
    pub async fn mark_read(&self, caller: &Caller, token: &str, public_id: String, message: MessageId) -> Result<VisitorRead, DomainError> {
        // A write like any other widget write: under the same limit.
        let ctx = self.widget.resolve_for_write(token, caller, false).await?;
        let scope: ConversationScope = ctx.scope().into();
        let tenant = ctx.tenant.clone();
        let now = self.clock.now();
        self.db
            .write(move |tx| {
                let c = tx.conversation_by_public_id(scope, &public_id)?.ok_or(DomainError::NotFound)?;
                let read = tx
                    .mark_read_by_visitor(scope, c.id, message, now)?
                    .ok_or_else(|| DomainError::invalid("message_id", "must be a message of this conversation"))?;
                if let Some(through) = read.marked_through {
                    crate::feed::record::visitor_read(tx, &tenant, &c, through, now)?;
                }
                Ok(read)
            })
            .await
    }

    /// Queues the conversation's transcript to the visitor's verified
    /// address and answers that address: at most once an hour (429
    /// before), 422 without a verified address, 409 once the visitor left
    /// the conversation's emails or when no email channel is configured.
    /// Only a verified address: a transcript carries what the visitor
    /// wrote, and an address typed into the widget may be anyone's.
    pub async fn request_transcript(&self, caller: &Caller, token: &str, public_id: String) -> Result<String, DomainError> {
        let ctx = self.widget.resolve_for_write(token, caller, false).await?;
        if !self.settings.mail_enabled {
            return Err(DomainError::Conflict("this service sends no email"));
        }
        let scope: ConversationScope = ctx.scope().into();
        let now = self.clock.now();
        self.db
            .write(move |tx| {
                let (c, visitor) = tx.conversation_and_visitor_by_public_id(scope, &public_id)?.ok_or(DomainError::NotFound)?;
                let thread = tx.mail_thread(c.tenant_id, c.id)?;
                if thread.unsubscribed_at.is_some() {
                    return Err(DomainError::Conflict("emails of this conversation were unsubscribed"));
                }
                let Some(address) = visitor.proven_email() else {
                    return Err(DomainError::invalid("email", "verify your email address first"));
                };
                if let Some(last) = thread.transcript_at
                    && last.plus(TRANSCRIPT_SPACING) > now
                {
                    let wait = last.plus(TRANSCRIPT_SPACING).since(now).as_secs().max(1);
                    return Err(DomainError::RateLimited { retry_after_secs: wait });
                }
                tx.queue_transcript(c.tenant_id, c.id, now)?;
                Ok(address)
            })
            .await
    }

    /// The one-click unsubscribe (RFC 8058): nothing more is emailed for
    /// the token's conversation. Repeating it changes nothing; an unknown
    /// token is 404.
    pub async fn unsubscribe(&self, token: &str) -> Result<(), DomainError> {
        let conversation = self.tokens.unsubscribe_conversation(token).ok_or(DomainError::NotFound)?;
        let now = self.clock.now();
        self.db
            .write(move |tx| {
                let tenant = tx.conversation_tenant(conversation)?.ok_or(DomainError::NotFound)?;
                Ok(tx.unsubscribe(tenant, conversation, now)?)
            })
            .await
    }

    /// Whether `token` is an unsubscribe link this installation made.
    pub fn knows_unsubscribe(&self, token: &str) -> bool {
        self.tokens.unsubscribe_conversation(token).is_some()
    }

    /// An emailed reply: routed by the reply address among its recipients,
    /// checked against the visitor's address, its new text added as a
    /// visitor message (a closed conversation reopens). 422 when it has no
    /// `Message-ID` or no new text.
    pub async fn receive(&self, mail: InboundMail) -> Result<InboundOutcome, DomainError> {
        let outcome = self.receive_inner(mail).await;
        let label = match &outcome {
            Ok(InboundOutcome::Added(_)) => "added",
            Ok(InboundOutcome::Repeated(_)) => "repeated",
            Ok(InboundOutcome::Dropped(why)) => why,
            Err(_) => "refused",
        };
        self.metrics.inbound_email(label);
        outcome
    }

    async fn receive_inner(&self, mail: InboundMail) -> Result<InboundOutcome, DomainError> {
        // What is not for Parley is dropped before anything is refused: a
        // refusal makes the mail server bounce it to a sender who may be
        // forged.
        let Some(domain) = self.settings.inbound_domain.clone() else { return Ok(InboundOutcome::Dropped("unknown_token")) };
        let Some(conversation) = mail.recipients.iter().find_map(|r| self.tokens.reply_conversation(r, &domain)) else {
            return Ok(InboundOutcome::Dropped("unknown_token"));
        };
        if mail.automatic {
            return Ok(InboundOutcome::Dropped("automatic"));
        }
        let Some(message_id) = mail.message_id.filter(|m| !m.is_empty()) else {
            return Err(DomainError::invalid("message", "has no Message-ID header"));
        };
        let body = clean(&reply_text::new_text(&mail.text));
        if body.is_empty() {
            return Err(DomainError::invalid("message", "has no new text above the quoted history"));
        }
        let client_message_id = format!("email:{}", crate::ids::hex(&Sha256::digest(message_id.as_bytes())[..20]));
        let from = mail.from.unwrap_or_default();
        let now = self.clock.now();
        let limits = Arc::clone(&self.limits);
        self.db
            .write(move |tx| {
                let Some(tenant_id) = tx.conversation_tenant(conversation)? else { return Ok(InboundOutcome::Dropped("unknown_token")) };
                let tenant = tx.tenant(tenant_id)?.ok_or(DomainError::NotFound)?;
                let scope = ConversationScope { tenant: tenant_id, site: None, operator: None };
                let Some(mut c) = tx.conversation(scope, conversation)? else { return Ok(InboundOutcome::Dropped("unknown_token")) };
                let site_scope = crate::model::SiteScope { tenant: tenant_id, site: c.site_id };
                let visitor = tx.visitor(site_scope, c.visitor_id)?.ok_or(DomainError::NotFound)?;
                if !visitor.mail_address().is_some_and(|a| crate::validate::same_email(&a, &from)) {
                    return Ok(InboundOutcome::Dropped("sender_mismatch"));
                }
                let new = NewMessage { client_message_id: Some(client_message_id), ..visitor_message(&c, &visitor, body, now) };
                if let Some(earlier) = crate::activity::earlier_send(tx, scope, &new)? {
                    return Ok(InboundOutcome::Repeated(earlier.id));
                }
                limits.conversation_message(c.id)?;
                let message = crate::activity::add_message(tx, &tenant, scope, &mut c, &new)?;
                // Only an id the next email can name in its headers.
                if threadable(&message_id) {
                    tx.thread_received(tenant_id, c.id, &message_id, now)?;
                }
                Ok(InboundOutcome::Added(message.id))
            })
            .await
    }
}

/// A reply's text as a message body: control characters other than tabs
/// and line breaks dropped, lines carrying one of this service's
/// unsubscribe links dropped (whoever reads the message could otherwise
/// unsubscribe the visitor), cut at the longest message there may be.
fn clean(text: &str) -> String {
    // The path, or a token alone (a link that quoting wrapped over lines).
    let carries_link = |l: &str| l.contains(UNSUBSCRIBE_PATH) || super::tokens::mentions_token(l);
    let lines: Vec<&str> = text.lines().filter(|l| !carries_link(l)).collect();
    let kept: String =
        lines.join("\n").chars().filter(|c| !c.is_control() || *c == '\n' || *c == '\t').take(crate::validate::MAX_MESSAGE_CHARS).collect();
    kept.trim().to_owned()
}

/// A `Message-ID` as RFC 5322 writes one (`left@right`, printable ASCII,
/// no angle brackets), short enough for the `In-Reply-To` of the next
/// email to stay within a header line.
fn threadable(id: &str) -> bool {
    id.len() <= 250 && id.contains('@') && id.bytes().all(|b| b.is_ascii_graphic() && b != b'<' && b != b'>')
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_reply_keeps_no_unsubscribe_link_and_no_control_characters() {
        let text = "Thanks!\nhttps://chat.example.com/email/unsubscribe/\n42-0123456789abcdef0123456789abcdef\nBye\u{7}";
        assert_eq!(super::clean(text), "Thanks!\nBye");
        assert!(super::threadable("abc@mail.example.com"));
        assert!(!super::threadable("no at sign") && !super::threadable(&format!("{}@x", "a".repeat(300))));
    }
}
