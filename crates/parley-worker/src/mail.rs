//! The visitor mail loop: it claims the emails that are due (a lease, so
//! that one instance sends each and a crashed one's are taken over when
//! the lease runs out), reads what their conversation says now on a
//! reader, lets `continuity::plan` decide, sends through the email
//! channel, and records the outcome while the lease holds. It looks
//! again when the next email falls due, at most a poll interval later.
//! On shutdown it stops claiming; the email being sent finishes within
//! the SMTP timeout.

use std::sync::Arc;
use std::time::Duration;

use parley_domain::continuity::tokens::MailTokens;
use parley_domain::continuity::{ClaimedMail, MailSettings, MailStep, plan, retry_at};
use parley_domain::metrics::Metrics;
use parley_domain::store::ops::MailFinish;
use parley_domain::verification::channels::EmailSender;
use parley_domain::{Clock, Database};
use tokio_util::sync::CancellationToken;

/// Emails claimed at once: they go one after another, so a batch must fit
/// well inside the lease.
const BATCH: u32 = 10;

pub struct MailWorker {
    pub db: Database,
    pub clock: Arc<dyn Clock>,
    /// The email channel; without one, due emails are dropped (logged).
    pub sender: Option<Arc<dyn EmailSender>>,
    pub settings: MailSettings,
    pub tokens: MailTokens,
    pub metrics: Metrics,
    /// How long a claimed batch stays with this instance.
    pub lease: Duration,
    pub poll_interval: Duration,
}

impl MailWorker {
    pub async fn run(self: Arc<Self>, shutdown: CancellationToken) {
        while !shutdown.is_cancelled() {
            let claimed = self.claim().await;
            let full = claimed.len() == BATCH as usize;
            for mail in claimed {
                if shutdown.is_cancelled() {
                    // Left leased: another instance, or the next start,
                    // takes it once the lease runs out.
                    break;
                }
                self.attempt(mail).await;
            }
            if full {
                continue;
            }
            let wait = self.idle_wait().await;
            tokio::select! {
                _ = shutdown.cancelled() => break,
                _ = tokio::time::sleep(wait) => {},
            }
        }
    }

    async fn claim(&self) -> Vec<ClaimedMail> {
        let now = self.clock.now();
        let (delay, lease_until) = (self.settings.delay, now.plus(self.lease));
        match self.db.write(move |tx| Ok(tx.claim_visitor_mail(now, delay, lease_until, BATCH)?)).await {
            Ok(claimed) => claimed,
            Err(e) => {
                tracing::error!(error = %e, "could not claim visitor emails");
                Vec::new()
            }
        }
    }

    /// Until the next email falls due, at most one poll interval.
    async fn idle_wait(&self) -> Duration {
        let now = self.clock.now();
        let delay = self.settings.delay;
        match self.db.read(move |r| Ok(r.next_visitor_mail_due(delay)?)).await {
            Ok(Some(due)) if due > now => due.since(now).min(self.poll_interval).max(Duration::from_millis(5)),
            Ok(Some(_)) => Duration::from_millis(5),
            _ => self.poll_interval,
        }
    }

    async fn attempt(&self, mail: ClaimedMail) {
        let claimed = mail.clone();
        let context = match self.db.read(move |r| Ok(r.mail_context(&claimed)?)).await {
            Ok(context) => context,
            Err(e) => {
                // The lease runs out and the email is looked at again.
                tracing::error!(error = %e, mail = mail.id, "could not read a visitor email's conversation");
                return;
            }
        };
        let now = self.clock.now();
        let kind = mail.kind.as_str();
        let step = plan(&mail, context.as_ref(), &self.settings, &self.tokens, now);
        let (finish, outcome, error) = match step {
            MailStep::Later(due_at) => (MailFinish::Later { due_at, error: None }, None, None),
            MailStep::Drop(why) => {
                tracing::debug!(mail = mail.id, conversation = mail.conversation.0, kind, why, "visitor email not needed");
                (MailFinish::Dropped, Some("dropped"), None)
            }
            MailStep::Send(email, sent) => match &self.sender {
                None => {
                    tracing::warn!(mail = mail.id, kind, "no email channel is configured (PARLEY_SMTP_URL): visitor email dropped");
                    (MailFinish::Dropped, Some("dropped"), None)
                }
                Some(sender) => match sender.send(mail.tenant, *email).await {
                    Ok(()) => (MailFinish::Sent(sent), Some("sent"), None),
                    Err(e) => {
                        let attempts = mail.attempts + 1;
                        match retry_at(attempts, &e, now) {
                            Some(due_at) => (MailFinish::Later { due_at, error: Some(e.to_string()) }, Some("retry"), Some(e.to_string())),
                            None => (MailFinish::Dropped, Some("failed"), Some(e.to_string())),
                        }
                    }
                },
            },
        };
        if let Some(outcome) = outcome {
            if outcome != "dropped" {
                tracing::info!(
                    mail = mail.id,
                    conversation = mail.conversation.0,
                    kind,
                    attempt = mail.attempts + 1,
                    outcome,
                    error = error.as_deref(),
                    "visitor email"
                );
            }
            self.metrics.visitor_email(kind, outcome);
        }
        let record = mail.clone();
        let written = self.db.write(move |tx| Ok(tx.finish_visitor_mail(&record, &finish, now)?)).await;
        if let Err(e) = written {
            // The lease runs out and the email is looked at again: sent at
            // least once.
            tracing::error!(error = %e, mail = mail.id, "could not record a visitor email");
        }
    }
}
