//! Verification challenges, what they established, and the demo outbox.

use parley_domain::Timestamp;
use parley_domain::model::*;
use parley_domain::store::OutboxMessage;
use parley_domain::store::StoreResult;
use parley_domain::store::ops::{VerificationRead, VerificationWrite};
use parley_domain::verification::channels::Channel;
use parley_domain::verification::{Challenge, ChallengeCount, ChallengeStatus, Method, NewChallenge, TestCount};

use super::{Row, Tx, statements};

const CHALLENGE_COLS: &str = "ch.id AS ch_id, ch.tenant_id AS ch_tenant_id, ch.site_id AS ch_site_id, \
     ch.conversation_id AS ch_conversation_id, ch.visitor_id AS ch_visitor_id, ch.method AS ch_method, ch.target AS ch_target, \
     ch.code_salt AS ch_code_salt, ch.code_hash AS ch_code_hash, ch.status AS ch_status, ch.attempts AS ch_attempts, \
     ch.created_at AS ch_created_at, ch.expires_at AS ch_expires_at";

fn challenge(r: &dyn Row) -> StoreResult<Challenge> {
    Ok(Challenge {
        id: ChallengeId(r.i64("ch_id")?),
        scope: SiteScope { tenant: TenantId(r.i64("ch_tenant_id")?), site: SiteId(r.i64("ch_site_id")?) },
        conversation_id: ConversationId(r.i64("ch_conversation_id")?),
        visitor_id: VisitorId(r.i64("ch_visitor_id")?),
        method: r.parsed("ch_method", Method::parse)?,
        target: r.string("ch_target")?,
        code_salt: r.blob("ch_code_salt")?,
        code_hash: r.blob("ch_code_hash")?,
        status: r.parsed("ch_status", ChallengeStatus::parse)?,
        attempts: r.u32("ch_attempts")?,
        created_at: r.ts("ch_created_at")?,
        expires_at: r.ts("ch_expires_at")?,
    })
}

fn challenge_where(condition: &str) -> String {
    format!("SELECT {CHALLENGE_COLS} FROM verification_challenges ch WHERE {condition}")
}

const BY_SCOPE: &str = "ch.tenant_id = :tenant AND ch.site_id = :site AND ch.conversation_id = :conversation AND ch.id = :id";

/// When challenges were made after `:since`, newest first, at most
/// `:limit`.
fn times(filter: &str) -> String {
    format!("SELECT created_at FROM verification_challenges WHERE {filter} AND created_at > :since ORDER BY created_at DESC LIMIT :limit")
}

statements! {
    CHALLENGE(tenant: TenantId, site: SiteId, conversation: ConversationId, id: ChallengeId) locked CHALLENGE_LOCKED => |_|
        challenge_where(BY_SCOPE),
    /// Unscoped: a magic link's id and long code are the capability.
    CHALLENGE_BY_ID(id: ChallengeId) locked CHALLENGE_BY_ID_LOCKED => |_| challenge_where("ch.id = :id"),
    TIMES_CONVERSATION(tenant: TenantId, conversation: ConversationId, since: Timestamp, limit: u32) => |_|
        times("tenant_id = :tenant AND conversation_id = :conversation"),
    TIMES_TENANT(tenant: TenantId, since: Timestamp, limit: u32) => |_| times("tenant_id = :tenant"),
    TIMES_TENANT_SMS(tenant: TenantId, since: Timestamp, limit: u32) => |_| times("tenant_id = :tenant AND method = 'sms_otp'"),
    /// Protects the number's owner, whichever tenant sends.
    TIMES_PHONE<'a>(number: &'a str, since: Timestamp, limit: u32) => |_| times("method = 'sms_otp' AND target = :number"),
    TIMES_EMAIL<'a>(address: &'a str, since: Timestamp, limit: u32) => |_|
        times("method IN ('email_otp', 'magic_link') AND lower(target) = :address"),
    TEST_TIMES_TENANT(tenant: TenantId, since: Timestamp, limit: u32) => |_| "SELECT created_at FROM verification_tests
         WHERE tenant_id = :tenant AND created_at > :since ORDER BY created_at DESC LIMIT :limit".into(),
    /// Protects the recipient, whichever tenant sends.
    TEST_TIMES_RECIPIENT<'a>(recipient: &'a str, since: Timestamp, limit: u32) => |_| "SELECT created_at FROM verification_tests
         WHERE recipient = :recipient AND created_at > :since ORDER BY created_at DESC LIMIT :limit".into(),
    INSERT_TEST_SEND<'a>(tenant: TenantId, channel: &'a str, recipient: &'a str, at: Timestamp) => |_|
        "INSERT INTO verification_tests (tenant_id, channel, recipient, created_at) VALUES (:tenant, :channel, :recipient, :at)".into(),
    SANDBOX_OUTBOX(tenant: TenantId, limit: u32) => |_| "SELECT channel, recipient, subject, body, created_at FROM sandbox_outbox
         WHERE tenant_id = :tenant ORDER BY id DESC LIMIT :limit".into(),
    SUPERSEDE_CHALLENGES(tenant: TenantId, site: SiteId, conversation: ConversationId) => |_|
        "UPDATE verification_challenges SET status = 'superseded'
         WHERE tenant_id = :tenant AND site_id = :site AND conversation_id = :conversation AND status = 'active'".into(),
    INSERT_CHALLENGE<'a>(
        tenant: TenantId, site: SiteId, conversation: ConversationId, visitor: VisitorId, method: &'a str, target: &'a str,
        code_salt: &'a [u8], code_hash: &'a [u8], created_at: Timestamp, expires_at: Timestamp,
    ) => |_| "INSERT INTO verification_challenges
             (tenant_id, site_id, conversation_id, visitor_id, method, target, code_salt, code_hash, status, created_at, expires_at)
         SELECT :tenant, :site, :conversation, :visitor, :method, :target, :code_salt, :code_hash, 'active', :created_at, :expires_at
         WHERE EXISTS (SELECT 1 FROM conversations
                       WHERE id = :conversation AND tenant_id = :tenant AND site_id = :site AND visitor_id = :visitor)
         RETURNING id".into(),
    UPDATE_CHALLENGE<'a>(tenant: TenantId, site: SiteId, id: ChallengeId, status: &'a str, attempts: u32, completed_at: Option<Timestamp>) => |_|
        "UPDATE verification_challenges SET status = :status, attempts = :attempts, completed_at = :completed_at
         WHERE tenant_id = :tenant AND site_id = :site AND id = :id".into(),
    MARK_VISITOR_VERIFIED<'a>(tenant: TenantId, site: SiteId, visitor: VisitorId, at: Timestamp, method: &'a str, target: &'a str) => |_|
        "UPDATE visitors SET verified_at = :at, verified_method = :method, verified_target = :target, updated_at = :at
         WHERE tenant_id = :tenant AND site_id = :site AND id = :visitor".into(),
    MARK_CONVERSATION_VERIFIED<'a>(tenant: TenantId, site: SiteId, conversation: ConversationId, at: Timestamp, method: &'a str) => |_|
        "UPDATE conversations SET verified_at = :at, verified_method = :method
         WHERE tenant_id = :tenant AND site_id = :site AND id = :conversation".into(),
    CLEAR_VISITOR_VERIFICATION(tenant: TenantId, site: SiteId, visitor: VisitorId) => |_|
        "UPDATE visitors SET verified_at = NULL, verified_method = NULL, verified_target = NULL
         WHERE tenant_id = :tenant AND site_id = :site AND id = :visitor".into(),
    CLEAR_CONVERSATIONS_VERIFICATION(tenant: TenantId, site: SiteId, visitor: VisitorId) => |_|
        "UPDATE conversations SET verified_at = NULL, verified_method = NULL
         WHERE tenant_id = :tenant AND site_id = :site AND visitor_id = :visitor RETURNING id".into(),
    INSERT_OUTBOX_MESSAGE<'a>(
        tenant: TenantId, channel: &'a str, recipient: &'a str, subject: Option<&'a str>, body: &'a str, created_at: Timestamp,
    ) => |_| "INSERT INTO sandbox_outbox (tenant_id, channel, recipient, subject, body, created_at)
         VALUES (:tenant, :channel, :recipient, :subject, :body, :created_at)".into(),
}

impl VerificationRead for Tx<'_> {
    fn challenge(&mut self, scope: SiteScope, conversation: ConversationId, id: ChallengeId) -> StoreResult<Option<Challenge>> {
        self.one(self.locking(CHALLENGE { tenant: scope.tenant, site: scope.site, conversation, id }), challenge)
    }

    fn challenge_by_id(&mut self, id: ChallengeId) -> StoreResult<Option<Challenge>> {
        self.one(self.locking(CHALLENGE_BY_ID { id }), challenge)
    }

    fn challenge_times(&mut self, tenant: TenantId, count: &ChallengeCount, since: Timestamp, limit: u32) -> StoreResult<Vec<Timestamp>> {
        // Limits count what was sent, then the unit sends more: on
        // PostgreSQL units run side by side, so the counts of a write unit
        // wait for every other unit that counts (rare: a few per visitor).
        if self.writing && !self.sends_locked {
            self.transaction_lock(crate::locks::VERIFICATION_SENDS)?;
            self.sends_locked = true;
        }
        let created = |r: &dyn Row| r.ts("created_at");
        match count {
            ChallengeCount::Conversation(c) => self.all(TIMES_CONVERSATION { tenant, conversation: *c, since, limit }, created),
            ChallengeCount::Tenant => self.all(TIMES_TENANT { tenant, since, limit }, created),
            ChallengeCount::TenantSms => self.all(TIMES_TENANT_SMS { tenant, since, limit }, created),
            ChallengeCount::Phone(number) => self.all(TIMES_PHONE { number, since, limit }, created),
            ChallengeCount::Email(address) => self.all(TIMES_EMAIL { address, since, limit }, created),
        }
    }

    fn test_send_times(&mut self, tenant: TenantId, count: &TestCount, since: Timestamp, limit: u32) -> StoreResult<Vec<Timestamp>> {
        if self.writing && !self.sends_locked {
            self.transaction_lock(crate::locks::VERIFICATION_SENDS)?;
            self.sends_locked = true;
        }
        let created = |r: &dyn Row| r.ts("created_at");
        match count {
            TestCount::Tenant => self.all(TEST_TIMES_TENANT { tenant, since, limit }, created),
            TestCount::Recipient(recipient) => self.all(TEST_TIMES_RECIPIENT { recipient, since, limit }, created),
        }
    }

    fn sandbox_outbox(&mut self, tenant: TenantId, limit: u32) -> StoreResult<Vec<OutboxMessage>> {
        self.all(SANDBOX_OUTBOX { tenant, limit }, |r| {
            Ok(OutboxMessage {
                channel: if r.string("channel")? == "sms" { "sms" } else { "email" },
                recipient: r.string("recipient")?,
                subject: r.text("subject")?,
                body: r.string("body")?,
                created_at: r.ts("created_at")?,
            })
        })
    }
}

impl VerificationWrite for Tx<'_> {
    fn insert_test_send(&mut self, tenant: TenantId, channel: Channel, recipient: &str, at: Timestamp) -> StoreResult<()> {
        self.exec(INSERT_TEST_SEND { tenant, channel: channel.as_str(), recipient, at })?;
        Ok(())
    }

    fn insert_challenge(&mut self, scope: SiteScope, c: &NewChallenge) -> StoreResult<ChallengeId> {
        let (tenant, site, conversation) = (scope.tenant, scope.site, c.conversation_id);
        self.exec(SUPERSEDE_CHALLENGES { tenant, site, conversation })?;
        let id = self.insert(INSERT_CHALLENGE {
            tenant,
            site,
            conversation,
            visitor: c.visitor_id,
            method: c.method.as_str(),
            target: &c.target,
            code_salt: &c.code_salt,
            code_hash: &c.code_hash,
            created_at: c.created_at,
            expires_at: c.expires_at,
        })?;
        Ok(ChallengeId(id))
    }

    fn update_challenge(
        &mut self,
        scope: SiteScope,
        id: ChallengeId,
        status: ChallengeStatus,
        attempts: u32,
        completed_at: Option<Timestamp>,
    ) -> StoreResult<()> {
        self.exec(UPDATE_CHALLENGE { tenant: scope.tenant, site: scope.site, id, status: status.as_str(), attempts, completed_at })?;
        Ok(())
    }

    fn mark_verified(
        &mut self,
        scope: SiteScope,
        visitor: VisitorId,
        conversation: ConversationId,
        method: Method,
        target: &str,
        at: Timestamp,
    ) -> StoreResult<()> {
        let (tenant, site, method) = (scope.tenant, scope.site, method.as_str());
        self.exec(MARK_VISITOR_VERIFIED { tenant, site, visitor, at, method, target })?;
        self.exec(MARK_CONVERSATION_VERIFIED { tenant, site, conversation, at, method })?;
        self.note_changed(conversation);
        Ok(())
    }

    fn clear_verification(&mut self, scope: SiteScope, visitor: VisitorId) -> StoreResult<()> {
        let (tenant, site) = (scope.tenant, scope.site);
        self.exec(CLEAR_VISITOR_VERIFICATION { tenant, site, visitor })?;
        // No feed entry says so: the visitor's polls learn it here.
        for id in self.all(CLEAR_CONVERSATIONS_VERIFICATION { tenant, site, visitor }, |r| r.i64("id"))? {
            self.note_changed(ConversationId(id));
        }
        Ok(())
    }

    fn insert_outbox_message(&mut self, tenant: TenantId, m: &OutboxMessage) -> StoreResult<()> {
        self.exec(INSERT_OUTBOX_MESSAGE {
            tenant,
            channel: m.channel,
            recipient: &m.recipient,
            subject: m.subject.as_deref(),
            body: &m.body,
            created_at: m.created_at,
        })?;
        Ok(())
    }
}
