//! Searching conversations: the words of a query through the database's
//! full-text index of messages (`Dialect::message_matches`), or through
//! the index of visitors' names and emails (`Dialect::visitor_matches`),
//! in the operator's scope.
//!
//! A search reads no more than its page needs, so that a common word
//! costs about what a rare one does. Conversations come in the order of
//! their latest match: a matching message's time, or the conversation's
//! last activity when its visitor matched. The messages' side is read
//! newest first and stops once it holds at least as many conversations as
//! the page and the pages before it (`needed`); the visitors' side is
//! read in activity order up to the same number. Both are then merged:
//! the first `needed` of the union are the first of one side or the
//! other.

use std::collections::HashMap;

use parley_domain::Timestamp;
use parley_domain::model::*;
use parley_domain::search::{SearchHit, SearchQuery};
use parley_domain::store::StoreResult;
use parley_domain::store::ops::SearchRead;

use super::conversations::{
    CONVERSATION_COLS, DETAILS_COLS, DETAILS_FROM, MESSAGE_COLS, MESSAGES_FROM, SCOPE, VISITOR_COLS, details, message,
};
use super::{IdList, Row, Tx, statements};

/// The latest messages a search on PostgreSQL reads before it turns to
/// the full-text index (see `Dialect::matches_newest_first`): a word in
/// one message of ten fills a page from them, at the cost of matching
/// each; a rarer one is found faster through the index, which costs
/// about as much as it finds. The window grows with the conversations
/// needed (a later page, a longer one), within these bounds.
const RECENT_MESSAGES: u32 = 300;
const RECENT_PER_CONVERSATION: u32 = 15;
const MAX_RECENT_MESSAGES: u32 = 3_000;

/// The fewest matching messages read at once where the index hands them
/// over newest first.
const FIRST_BATCH: u32 = 100;

/// The matching visitors a search looks up by id; a query that matches
/// more is broad enough to find its conversations in activity order.
const MATCHED_VISITORS: u32 = 1_000;

statements! {
    /// Matching messages newest first, where the index hands them over in
    /// that order (SQLite); the search goes on from `before` until it
    /// holds enough conversations.
    SEARCH_NEWEST<'a>(scope: ConversationScope, query: &'a str, before: i64, limit: u32) => |d| format!(
        "SELECT m.id AS m_id, m.conversation_id AS conversation_id, m.created_at AS at {} LIMIT :limit",
        d.newest_matches(SCOPE)
    ),
    /// The scope's latest messages that match (PostgreSQL, see
    /// `RECENT_MESSAGES`): the window is chosen by id alone, then each of
    /// its messages is matched.
    SEARCH_RECENT<'a>(scope: ConversationScope, query: &'a str, window: u32) planned EachRun => |d| format!(
        "SELECT m.id AS m_id, m.conversation_id AS conversation_id, m.created_at AS at
         FROM (SELECT w.id AS id FROM messages w JOIN conversations c ON c.id = w.conversation_id AND c.tenant_id = w.tenant_id
               WHERE {SCOPE} ORDER BY w.id DESC LIMIT :window) recent
         JOIN messages m ON m.id = recent.id
         WHERE {}
         ORDER BY m.id DESC",
        d.message_matches()
    ),
    /// Every matching message through the index, one row per
    /// conversation with its latest match, the latest first. The scope is
    /// asked of each match's conversation by a subquery the planner
    /// cannot turn into a join: a join lets it read every conversation
    /// of the tenant, where the matches are few (the common words were
    /// answered by `SEARCH_RECENT`).
    SEARCH_INDEXED<'a>(scope: ConversationScope, query: &'a str, limit: u32) planned EachRun => |d| format!(
        "SELECT MAX(m.id) AS m_id, m.conversation_id AS conversation_id, MAX(m.created_at) AS at FROM messages m
         WHERE m.tenant_id = :tenant AND {}
           AND (SELECT COUNT(*) FROM conversations c WHERE c.id = m.conversation_id AND {SCOPE}) > 0
         GROUP BY m.conversation_id ORDER BY MAX(m.id) DESC LIMIT :limit",
        d.message_matches()
    ),
    /// Up to `limit` of the tenant's visitors whose name and email match.
    SEARCH_VISITOR_IDS<'a>(tenant: TenantId, query: &'a str, limit: u32) => |d| format!("{} LIMIT :limit", d.visitor_matches()),
    /// The conversations of these visitors, by last activity.
    SEARCH_VISITOR_CONVERSATIONS<'a>(scope: ConversationScope, visitors: &'a IdList, limit: u32) => |d| format!(
        "SELECT c.id AS conversation_id, c.last_message_at AS at FROM conversations c
         WHERE {SCOPE} AND c.visitor_id IN ({})
         ORDER BY c.last_message_at DESC, c.id DESC LIMIT :limit",
        d.id_list(":visitors")
    ),
    /// Conversations whose visitor matches, by last activity, for a query
    /// that matches more visitors than `MATCHED_VISITORS`: most
    /// conversations then match, and the walk stops soon.
    SEARCH_VISITORS<'a>(scope: ConversationScope, query: &'a str, limit: u32) => |d| format!(
        "SELECT c.id AS conversation_id, c.last_message_at AS at FROM conversations c
         WHERE {SCOPE} AND c.visitor_id IN ({})
         ORDER BY c.last_message_at DESC, c.id DESC LIMIT :limit",
        d.visitor_matches()
    ),
    SEARCH_DETAILS<'a>(scope: ConversationScope, ids: &'a IdList) => |d| format!(
        "SELECT {CONVERSATION_COLS}, {VISITOR_COLS}, {DETAILS_COLS} {DETAILS_FROM} WHERE {SCOPE} AND c.id IN ({})",
        d.id_list(":ids")
    ),
    SEARCH_MESSAGES<'a>(scope: ConversationScope, ids: &'a IdList) => |d| format!(
        "SELECT {MESSAGE_COLS} {MESSAGES_FROM} WHERE {SCOPE} AND m.id IN ({})",
        d.id_list(":ids")
    ),
}

/// One conversation found: when its latest match was, and which message
/// matched (none when only its visitor did).
#[derive(Clone, Copy)]
struct Hit {
    at: Timestamp,
    conversation: ConversationId,
    message: Option<MessageId>,
}

/// Conversations found so far, in the order found, each once.
#[derive(Default)]
struct Hits {
    found: Vec<Hit>,
    seen: HashMap<ConversationId, usize>,
}

impl Hits {
    /// Adds a match; a conversation already found keeps its latest.
    fn add(&mut self, f: Hit) {
        match self.seen.get(&f.conversation) {
            Some(&i) => {
                let kept = &mut self.found[i];
                if f.at > kept.at {
                    kept.at = f.at;
                }
                kept.message = kept.message.or(f.message);
            }
            None => {
                self.seen.insert(f.conversation, self.found.len());
                self.found.push(f);
            }
        }
    }
}

fn message_hit(r: &dyn Row) -> StoreResult<Hit> {
    Ok(Hit { at: r.ts("at")?, conversation: ConversationId(r.i64("conversation_id")?), message: Some(MessageId(r.i64("m_id")?)) })
}

impl Tx<'_> {
    /// At least the `needed` conversations with the latest matching
    /// messages (all of them when there are fewer), latest first.
    fn message_hits(&mut self, scope: ConversationScope, query: &str, needed: usize) -> StoreResult<Hits> {
        let mut hits = Hits::default();
        let limit = u32::try_from(needed).unwrap_or(u32::MAX);
        if self.dialect().matches_newest_first() {
            let (mut before, mut batch) = (i64::MAX, limit.saturating_mul(4).max(FIRST_BATCH));
            loop {
                let rows = self.all(SEARCH_NEWEST { scope, query, before, limit: batch }, message_hit)?;
                let exhausted = rows.len() < batch as usize;
                for f in rows {
                    before = f.message.map_or(before, |m| m.0);
                    hits.add(f);
                }
                if exhausted || hits.found.len() >= needed {
                    return Ok(hits);
                }
                batch = batch.saturating_mul(4);
            }
        }
        let window = limit.saturating_mul(RECENT_PER_CONVERSATION).clamp(RECENT_MESSAGES, MAX_RECENT_MESSAGES);
        for f in self.all(SEARCH_RECENT { scope, query, window }, message_hit)? {
            hits.add(f);
        }
        if hits.found.len() >= needed {
            return Ok(hits);
        }
        let mut hits = Hits::default();
        for f in self.all(SEARCH_INDEXED { scope, query, limit }, message_hit)? {
            hits.add(f);
        }
        Ok(hits)
    }
}

impl Tx<'_> {
    /// The `needed` conversations of matching visitors latest active.
    fn visitor_hits(&mut self, scope: ConversationScope, query: &str, needed: usize) -> StoreResult<Vec<Hit>> {
        let limit = u32::try_from(needed).unwrap_or(u32::MAX);
        let hit = |r: &dyn Row| Ok(Hit { at: r.ts("at")?, conversation: ConversationId(r.i64("conversation_id")?), message: None });
        let tenant = scope.tenant;
        let ids = self.all(SEARCH_VISITOR_IDS { tenant, query, limit: MATCHED_VISITORS + 1 }, |r| r.i64("visitor_id"))?;
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        if ids.len() > MATCHED_VISITORS as usize {
            return self.all(SEARCH_VISITORS { scope, query, limit }, hit);
        }
        self.all(SEARCH_VISITOR_CONVERSATIONS { scope, visitors: &IdList::new(ids), limit }, hit)
    }
}

impl SearchRead for Tx<'_> {
    fn search(&mut self, scope: ConversationScope, query: &SearchQuery, limit: u32, offset: u64) -> StoreResult<Vec<SearchHit>> {
        let text = self.dialect().search_query(&query.words);
        let needed = usize::try_from(offset.saturating_add(u64::from(limit))).unwrap_or(usize::MAX);
        let mut hits = self.message_hits(scope, &text, needed)?;
        for f in self.visitor_hits(scope, &text, needed)? {
            hits.add(f);
        }
        let mut found = hits.found;
        found.sort_by(|a, b| b.at.cmp(&a.at).then(b.conversation.0.cmp(&a.conversation.0)));
        let page: Vec<Hit> = found.into_iter().skip(usize::try_from(offset).unwrap_or(usize::MAX)).take(limit as usize).collect();

        let ids = IdList::new(page.iter().map(|f| f.conversation.0));
        let mut conversations: HashMap<ConversationId, ConversationDetails> =
            self.all(SEARCH_DETAILS { scope, ids: &ids }, details)?.into_iter().map(|d| (d.conversation.id, d)).collect();
        let ids = IdList::new(page.iter().filter_map(|f| f.message.map(|m| m.0)));
        let mut messages: HashMap<MessageId, Message> =
            self.all(SEARCH_MESSAGES { scope, ids: &ids }, message)?.into_iter().map(|m| (m.id, m)).collect();
        Ok(page
            .into_iter()
            .filter_map(|f| {
                let conversation = conversations.remove(&f.conversation)?;
                Some(SearchHit { conversation, message: f.message.and_then(|id| messages.remove(&id)) })
            })
            .collect())
    }
}
