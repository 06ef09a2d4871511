//! The feed: the ordered log the streams, catch-up and webhook fan-out
//! read (see `parley_domain::feed`).
//!
//! Entries are read in (tx, id) order and only below
//! `Dialect::visible_tx`, in the same statement, so the bound and the rows
//! come from one snapshot.

use parley_domain::Timestamp;
use parley_domain::events::EventKind;
use parley_domain::feed::{FeedBlocker, FeedEntry, FeedItem, FeedMark, Position};
use parley_domain::model::*;
use parley_domain::store::StoreResult;
use parley_domain::store::ops::{FeedRead, FeedWrite};

use super::conversations::{CONVERSATION_COLS, DETAILS_COLS, DETAILS_FROM, MESSAGE_COLS, SCOPE, VISITOR_COLS, details, message, scoped};
use super::webhooks::FAN_OUT;
use super::{Dialect, Row, Tx, args, statements};

/// An entry with its conversation (as it is now) and its message, in the
/// caller's scope (bound as ?1 to ?4); `condition` adds the rest.
fn items(d: Dialect, condition: &str) -> String {
    let (after, visible) = (d.after_position("f", "?7", "?8"), d.visible_tx());
    format!(
        "SELECT f.tx AS f_tx, f.id AS f_id, f.kind AS f_kind, f.occurred_at AS f_occurred_at,
                {CONVERSATION_COLS}, {VISITOR_COLS}, {DETAILS_COLS}, {MESSAGE_COLS}
         {DETAILS_FROM}
         JOIN events f ON f.conversation_id = c.id AND f.tenant_id = c.tenant_id
         LEFT JOIN messages m ON m.id = f.message_id AND m.tenant_id = f.tenant_id
         WHERE {SCOPE} AND f.tenant_id = ?1 AND {condition}
           AND (?6 = FALSE OR f.widget = TRUE)
           AND {after} AND f.tx < {visible}
         ORDER BY f.tx, f.id LIMIT ?9"
    )
}

statements! {
    /// The position is the writing transaction's (see `Dialect::writing_tx`).
    INSERT_ENTRY[Text, Int, Text, Text, Int, Int, Int, Int, Bool, Bool](d) => format!(
        "INSERT INTO events (event_id, tenant_id, kind, payload, occurred_at, dispatched_at,
                             conversation_id, site_id, message_id, widget, webhook, tx)
         VALUES (?1, ?2, ?3, ?4, ?5, ?5, ?6, ?7, ?8, ?9, ?10, {})",
        d.writing_tx()
    ),
    FEED_HEAD[Int](d) => format!(
        "SELECT f.tx AS tx, f.id AS id, f.occurred_at AS at FROM events f
         WHERE f.tenant_id = ?1 AND f.tx < {} ORDER BY f.tx DESC, f.id DESC LIMIT 1",
        d.visible_tx()
    ),
    VISITOR_FEED_HEAD[Int, Int](d) => format!(
        "SELECT f.tx AS tx, f.id AS id, f.occurred_at AS at FROM events f
         WHERE f.tenant_id = ?1 AND f.conversation_id = ?2 AND f.widget = TRUE AND f.tx < {}
         ORDER BY f.tx DESC, f.id DESC LIMIT 1",
        d.visible_tx()
    ),
    FEED_ENTRY_AT[Int, Int, Int](_) => "SELECT occurred_at AS at FROM events WHERE tenant_id = ?1 AND id = ?2 AND tx = ?3".into(),
    /// Every conversation of the scope: ?5 is null (bound like the next).
    FEED_AFTER[Int, Int, Int, Bool, Int, Bool, Int, Int, Int](d) => items(d, "?5 IS NULL"),
    CONVERSATION_FEED_AFTER[Int, Int, Int, Bool, Int, Bool, Int, Int, Int](d) => items(d, "f.conversation_id = ?5"),
    FEED_TAIL[Int, Int, Int](d) => format!(
        "SELECT f.tx AS tx, f.id AS id, f.tenant_id AS tenant_id, f.conversation_id AS conversation_id FROM events f
         WHERE {} AND f.tx < {} ORDER BY f.tx, f.id LIMIT ?3",
        d.after_position("f", "?1", "?2"),
        d.visible_tx()
    ),
    FEED_END[](d) => format!(
        "SELECT f.tx AS tx, f.id AS id FROM events f WHERE f.tx < {} ORDER BY f.tx DESC, f.id DESC LIMIT 1",
        d.visible_tx()
    ),
    /// The first entry past the bound, found by the position index: a
    /// `MIN(occurred_at)` here is planned as a walk of the time index
    /// that filters every retained entry, and the follower asks this at
    /// every step. It is the entry of the oldest transaction held back,
    /// which in practice is also the earliest stamped; for a threshold
    /// of seconds the difference does not matter.
    FEED_HELD_BACK[](d) => format!("SELECT occurred_at AS at FROM events WHERE tx >= {} ORDER BY tx, id LIMIT 1", d.visible_tx()),
    FEED_BLOCKER[](d) => d.feed_blocker(),
}

fn position(r: &dyn Row, tx: &str, id: &str) -> StoreResult<Position> {
    Ok(Position { tx: r.i64(tx)?, id: r.i64(id)? })
}

fn item(r: &dyn Row) -> StoreResult<FeedItem> {
    let message = match r.int("m_id")? {
        Some(_) => Some(message(r)?),
        None => None,
    };
    Ok(FeedItem {
        position: position(r, "f_tx", "f_id")?,
        kind: r.parsed("f_kind", EventKind::parse)?,
        occurred_at: r.ts("f_occurred_at")?,
        conversation: details(r)?,
        message,
    })
}

impl FeedRead for Tx<'_> {
    fn feed_head(&mut self, tenant: TenantId) -> StoreResult<Option<(Position, Timestamp)>> {
        self.one(&FEED_HEAD, args![tenant], |r| Ok((position(r, "tx", "id")?, r.ts("at")?)))
    }

    fn visitor_feed_head(&mut self, tenant: TenantId, conversation: ConversationId) -> StoreResult<Option<(Position, Timestamp)>> {
        self.one(&VISITOR_FEED_HEAD, args![tenant, conversation], |r| Ok((position(r, "tx", "id")?, r.ts("at")?)))
    }

    fn feed_entry_at(&mut self, tenant: TenantId, p: Position) -> StoreResult<Option<Timestamp>> {
        self.one(&FEED_ENTRY_AT, args![tenant, p.id, p.tx], |r| r.ts("at"))
    }

    fn feed_after(&mut self, scope: ConversationScope, after: Position, widget: bool, limit: u32) -> StoreResult<Vec<FeedItem>> {
        self.all(&FEED_AFTER, &scoped!(scope; None::<i64>, widget, after.tx, after.id, limit), item)
    }

    fn conversation_feed_after(
        &mut self,
        scope: ConversationScope,
        conversation: ConversationId,
        after: Position,
        widget: bool,
        limit: u32,
    ) -> StoreResult<Vec<FeedItem>> {
        self.all(&CONVERSATION_FEED_AFTER, &scoped!(scope; conversation, widget, after.tx, after.id, limit), item)
    }

    fn feed_tail(&mut self, after: Position, limit: u32) -> StoreResult<Vec<FeedMark>> {
        self.all(&FEED_TAIL, args![after.tx, after.id, limit], |r| {
            Ok(FeedMark {
                position: position(r, "tx", "id")?,
                tenant: TenantId(r.i64("tenant_id")?),
                conversation: r.int("conversation_id")?.map(ConversationId),
            })
        })
    }

    fn feed_end(&mut self) -> StoreResult<Position> {
        Ok(self.one(&FEED_END, args![], |r| position(r, "tx", "id"))?.unwrap_or(Position::START))
    }

    fn feed_held_back_since(&mut self) -> StoreResult<Option<Timestamp>> {
        if !self.dialect().holds_feed_back() {
            return Ok(None);
        }
        Ok(self.one(&FEED_HELD_BACK, args![], |r| r.opt_ts("at"))?.flatten())
    }

    fn feed_blocker(&mut self) -> StoreResult<Option<FeedBlocker>> {
        if !self.dialect().holds_feed_back() {
            return Ok(None);
        }
        self.one(&FEED_BLOCKER, args![], |r| {
            Ok(FeedBlocker {
                pid: r.i64("pid")?,
                database: r.text("database")?,
                application: r.text("application")?,
                state: r.text("state")?,
                running: r.int("running_us")?.and_then(|us| u64::try_from(us).ok()).map(std::time::Duration::from_micros),
            })
        })
    }
}

impl FeedWrite for Tx<'_> {
    fn append_event(&mut self, tenant: TenantId, entry: &FeedEntry) -> StoreResult<()> {
        let e = &entry.event;
        let (conversation, site) = entry.conversation.map_or((None, None), |(c, s)| (Some(c), Some(s)));
        // Neither needs an answer: the fan-out finds the entry by its
        // public id, so both can go with the unit's next round trip.
        self.defer(
            &INSERT_ENTRY,
            args![
                &e.event_id,
                tenant,
                e.kind.as_str(),
                &e.payload,
                e.occurred_at,
                conversation,
                site,
                entry.message,
                entry.widget,
                entry.webhook
            ],
            false,
        )?;
        if entry.webhook {
            self.defer(&FAN_OUT, args![tenant, &e.event_id, e.kind.as_str(), e.occurred_at], true)?;
        }
        self.effects.feed_appended = true;
        Ok(())
    }
}
