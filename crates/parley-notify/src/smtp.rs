//! Email over SMTP with lettre: a plain-text and an HTML part.

use std::time::Duration;

use lettre::address::Envelope;
use lettre::message::header::{HeaderName, HeaderValue};
use lettre::message::{Mailbox, MessageBuilder, MultiPart};
use lettre::transport::smtp::client::{Certificate, Tls, TlsParameters};
use lettre::{AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};
use parley_domain::model::TenantId;
use parley_domain::verification::channels::{Email, EmailSender, Provider, SendError, SendFuture, Threading};

pub struct SmtpMailer {
    transport: AsyncSmtpTransport<Tokio1Executor>,
    from: Mailbox,
}

impl SmtpMailer {
    /// `url` is `PARLEY_SMTP_URL` (`smtps://user:pass@host:465`,
    /// `smtp://host:587?tls=required`, …), `from` is `PARLEY_MAIL_FROM`,
    /// `extra_ca` the PEM certificates of `PARLEY_EXTRA_CA_FILE`, trusted
    /// besides the usual roots.
    pub fn new(url: &str, from: &str, extra_ca: Option<&[u8]>) -> Result<Self, String> {
        // Several crates could install a TLS provider; the first one wins.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let mut builder = AsyncSmtpTransport::<Tokio1Executor>::from_url(url)
            .map_err(|e| format!("invalid SMTP URL: {e}"))?
            .timeout(Some(Duration::from_secs(15)));
        if let Some(pem) = extra_ca {
            builder = builder.tls(tls_with_roots(url, pem)?);
        }
        let transport = builder.build();
        let from = from.parse::<Mailbox>().map_err(|e| format!("invalid sender address: {e}"))?;
        Ok(Self { transport, from })
    }

    /// Connects as a send would (TLS as the URL asks, signing in with its
    /// credentials) and asks the server for a NOOP, sending nothing:
    /// `parley check`'s live test.
    pub async fn probe(&self) -> Result<(), String> {
        match self.transport.test_connection().await {
            Ok(true) => Ok(()),
            Ok(false) => Err("the server did not answer NOOP".into()),
            Err(e) => Err(format!("SMTP: {e}")),
        }
    }
}

impl EmailSender for SmtpMailer {
    fn provider(&self) -> Provider {
        Provider::Smtp
    }

    fn send(&self, _tenant: TenantId, email: Email) -> SendFuture<'_> {
        Box::pin(async move {
            let to = recipient(&email.to)?;
            // Stated, not read back from the headers: lettre cannot read a
            // quoted local part back out of its own `To` header.
            let envelope = Envelope::new(Some(self.from.email.clone()), vec![to.email.clone()])
                .map_err(|e| SendError::transient(format!("could not address the message: {e}")))?;
            let mut builder = Message::builder().to(to).envelope(envelope).subject(email.subject);
            builder = match &email.thread {
                Some(thread) => threaded(builder, &self.from, thread)?,
                None => builder.from(self.from.clone()),
            };
            let message = builder
                .multipart(MultiPart::alternative_plain_html(email.text, email.html))
                .map_err(|e| SendError::transient(format!("could not build the message: {e}")))?;
            self.transport.send(message).await.map(|_| ()).map_err(|e| {
                let reason = format!("SMTP: {e}");
                // The server's own words, without lettre's "permanent
                // error (550): " before them.
                let reply = std::error::Error::source(&e).map(|s| s.to_string()).unwrap_or_default();
                if refuses_recipient(e.status().map(u16::from), &reply) {
                    SendError::permanent(reason)
                } else {
                    SendError::transient(reason)
                }
            })
        })
    }
}

/// An email of a visitor's thread: the site's name before Parley's
/// sender address, the thread's ids, the reply address, and the one-click
/// unsubscribe of RFC 8058 (its `List-Unsubscribe-Post` is what lets a
/// mail client unsubscribe with one POST, without opening a page).
fn threaded(builder: MessageBuilder, from: &Mailbox, thread: &Threading) -> Result<MessageBuilder, SendError> {
    let angle = |id: &str| format!("<{id}>");
    let mut builder =
        builder.from(Mailbox::new(Some(thread.from_name.clone()), from.email.clone())).message_id(Some(angle(&thread.message_id)));
    if let Some(parent) = &thread.in_reply_to {
        builder = builder.in_reply_to(angle(parent));
    }
    if !thread.references.is_empty() {
        builder = builder.references(thread.references.iter().map(|r| angle(r)).collect::<Vec<_>>().join(" "));
    }
    if let Some(reply_to) = &thread.reply_to {
        let mailbox = reply_to.parse::<Mailbox>().map_err(|e| SendError::transient(format!("invalid reply address: {e}")))?;
        builder = builder.reply_to(mailbox);
    }
    // RFC 3834: written by a program, so out-of-office responders stay quiet.
    let auto_submitted = HeaderName::new_from_ascii_str("Auto-Submitted");
    let list_unsubscribe = HeaderName::new_from_ascii_str("List-Unsubscribe");
    let list_unsubscribe_post = HeaderName::new_from_ascii_str("List-Unsubscribe-Post");
    Ok(builder
        .raw_header(HeaderValue::new(auto_submitted, "auto-generated".to_owned()))
        .raw_header(HeaderValue::new(list_unsubscribe, angle(&thread.unsubscribe)))
        .raw_header(HeaderValue::new(list_unsubscribe_post, "List-Unsubscribe=One-Click".to_owned())))
}

/// The TLS mode the URL asks for (as lettre's `from_url` reads it), with
/// `pem`'s certificates trusted besides the usual roots.
fn tls_with_roots(url: &str, pem: &[u8]) -> Result<Tls, String> {
    let parsed = url::Url::parse(url).map_err(|e| format!("invalid SMTP URL: {e}"))?;
    let host = parsed.host_str().ok_or("invalid SMTP URL: no host")?.to_owned();
    let tls_param = parsed.query_pairs().find(|(k, _)| k == "tls").map(|(_, v)| v.into_owned());
    let params = || -> Result<TlsParameters, String> {
        TlsParameters::builder(host.clone())
            .add_root_certificate(Certificate::from_pem(pem).map_err(|e| format!("PARLEY_EXTRA_CA_FILE: {e}"))?)
            .build_rustls()
            .map_err(|e| format!("SMTP TLS: {e}"))
    };
    Ok(match (parsed.scheme(), tls_param.as_deref()) {
        ("smtps", _) => Tls::Wrapper(params()?),
        ("smtp", Some("required")) => Tls::Required(params()?),
        ("smtp", Some("opportunistic")) => Tls::Opportunistic(params()?),
        _ => Tls::None,
    })
}

/// The recipient as SMTP takes it. An address whose local part is not a
/// plain dot-atom (dots next to each other, which browsers' email fields
/// and Parley's rules accept) is sent quoted, as RFC 5321 allows; one that
/// cannot be written even so is refused for good.
fn recipient(address: &str) -> Result<Mailbox, SendError> {
    if let Ok(mailbox) = address.parse::<Mailbox>() {
        return Ok(mailbox);
    }
    let refused = |reason: String| SendError::permanent(format!("invalid recipient: {reason}"));
    let (local, domain) = address.rsplit_once('@').ok_or_else(|| refused("no @".into()))?;
    let quoted = format!("\"{}\"", local.replace('\\', "\\\\").replace('"', "\\\""));
    let address = lettre::Address::new(quoted, domain).map_err(|e| refused(e.to_string()))?;
    Ok(Mailbox::new(None, address))
}

/// Whether an SMTP refusal is of the recipient itself, for good: a reply
/// that refuses a mailbox (550, 551, 553, 556; RFC 5321, RFC 7504) with
/// an enhanced status code (RFC 3463) about the destination mailbox or
/// system (5.1.1, 5.1.2, 5.1.3, 5.1.6, 5.1.10, 5.2.1, and 5.4.1, which
/// Exchange gives an unknown recipient). Lettre does not say which
/// command a reply answered, and a bare 550 can as well refuse Parley's
/// own sender or a relay (RFC 5321 lists policy among its reasons), so a
/// refusal without such a code is taken as the service's problem (503,
/// and the log), never as the visitor's address.
fn refuses_recipient(code: Option<u16>, text: &str) -> bool {
    matches!(code, Some(550 | 551 | 553 | 556))
        && matches!(enhanced_code(text), Some((1, 1) | (1, 2) | (1, 3) | (1, 6) | (1, 10) | (2, 1) | (4, 1)))
}

/// The subject and detail of the reply's enhanced status code `5.S.D`,
/// read only where servers put it: as the reply text's first word
/// (RFC 2034), or as qmail's `(#5.S.D)` at its end. A code anywhere else
/// is not one: replies echo the address, and `5.1.1@example.com` in a
/// relay refusal must not make the relay's problem the visitor's.
fn enhanced_code(reply: &str) -> Option<(u16, u16)> {
    let reply = reply.trim();
    let first = reply.split_whitespace().next().unwrap_or_default();
    let qmail = reply.trim_end_matches('.').strip_suffix(')').and_then(|s| s.rsplit_once("(#")).map(|(_, code)| code);
    parse_enhanced(first).or_else(|| qmail.and_then(parse_enhanced))
}

/// `5.S.D` with one to three digits in each part and nothing else.
fn parse_enhanced(word: &str) -> Option<(u16, u16)> {
    let number =
        |part: &str| (!part.is_empty() && part.len() <= 3 && part.bytes().all(|b| b.is_ascii_digit())).then(|| part.parse().ok()).flatten();
    let mut parts = word.split('.');
    match (parts.next(), parts.next(), parts.next(), parts.next()) {
        (Some("5"), Some(subject), Some(detail), None) => Some((number(subject)?, number(detail)?)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_refusals_of_the_recipient_itself_are_for_good() {
        assert!(refuses_recipient(Some(550), "5.1.1 no such mailbox"));
        assert!(refuses_recipient(Some(553), "sorry, no mailbox here by that name. (#5.1.1)"), "qmail's form");
        assert!(refuses_recipient(Some(550), "5.4.1 Recipient address rejected: Access denied"), "Exchange's unknown recipient");
        assert!(!refuses_recipient(Some(553), "mailbox name not allowed"), "no code: it may be Parley's own sender");
        assert!(!refuses_recipient(Some(550), "relay not permitted"), "Exim's relay refusal");
        assert!(!refuses_recipient(Some(553), "sorry, that domain isn't in my list of allowed rcpthosts (#5.7.1)"));
        assert!(!refuses_recipient(Some(550), "5.7.1 relaying denied"), "policy, not the address");
        assert!(!refuses_recipient(Some(553), "5.1.7 bad sender address syntax"), "the sender, not the recipient");
        assert!(refuses_recipient(Some(550), "5.2.1 mailbox disabled"));
        assert!(refuses_recipient(Some(556), "5.1.10 recipient address has null MX"));
        for (code, text) in
            [(535, "5.7.8 authentication failed"), (530, "5.7.0 authentication required"), (552, "5.3.4 too big"), (554, "5.7.1 spam")]
        {
            assert!(!refuses_recipient(Some(code), text), "{code}");
        }
        assert!(!refuses_recipient(Some(421), "4.3.2 try later"));
        assert!(!refuses_recipient(None, "connection refused"));
    }

    #[test]
    fn an_address_echoed_in_a_refusal_is_not_its_code() {
        assert!(!refuses_recipient(Some(550), "relay not permitted for 5.1.1@example.com"));
        assert!(!refuses_recipient(Some(550), "<5.1.1@example.com>: relay access denied"));
        assert!(!refuses_recipient(Some(553), "5.7.1 <5.1.1@example.com>: sender rejected"));
        assert!(!refuses_recipient(Some(550), "no such user 5.1.1 here"), "a code in the middle is not one");
        assert!(!refuses_recipient(Some(550), "5.1.1x unknown"), "strict digits");
        assert!(!refuses_recipient(Some(550), "5.01234.1 unknown"));
        assert!(refuses_recipient(Some(550), "  5.1.1   <ann@example.com>: Recipient address rejected"));
        assert!(refuses_recipient(Some(553), "sorry, no mailbox here by that name. (#5.1.1)."));
    }

    #[test]
    fn an_address_that_needs_quoting_is_quoted() {
        assert_eq!(recipient("ann@example.com").unwrap().to_string(), "ann@example.com");
        let quoted = recipient("a..b@example.com").expect("sent quoted");
        assert_eq!(quoted.email.to_string(), "\"a..b\"@example.com");
        assert!(recipient("no at sign").unwrap_err().permanent);
    }
}
