//! Searching conversations: the words of a query through the database's
//! full-text index of messages (`Dialect::message_matches`), or the whole
//! query in the visitor's name or email, in the operator's scope.

use std::collections::HashMap;

use parley_domain::model::*;
use parley_domain::search::{SearchHit, SearchQuery};
use parley_domain::store::StoreResult;
use parley_domain::store::ops::SearchRead;

use super::conversations::{
    CONVERSATION_COLS, DETAILS_COLS, DETAILS_FROM, MESSAGE_COLS, MESSAGES_FROM, SCOPE, VISITOR_COLS, details, message,
};
use super::{IdList, Tx, statements};

statements! {
    /// The page is chosen first, as the inbox's is (see `CONVERSATIONS`),
    /// each conversation with the id of its latest matching message.
    SEARCH<'a>(scope: ConversationScope, query: &'a str, like: Option<&'a str>, limit: u32, offset: u64) => |d| format!(
        "SELECT {CONVERSATION_COLS}, {VISITOR_COLS}, {DETAILS_COLS}, page.match_id AS match_id
         FROM (SELECT c.id AS page_id, hits.match_id AS match_id
               FROM conversations c
               JOIN visitors v ON v.id = c.visitor_id AND v.tenant_id = c.tenant_id
               LEFT JOIN (SELECT m.conversation_id AS conversation_id, MAX(m.id) AS match_id FROM messages m
                          WHERE m.tenant_id = :tenant AND {}
                          GROUP BY m.conversation_id) hits ON hits.conversation_id = c.id
               WHERE {SCOPE}
                 AND (hits.match_id IS NOT NULL OR {lower}(v.name) LIKE :like ESCAPE '\\' OR {lower}(v.email) LIKE :like ESCAPE '\\')
               ORDER BY c.last_message_at DESC, c.id DESC LIMIT :limit OFFSET :offset) page
         {}
         ORDER BY c.last_message_at DESC, c.id DESC",
        d.message_matches(),
        DETAILS_FROM.replacen("FROM conversations c", "JOIN conversations c ON c.id = page.page_id", 1),
        lower = d.lower(),
    ),
    SEARCH_MESSAGES<'a>(scope: ConversationScope, ids: &'a IdList) => |d| format!(
        "SELECT {MESSAGE_COLS} {MESSAGES_FROM} WHERE {SCOPE} AND m.id IN ({})",
        d.id_list(":ids")
    ),
}

impl SearchRead for Tx<'_> {
    fn search(&mut self, scope: ConversationScope, query: &SearchQuery, limit: u32, offset: u64) -> StoreResult<Vec<SearchHit>> {
        let (text, like) = (self.dialect().search_query(&query.words), query.like_pattern());
        let like = like.as_deref();
        let found =
            self.all(SEARCH { scope, query: &text, like, limit, offset }, |r| Ok((details(r)?, r.int("match_id")?.map(MessageId))))?;
        let ids = IdList::new(found.iter().filter_map(|(_, m)| m.map(|m| m.0)));
        let mut messages: HashMap<MessageId, Message> =
            self.all(SEARCH_MESSAGES { scope, ids: &ids }, message)?.into_iter().map(|m| (m.id, m)).collect();
        Ok(found
            .into_iter()
            .map(|(conversation, matched)| SearchHit { conversation, message: matched.and_then(|id| messages.remove(&id)) })
            .collect())
    }
}
