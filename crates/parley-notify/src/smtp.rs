//! Email over SMTP with lettre: a plain-text and an HTML part.

use std::time::Duration;

use lettre::message::{Mailbox, MultiPart};
use lettre::{AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};
use parley_domain::model::TenantId;
use parley_domain::verification::channels::{Email, EmailSender, Provider, SendError, SendFuture};

pub struct SmtpMailer {
    transport: AsyncSmtpTransport<Tokio1Executor>,
    from: Mailbox,
}

impl SmtpMailer {
    /// `url` is `PARLEY_SMTP_URL` (`smtps://user:pass@host:465`,
    /// `smtp://host:587?tls=required`, …), `from` is `PARLEY_MAIL_FROM`.
    pub fn new(url: &str, from: &str) -> Result<Self, String> {
        // Several crates could install a TLS provider; the first one wins.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let transport = AsyncSmtpTransport::<Tokio1Executor>::from_url(url)
            .map_err(|e| format!("invalid SMTP URL: {e}"))?
            .timeout(Some(Duration::from_secs(15)))
            .build();
        let from = from.parse::<Mailbox>().map_err(|e| format!("invalid sender address: {e}"))?;
        Ok(Self { transport, from })
    }
}

impl EmailSender for SmtpMailer {
    fn provider(&self) -> Provider {
        Provider::Smtp
    }

    fn send(&self, _tenant: TenantId, email: Email) -> SendFuture<'_> {
        Box::pin(async move {
            let to = email.to.parse::<Mailbox>().map_err(|e| SendError::permanent(format!("invalid recipient: {e}")))?;
            let message = Message::builder()
                .from(self.from.clone())
                .to(to)
                .subject(email.subject)
                .multipart(MultiPart::alternative_plain_html(email.text, email.html))
                .map_err(|e| SendError::transient(format!("could not build the message: {e}")))?;
            self.transport.send(message).await.map(|_| ()).map_err(|e| {
                // A 5xx reply refuses the message for good (RFC 5321
                // 4.2.1); a 4xx one, or no reply, may pass another time.
                let reason = format!("SMTP: {e}");
                if e.is_permanent() { SendError::permanent(reason) } else { SendError::transient(reason) }
            })
        })
    }
}
