//! The demo's outbox: what `parley demo` would have sent, kept in its own
//! database for the sandbox page. Never used by `parley serve`.

use std::sync::Arc;

use parley_domain::model::TenantId;
use parley_domain::store::OutboxMessage;
use parley_domain::verification::channels::{Email, EmailSender, Provider, SendError, SendFuture, Sms, SmsSender};
use parley_domain::{Clock, Database};

pub struct SandboxOutbox {
    db: Database,
    clock: Arc<dyn Clock>,
}

impl SandboxOutbox {
    pub fn new(db: Database, clock: Arc<dyn Clock>) -> Self {
        Self { db, clock }
    }

    fn keep(&self, tenant: TenantId, message: OutboxMessage) -> SendFuture<'_> {
        Box::pin(async move {
            self.db
                .write(move |tx| Ok(tx.insert_outbox_message(tenant, &message)?))
                .await
                .map_err(|e| SendError::transient(format!("outbox: {e}")))
        })
    }
}

impl EmailSender for SandboxOutbox {
    fn provider(&self) -> Provider {
        Provider::SandboxOutbox
    }

    fn send(&self, tenant: TenantId, email: Email) -> SendFuture<'_> {
        let message = OutboxMessage {
            channel: "email",
            recipient: email.to,
            subject: Some(email.subject),
            body: email.text,
            created_at: self.clock.now(),
        };
        self.keep(tenant, message)
    }
}

impl SmsSender for SandboxOutbox {
    fn provider(&self) -> Provider {
        Provider::SandboxOutbox
    }

    fn send(&self, tenant: TenantId, sms: Sms) -> SendFuture<'_> {
        let message = OutboxMessage { channel: "sms", recipient: sms.to, subject: None, body: sms.body, created_at: self.clock.now() };
        self.keep(tenant, message)
    }
}
