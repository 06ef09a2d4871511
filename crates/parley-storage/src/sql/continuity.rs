//! Visitors who leave: read receipts, the emails waiting for visitors,
//! their email threads, and the widget streams open.

use std::time::Duration;

use parley_domain::Timestamp;
use parley_domain::continuity::{ClaimedMail, MailContext, MailKind, MailThread, REPLY_LIMIT, SentThread, TRANSCRIPT_LIMIT, VisitorRead};
use parley_domain::model::*;
use parley_domain::store::ops::{ContinuityRead, ContinuityWrite, ConversationsRead, MailFinish, TenancyRead};
use parley_domain::store::{MessagePage, StoreResult};

use super::conversations::{MESSAGE_COLS, message};
use super::notifications::MESSAGE_OF;
use super::{IdList, Row, Tx, statements};

/// The operator messages the visitor sees and has not read (what the
/// partial index `messages_unread_by_visitor` holds), of conversation
/// `:conversation` in tenant `:tenant`. Unqualified, for statements that
/// read `messages` alone.
const UNREAD_ANSWER: &str = "conversation_id = :conversation AND tenant_id = :tenant
       AND sender_type = 'operator' AND internal = FALSE AND read_by_visitor_at IS NULL";

/// When a queued email is due: a reply its delay (`:delay`, in
/// milliseconds) after it was queued, unless a time was set.
const DUE: &str = "COALESCE(vm.due_at, vm.created_at + :delay)";

fn thread(r: &dyn Row) -> StoreResult<MailThread> {
    Ok(MailThread {
        root_id: r.text("root_id")?,
        last_id: r.text("last_id")?,
        emailed_through: r.i64("emailed_through")?,
        unsubscribed_at: r.opt_ts("unsubscribed_at")?,
        transcript_at: r.opt_ts("transcript_at")?,
    })
}

statements! {
    CONVERSATION_TENANT(conversation: ConversationId) => |_|
        "SELECT tenant_id FROM conversations WHERE id = :conversation".into(),
    MAIL_THREAD(tenant: TenantId, conversation: ConversationId) => |_|
        "SELECT root_id, last_id, emailed_through, unsubscribed_at, transcript_at FROM mail_threads
         WHERE tenant_id = :tenant AND conversation_id = :conversation".into(),
    /// The latest any instance said.
    OPEN_UNTIL(tenant: TenantId, conversation: ConversationId) => |_|
        "SELECT MAX(open_until) AS open_until FROM widget_presence WHERE tenant_id = :tenant AND conversation_id = :conversation".into(),
    /// A reply's messages: the unread answers after the last one emailed.
    UNREAD_ANSWERS_AFTER(tenant: TenantId, conversation: ConversationId, after: i64, limit: u32) => |_|
        format!("SELECT {MESSAGE_COLS} FROM messages m WHERE {UNREAD_ANSWER} AND m.id > :after ORDER BY m.id LIMIT :limit"),
    COUNT_UNREAD_ANSWERS(tenant: TenantId, conversation: ConversationId) => |_|
        format!("SELECT COUNT(*) AS n FROM messages WHERE {UNREAD_ANSWER}"),
    MARK_ANSWERS_READ(tenant: TenantId, conversation: ConversationId, message: MessageId, at: Timestamp) => |_|
        format!("UPDATE messages SET read_by_visitor_at = :at WHERE {UNREAD_ANSWER} AND id <= :message RETURNING id"),
    NEXT_MAIL_DUE(delay: i64) => |_|
        format!("SELECT MIN({DUE}) AS due FROM visitor_mail vm WHERE vm.lease_until IS NULL"),
    /// Whatever the visitor's address is now: it may give one before the
    /// email falls due, and the worker decides then. A reply already
    /// waiting counts the new message in its revision. An unsubscribed
    /// thread queues nothing.
    QUEUE_REPLY(tenant: TenantId, conversation: ConversationId, at: Timestamp) => |_|
        "INSERT INTO visitor_mail (tenant_id, conversation_id, kind, due_at, attempts, revision, created_at)
         SELECT c.tenant_id, c.id, 'reply', NULL, 0, 0, :at FROM conversations c
         WHERE c.id = :conversation AND c.tenant_id = :tenant
           AND NOT EXISTS (SELECT 1 FROM mail_threads t WHERE t.conversation_id = c.id AND t.unsubscribed_at IS NOT NULL)
         ON CONFLICT (conversation_id, kind) DO UPDATE SET revision = visitor_mail.revision + 1".into(),
    QUEUE_TRANSCRIPT(tenant: TenantId, conversation: ConversationId, at: Timestamp) => |_|
        "INSERT INTO visitor_mail (tenant_id, conversation_id, kind, due_at, attempts, revision, created_at)
         VALUES (:tenant, :conversation, 'transcript', :at, 0, 0, :at)
         ON CONFLICT (conversation_id, kind) DO NOTHING".into(),
    TRANSCRIPT_ASKED(tenant: TenantId, conversation: ConversationId, at: Timestamp) => |_|
        "INSERT INTO mail_threads (conversation_id, tenant_id, emailed_through, transcript_at, updated_at)
         VALUES (:conversation, :tenant, 0, :at, :at)
         ON CONFLICT (conversation_id) DO UPDATE SET transcript_at = excluded.transcript_at, updated_at = excluded.updated_at".into(),
    /// Due and not out, and no other email of its conversation out: each
    /// email of a thread answers the one before, so they go one by one.
    DUE_MAIL(now: Timestamp, delay: i64, limit: u32) => |d| d.claim(format!(
        "SELECT vm.id, vm.tenant_id, vm.conversation_id, vm.kind, vm.attempts, vm.revision FROM visitor_mail vm
         WHERE {DUE} <= :now AND (vm.lease_until IS NULL OR vm.lease_until <= :now)
           AND NOT EXISTS (SELECT 1 FROM visitor_mail o
                           WHERE o.conversation_id = vm.conversation_id AND o.id <> vm.id AND o.lease_until > :now)
         ORDER BY {DUE}, vm.id LIMIT :limit"
    ), "vm"),
    LEASE_MAIL<'a>(lease_until: Timestamp, mails: &'a IdList) => |d| format!(
        "UPDATE visitor_mail SET lease_until = :lease_until WHERE id IN ({})",
        d.id_list(":mails")
    ),
    /// Gone once done, unless an operator message came meanwhile.
    MAIL_DONE(id: i64, leased: Timestamp, revision: i64) => |_|
        "DELETE FROM visitor_mail WHERE id = :id AND lease_until = :leased AND revision = :revision".into(),
    /// Queued again for what is still to go (answers that came meanwhile,
    /// or past a long backlog's first email): due as soon as the oldest of
    /// them has waited the delay, which `continuity::plan` checks.
    MAIL_REARMED(id: i64, leased: Timestamp) => |_|
        "UPDATE visitor_mail SET lease_until = NULL, due_at = NULL, attempts = 0, last_error = NULL
         WHERE id = :id AND lease_until = :leased".into(),
    MAIL_LATER<'a>(id: i64, leased: Timestamp, due_at: Timestamp, failed: bool, error: Option<&'a str>) => |_|
        "UPDATE visitor_mail SET lease_until = NULL, due_at = :due_at,
             attempts = attempts + CASE WHEN :failed THEN 1 ELSE 0 END, last_error = :error
         WHERE id = :id AND lease_until = :leased".into(),
    THREAD_SENT<'a>(tenant: TenantId, conversation: ConversationId, root_id: &'a str, message_id: &'a str, through: i64, at: Timestamp) => |_|
        "INSERT INTO mail_threads (conversation_id, tenant_id, root_id, last_id, emailed_through, updated_at)
         VALUES (:conversation, :tenant, :root_id, :message_id, :through, :at)
         ON CONFLICT (conversation_id) DO UPDATE SET
           root_id = COALESCE(mail_threads.root_id, excluded.root_id),
           last_id = excluded.last_id,
           emailed_through = CASE WHEN excluded.emailed_through > mail_threads.emailed_through
                                  THEN excluded.emailed_through ELSE mail_threads.emailed_through END,
           updated_at = excluded.updated_at".into(),
    THREAD_RECEIVED<'a>(tenant: TenantId, conversation: ConversationId, message_id: &'a str, at: Timestamp) => |_|
        "INSERT INTO mail_threads (conversation_id, tenant_id, last_id, emailed_through, updated_at)
         VALUES (:conversation, :tenant, :message_id, 0, :at)
         ON CONFLICT (conversation_id) DO UPDATE SET last_id = excluded.last_id, updated_at = excluded.updated_at".into(),
    UNSUBSCRIBE(tenant: TenantId, conversation: ConversationId, at: Timestamp) => |_|
        "INSERT INTO mail_threads (conversation_id, tenant_id, emailed_through, unsubscribed_at, updated_at)
         VALUES (:conversation, :tenant, 0, :at, :at)
         ON CONFLICT (conversation_id) DO UPDATE SET
           unsubscribed_at = COALESCE(mail_threads.unsubscribed_at, excluded.unsubscribed_at), updated_at = excluded.updated_at".into(),
    FORGET_MAIL(tenant: TenantId, conversation: ConversationId) => |_|
        "DELETE FROM visitor_mail WHERE tenant_id = :tenant AND conversation_id = :conversation".into(),
    /// A reply put off for a stream that has now ended goes once the
    /// conversation's presence (every instance's) does; one that failed
    /// keeps its retry time.
    PULL_REPLY_FORWARD(tenant: TenantId, conversation: ConversationId) => |_| {
        let latest = "(SELECT MAX(p.open_until) FROM widget_presence p WHERE p.conversation_id = :conversation)";
        format!(
            "UPDATE visitor_mail SET due_at = {latest}
             WHERE tenant_id = :tenant AND conversation_id = :conversation AND kind = 'reply'
               AND attempts = 0 AND lease_until IS NULL AND due_at > {latest}"
        )
    },
    SET_PRESENCE<'a>(tenant: TenantId, conversation: ConversationId, instance: &'a str, until: Timestamp) => |_|
        "INSERT INTO widget_presence (conversation_id, instance, tenant_id, open_until)
         SELECT c.id, :instance, c.tenant_id, :until FROM conversations c WHERE c.id = :conversation AND c.tenant_id = :tenant
         ON CONFLICT (conversation_id, instance) DO UPDATE SET open_until = excluded.open_until".into(),
}

fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

impl ContinuityRead for Tx<'_> {
    fn conversation_tenant(&mut self, conversation: ConversationId) -> StoreResult<Option<TenantId>> {
        self.one(CONVERSATION_TENANT { conversation }, |r| Ok(TenantId(r.i64("tenant_id")?)))
    }

    fn mail_thread(&mut self, tenant: TenantId, conversation: ConversationId) -> StoreResult<MailThread> {
        Ok(self.one(MAIL_THREAD { tenant, conversation }, thread)?.unwrap_or_default())
    }

    fn mail_context(&mut self, mail: &ClaimedMail) -> StoreResult<Option<MailContext>> {
        let (tenant, conversation) = (mail.tenant, mail.conversation);
        let scope = ConversationScope { tenant, site: None, operator: None };
        let Some(details) = self.conversation_details(scope, conversation)? else { return Ok(None) };
        let Some(site) = self.site(tenant, details.conversation.site_id)? else { return Ok(None) };
        let thread = self.mail_thread(tenant, conversation)?;
        let open_until = self.widget_open_until(tenant, conversation)?;
        let messages = match mail.kind {
            MailKind::Reply => {
                let after = thread.emailed_through;
                self.all(UNREAD_ANSWERS_AFTER { tenant, conversation, after, limit: REPLY_LIMIT }, message)?
            }
            MailKind::Transcript => {
                let page = MessagePage { after_id: None, limit: TRANSCRIPT_LIMIT, include_internal: false };
                self.messages(scope, conversation, page)?
            }
        };
        Ok(Some(MailContext { details, site, thread, open_until, messages }))
    }

    fn widget_open_until(&mut self, tenant: TenantId, conversation: ConversationId) -> StoreResult<Option<Timestamp>> {
        Ok(self.one(OPEN_UNTIL { tenant, conversation }, |r| r.opt_ts("open_until"))?.flatten())
    }

    fn next_visitor_mail_due(&mut self, delay: Duration) -> StoreResult<Option<Timestamp>> {
        Ok(self.one(NEXT_MAIL_DUE { delay: millis(delay) }, |r| r.opt_ts("due"))?.flatten())
    }
}

impl ContinuityWrite for Tx<'_> {
    fn mark_read_by_visitor(
        &mut self,
        scope: ConversationScope,
        conversation: ConversationId,
        message: MessageId,
        at: Timestamp,
    ) -> StoreResult<Option<VisitorRead>> {
        if self.one(MESSAGE_OF { scope, conversation, message, include_internal: false }, |r| r.i64("id"))?.is_none() {
            return Ok(None);
        }
        let tenant = scope.tenant;
        let marked = self.all(MARK_ANSWERS_READ { tenant, conversation, message, at }, |r| r.i64("id"))?;
        let unread_count = self.count(COUNT_UNREAD_ANSWERS { tenant, conversation })?;
        Ok(Some(VisitorRead { message_id: message, unread_count, marked_through: marked.into_iter().max().map(MessageId) }))
    }

    fn queue_reply_mail(&mut self, tenant: TenantId, conversation: ConversationId, at: Timestamp) -> StoreResult<()> {
        self.defer(QUEUE_REPLY { tenant, conversation, at }, false)
    }

    fn queue_transcript(&mut self, tenant: TenantId, conversation: ConversationId, at: Timestamp) -> StoreResult<()> {
        self.exec(TRANSCRIPT_ASKED { tenant, conversation, at })?;
        self.exec(QUEUE_TRANSCRIPT { tenant, conversation, at })?;
        Ok(())
    }

    fn claim_visitor_mail(&mut self, now: Timestamp, delay: Duration, lease_until: Timestamp, limit: u32) -> StoreResult<Vec<ClaimedMail>> {
        let due = self.all(DUE_MAIL { now, delay: millis(delay), limit }, |r| {
            Ok(ClaimedMail {
                id: r.i64("id")?,
                tenant: TenantId(r.i64("tenant_id")?),
                conversation: ConversationId(r.i64("conversation_id")?),
                kind: r.parsed("kind", MailKind::parse)?,
                attempts: u32::try_from(r.i64("attempts")?).unwrap_or(u32::MAX),
                revision: r.i64("revision")?,
                leased_until: lease_until,
            })
        })?;
        if !due.is_empty() {
            self.exec(LEASE_MAIL { lease_until, mails: &IdList::new(due.iter().map(|m| m.id)) })?;
        }
        Ok(due)
    }

    fn finish_visitor_mail(&mut self, mail: &ClaimedMail, finish: &MailFinish, now: Timestamp) -> StoreResult<()> {
        let (id, leased) = (mail.id, mail.leased_until);
        // An erased conversation took its emails and thread with it: what
        // was out when it went has nothing left to record.
        if !matches!(finish, MailFinish::Later { .. }) && !self.hold_conversation(mail.tenant, mail.conversation)? {
            return Ok(());
        }
        match finish {
            MailFinish::Sent(sent) => {
                if sent.more {
                    self.exec(MAIL_REARMED { id, leased })?;
                } else {
                    self.done(mail)?;
                }
                let SentThread { root_id, message_id, emailed_through, .. } = sent;
                let through = emailed_through.map_or(0, |m| m.0);
                let (root_id, message_id) = (root_id.as_str(), message_id.as_str());
                let params = THREAD_SENT { tenant: mail.tenant, conversation: mail.conversation, root_id, message_id, through, at: now };
                self.exec(params)?;
            }
            MailFinish::Later { due_at, error } => {
                let error = error.as_deref();
                self.exec(MAIL_LATER { id, leased, due_at: *due_at, failed: error.is_some(), error })?;
            }
            MailFinish::Dropped => self.done(mail)?,
        }
        Ok(())
    }

    fn unsubscribe(&mut self, tenant: TenantId, conversation: ConversationId, at: Timestamp) -> StoreResult<()> {
        if !self.hold_conversation(tenant, conversation)? {
            return Ok(());
        }
        self.exec(UNSUBSCRIBE { tenant, conversation, at })?;
        self.exec(FORGET_MAIL { tenant, conversation })?;
        Ok(())
    }

    fn thread_received(&mut self, tenant: TenantId, conversation: ConversationId, message_id: &str, at: Timestamp) -> StoreResult<()> {
        self.exec(THREAD_RECEIVED { tenant, conversation, message_id, at })?;
        Ok(())
    }

    fn set_presence(&mut self, instance: &str, open: &[(TenantId, ConversationId)], until: Timestamp, ended: bool) -> StoreResult<()> {
        for &(tenant, conversation) in open {
            self.exec(SET_PRESENCE { tenant, conversation, instance, until })?;
            if ended {
                self.exec(PULL_REPLY_FORWARD { tenant, conversation })?;
            }
        }
        Ok(())
    }
}

impl Tx<'_> {
    /// Locks the conversation (PostgreSQL) before its email rows and its
    /// thread, in the order every unit that changes them takes: an
    /// operator message holds the conversation and then queues its email,
    /// and a transcript request holds it and then writes the thread. The
    /// thread's foreign key would otherwise wait for the conversation
    /// while holding the thread row another unit waits for.
    /// `false` when the conversation is gone (erased).
    fn hold_conversation(&mut self, tenant: TenantId, conversation: ConversationId) -> StoreResult<bool> {
        Ok(self.conversation(ConversationScope { tenant, site: None, operator: None }, conversation)?.is_some())
    }

    /// Removes a finished email, or queues it again when operator messages
    /// came while it was out.
    fn done(&mut self, mail: &ClaimedMail) -> StoreResult<()> {
        let (id, leased) = (mail.id, mail.leased_until);
        if self.exec(MAIL_DONE { id, leased, revision: mail.revision })? == 0 {
            self.exec(MAIL_REARMED { id, leased })?;
        }
        Ok(())
    }
}
