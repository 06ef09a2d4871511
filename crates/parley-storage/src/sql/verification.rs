//! Verification challenges, what they established, and the demo outbox.

use parley_domain::Timestamp;
use parley_domain::model::*;
use parley_domain::store::OutboxMessage;
use parley_domain::store::StoreResult;
use parley_domain::store::ops::{VerificationRead, VerificationWrite};
use parley_domain::verification::channels::Channel;
use parley_domain::verification::{Challenge, ChallengeCount, ChallengeStatus, Method, NewChallenge, TestCount};

use super::{Row, Tx, args, statements};

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

const BY_SCOPE: &str = "ch.tenant_id = ?1 AND ch.site_id = ?2 AND ch.conversation_id = ?3 AND ch.id = ?4";

fn times(filter: &str) -> String {
    format!("SELECT created_at FROM verification_challenges WHERE {filter} ORDER BY created_at DESC LIMIT ?3")
}

statements! {
    CHALLENGE[Int, Int, Int, Int](_) => challenge_where(BY_SCOPE),
    CHALLENGE_LOCKED[Int, Int, Int, Int](d) => d.locked(challenge_where(BY_SCOPE)),
    /// Unscoped: a magic link's id and long code are the capability.
    CHALLENGE_BY_ID[Int](_) => challenge_where("ch.id = ?1"),
    CHALLENGE_BY_ID_LOCKED[Int](d) => d.locked(challenge_where("ch.id = ?1")),
    TIMES_CONVERSATION[Int, Int, Int, Int](_) => times("tenant_id = ?1 AND conversation_id = ?4 AND created_at > ?2"),
    TIMES_TENANT[Int, Int, Int](_) => times("tenant_id = ?1 AND created_at > ?2"),
    TIMES_TENANT_SMS[Int, Int, Int](_) => times("tenant_id = ?1 AND method = 'sms_otp' AND created_at > ?2"),
    /// Protects the number's owner, whichever tenant sends.
    TIMES_PHONE[Text, Int, Int](_) => times("method = 'sms_otp' AND target = ?1 AND created_at > ?2"),
    TIMES_EMAIL[Text, Int, Int](_) => times("method IN ('email_otp', 'magic_link') AND lower(target) = ?1 AND created_at > ?2"),
    TEST_TIMES_TENANT[Int, Int, Int](_) =>
        "SELECT created_at FROM verification_tests WHERE tenant_id = ?1 AND created_at > ?2 ORDER BY created_at DESC LIMIT ?3".into(),
    /// Protects the recipient, whichever tenant sends.
    TEST_TIMES_RECIPIENT[Text, Int, Int](_) =>
        "SELECT created_at FROM verification_tests WHERE recipient = ?1 AND created_at > ?2 ORDER BY created_at DESC LIMIT ?3".into(),
    INSERT_TEST_SEND[Int, Text, Text, Int](_) =>
        "INSERT INTO verification_tests (tenant_id, channel, recipient, created_at) VALUES (?1, ?2, ?3, ?4)".into(),
    SANDBOX_OUTBOX[Int, Int](_) =>
        "SELECT channel, recipient, subject, body, created_at FROM sandbox_outbox WHERE tenant_id = ?1 ORDER BY id DESC LIMIT ?2".into(),
    SUPERSEDE_CHALLENGES[Int, Int, Int](_) => "UPDATE verification_challenges SET status = 'superseded'
         WHERE tenant_id = ?1 AND site_id = ?2 AND conversation_id = ?3 AND status = 'active'".into(),
    INSERT_CHALLENGE[Int, Int, Int, Int, Text, Text, Bytes, Bytes, Int, Int](_) => "INSERT INTO verification_challenges
             (tenant_id, site_id, conversation_id, visitor_id, method, target, code_salt, code_hash, status, created_at, expires_at)
         SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 'active', ?9, ?10
         WHERE EXISTS (SELECT 1 FROM conversations WHERE id = ?3 AND tenant_id = ?1 AND site_id = ?2 AND visitor_id = ?4)
         RETURNING id".into(),
    UPDATE_CHALLENGE[Int, Int, Int, Text, Int, Int](_) => "UPDATE verification_challenges SET status = ?4, attempts = ?5, completed_at = ?6
         WHERE tenant_id = ?1 AND site_id = ?2 AND id = ?3".into(),
    MARK_VISITOR_VERIFIED[Int, Int, Int, Int, Text, Text](_) =>
        "UPDATE visitors SET verified_at = ?4, verified_method = ?5, verified_target = ?6, updated_at = ?4
         WHERE tenant_id = ?1 AND site_id = ?2 AND id = ?3".into(),
    MARK_CONVERSATION_VERIFIED[Int, Int, Int, Int, Text](_) =>
        "UPDATE conversations SET verified_at = ?4, verified_method = ?5 WHERE tenant_id = ?1 AND site_id = ?2 AND id = ?3".into(),
    CLEAR_VISITOR_VERIFICATION[Int, Int, Int](_) => "UPDATE visitors SET verified_at = NULL, verified_method = NULL, verified_target = NULL
         WHERE tenant_id = ?1 AND site_id = ?2 AND id = ?3".into(),
    CLEAR_CONVERSATIONS_VERIFICATION[Int, Int, Int](_) =>
        "UPDATE conversations SET verified_at = NULL, verified_method = NULL WHERE tenant_id = ?1 AND site_id = ?2 AND visitor_id = ?3".into(),
    INSERT_OUTBOX_MESSAGE[Int, Text, Text, Text, Text, Int](_) =>
        "INSERT INTO sandbox_outbox (tenant_id, channel, recipient, subject, body, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6)".into(),
}

impl VerificationRead for Tx<'_> {
    fn challenge(&mut self, scope: SiteScope, conversation: ConversationId, id: ChallengeId) -> StoreResult<Option<Challenge>> {
        let stmt = self.locking(&CHALLENGE, &CHALLENGE_LOCKED);
        self.one(stmt, args![scope.tenant, scope.site, conversation, id], challenge)
    }

    fn challenge_by_id(&mut self, id: ChallengeId) -> StoreResult<Option<Challenge>> {
        let stmt = self.locking(&CHALLENGE_BY_ID, &CHALLENGE_BY_ID_LOCKED);
        self.one(stmt, args![id], challenge)
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
            ChallengeCount::Conversation(c) => self.all(&TIMES_CONVERSATION, args![tenant, since, limit, *c], created),
            ChallengeCount::Tenant => self.all(&TIMES_TENANT, args![tenant, since, limit], created),
            ChallengeCount::TenantSms => self.all(&TIMES_TENANT_SMS, args![tenant, since, limit], created),
            ChallengeCount::Phone(number) => self.all(&TIMES_PHONE, args![number, since, limit], created),
            ChallengeCount::Email(address) => self.all(&TIMES_EMAIL, args![address, since, limit], created),
        }
    }

    fn test_send_times(&mut self, tenant: TenantId, count: &TestCount, since: Timestamp, limit: u32) -> StoreResult<Vec<Timestamp>> {
        if self.writing && !self.sends_locked {
            self.transaction_lock(crate::locks::VERIFICATION_SENDS)?;
            self.sends_locked = true;
        }
        let created = |r: &dyn Row| r.ts("created_at");
        match count {
            TestCount::Tenant => self.all(&TEST_TIMES_TENANT, args![tenant, since, limit], created),
            TestCount::Recipient(to) => self.all(&TEST_TIMES_RECIPIENT, args![to, since, limit], created),
        }
    }

    fn sandbox_outbox(&mut self, tenant: TenantId, limit: u32) -> StoreResult<Vec<OutboxMessage>> {
        self.all(&SANDBOX_OUTBOX, args![tenant, limit], |r| {
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
        self.exec(&INSERT_TEST_SEND, args![tenant, channel.as_str(), recipient, at])?;
        Ok(())
    }

    fn insert_challenge(&mut self, scope: SiteScope, c: &NewChallenge) -> StoreResult<ChallengeId> {
        self.exec(&SUPERSEDE_CHALLENGES, args![scope.tenant, scope.site, c.conversation_id])?;
        let id = self.insert(
            &INSERT_CHALLENGE,
            args![
                scope.tenant,
                scope.site,
                c.conversation_id,
                c.visitor_id,
                c.method.as_str(),
                &c.target,
                &c.code_salt,
                &c.code_hash,
                c.created_at,
                c.expires_at
            ],
        )?;
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
        self.exec(&UPDATE_CHALLENGE, args![scope.tenant, scope.site, id, status.as_str(), attempts, completed_at])?;
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
        self.exec(&MARK_VISITOR_VERIFIED, args![scope.tenant, scope.site, visitor, at, method.as_str(), target])?;
        self.exec(&MARK_CONVERSATION_VERIFIED, args![scope.tenant, scope.site, conversation, at, method.as_str()])?;
        Ok(())
    }

    fn clear_verification(&mut self, scope: SiteScope, visitor: VisitorId) -> StoreResult<()> {
        self.exec(&CLEAR_VISITOR_VERIFICATION, args![scope.tenant, scope.site, visitor])?;
        self.exec(&CLEAR_CONVERSATIONS_VERIFICATION, args![scope.tenant, scope.site, visitor])?;
        Ok(())
    }

    fn insert_outbox_message(&mut self, tenant: TenantId, m: &OutboxMessage) -> StoreResult<()> {
        self.exec(&INSERT_OUTBOX_MESSAGE, args![tenant, m.channel, &m.recipient, &m.subject, &m.body, m.created_at])?;
        Ok(())
    }
}
