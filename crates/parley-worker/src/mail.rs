//! The visitor mail loop: it claims the next email that is due (a lease,
//! so that one instance sends each and a crashed one's is taken over when
//! the lease runs out), reads what its conversation says now on a reader,
//! lets `continuity::plan` decide, sends through the email channel, and
//! records the outcome while the lease holds. It looks again when the
//! next email falls due, at most a poll interval later. [`SENDERS`] such
//! loops run side by side. On shutdown they stop claiming; the emails
//! being sent finish within their bound.

use std::sync::Arc;
use std::time::Duration;

use parley_domain::continuity::tokens::MailTokens;
use parley_domain::continuity::{ClaimedMail, MailSettings, MailStep, plan, retry_at};
use parley_domain::metrics::Metrics;
use parley_domain::store::ops::MailFinish;
use parley_domain::verification::channels::EmailSender;
use parley_domain::{Clock, Database};
use tokio_util::sync::CancellationToken;

/// How long a claimed email stays with this instance: well past the
/// longest a send may take (`send_timeout`), so that no other instance
/// sends it meanwhile.
pub const MAIL_LEASE: Duration = Duration::from_secs(300);
/// Emails sent at once by an instance: each sender claims its own, so a
/// slow mail server holds back one email, not every one behind it.
pub const SENDERS: usize = 4;

pub struct MailWorker {
    pub db: Database,
    pub clock: Arc<dyn Clock>,
    /// The email channel; without one, `plan` drops due emails.
    pub sender: Option<Arc<dyn EmailSender>>,
    pub settings: MailSettings,
    pub tokens: MailTokens,
    pub metrics: Metrics,
    pub poll_interval: Duration,
    /// A send that has not ended by then has failed (and is tried again).
    /// The SMTP client's own timeout bounds each command, not the whole;
    /// this is kept inside the shutdown time, so that a send in flight at
    /// shutdown ends and is recorded before the database closes.
    pub send_timeout: Duration,
}

/// What an attempt came to, as the metrics and the log name it.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Sent,
    Retry,
    Failed,
    Dropped,
    /// Not yet: counted nowhere.
    Later,
}

impl Outcome {
    fn label(self) -> Option<&'static str> {
        match self {
            Self::Sent => Some("sent"),
            Self::Retry => Some("retry"),
            Self::Failed => Some("failed"),
            Self::Dropped => Some("dropped"),
            Self::Later => None,
        }
    }
}

impl MailWorker {
    pub async fn run(self: Arc<Self>, shutdown: CancellationToken) {
        while !shutdown.is_cancelled() {
            let wait = match self.claim().await {
                Ok(Some(mail)) => {
                    self.attempt(mail).await;
                    continue; // more may be due right now
                }
                Ok(None) => self.idle_wait().await,
                // The database failed: a poll interval, not a busy loop.
                Err(()) => self.poll_interval,
            };
            tokio::select! {
                _ = shutdown.cancelled() => break,
                _ = tokio::time::sleep(wait) => {},
            }
        }
    }

    async fn claim(&self) -> Result<Option<ClaimedMail>, ()> {
        let now = self.clock.now();
        let (delay, lease_until) = (self.settings.delay, now.plus(MAIL_LEASE));
        match self.db.write(move |tx| Ok(tx.claim_visitor_mail(now, delay, lease_until, 1)?)).await {
            Ok(claimed) => Ok(claimed.into_iter().next()),
            Err(e) => {
                tracing::error!(error = %e, "could not claim visitor emails");
                Err(())
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
        let (finish, outcome, error) = match plan(&mail, context.as_ref(), &self.settings, &self.tokens, now) {
            MailStep::Later(due_at) => (MailFinish::Later { due_at, error: None }, Outcome::Later, None),
            MailStep::Drop(why) => {
                tracing::debug!(mail = mail.id, conversation = mail.conversation.0, kind, why, "visitor email not needed");
                (MailFinish::Dropped, Outcome::Dropped, None)
            }
            MailStep::Send(email, sent) => match self.send(&mail, *email).await {
                Ok(()) => (MailFinish::Sent(sent), Outcome::Sent, None),
                Err(e) => match retry_at(mail.attempts + 1, &e, now) {
                    Some(due_at) => (MailFinish::Later { due_at, error: Some(e.to_string()) }, Outcome::Retry, Some(e.to_string())),
                    None => (MailFinish::Dropped, Outcome::Failed, Some(e.to_string())),
                },
            },
        };
        if let Some(label) = outcome.label() {
            if outcome != Outcome::Dropped {
                tracing::info!(
                    mail = mail.id,
                    conversation = mail.conversation.0,
                    kind,
                    attempt = mail.attempts + 1,
                    outcome = label,
                    error = error.as_deref(),
                    "visitor email"
                );
            }
            self.metrics.visitor_email(kind, label);
        }
        let record = mail.clone();
        let written = self.db.write(move |tx| Ok(tx.finish_visitor_mail(&record, &finish, now)?)).await;
        if let Err(e) = written {
            // The lease runs out and the email is looked at again: sent at
            // least once.
            tracing::error!(error = %e, mail = mail.id, "could not record a visitor email");
        }
    }

    async fn send(&self, mail: &ClaimedMail, email: parley_domain::verification::channels::Email) -> Result<(), SendFailure> {
        let Some(sender) = &self.sender else { return Err(SendFailure::transient("no email channel")) };
        match tokio::time::timeout(self.send_timeout, sender.send(mail.tenant, email)).await {
            Ok(result) => result,
            Err(_) => Err(SendFailure::transient("the mail server did not finish in time")),
        }
    }
}

type SendFailure = parley_domain::verification::channels::SendError;
