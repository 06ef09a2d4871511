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

use super::conversations::{CONVERSATION_COLS, DETAILS_COLS, DETAILS_FROM, MESSAGE_COLS, SCOPE, VISITOR_COLS, details, message};
use super::webhooks::{DELIVERY_INSERT, FAN_OUT, subscribed};
use super::{Dialect, Row, Tx, statements};

/// An entry with its conversation (as it is now) and its message, in the
/// caller's `scope`, where `position` holds (the entries after the
/// position `:tx`, `:id` that the caller reads), in `order`. The entry's
/// tenant is bound by `position`, so that the planner sees only the
/// bounds the caller chose (see `Dialect::tenant_entries_after`).
fn items(d: Dialect, position: &str, order: &str) -> String {
    format!(
        "SELECT f.tx AS f_tx, f.id AS f_id, f.kind AS f_kind, f.occurred_at AS f_occurred_at,
                {CONVERSATION_COLS}, {VISITOR_COLS}, {DETAILS_COLS}, {MESSAGE_COLS}
         {DETAILS_FROM}
         JOIN events f ON f.conversation_id = c.id
         LEFT JOIN messages m ON m.id = f.message_id AND m.tenant_id = f.tenant_id
         WHERE {SCOPE} AND {position}
           AND (:widget = FALSE OR f.widget = TRUE)
           AND f.tx < {visible}
         ORDER BY {order} LIMIT :limit",
        visible = d.visible_tx()
    )
}

statements! {
    /// An entry, at the writing transaction's position (see
    /// `Dialect::writing_tx`); where the dialect chains writes, with its
    /// webhook deliveries (see `webhooks::subscribed`), which then find
    /// the entry without looking it up.
    INSERT_ENTRY<'a>(
        event_id: &'a str, tenant: TenantId, kind: &'a str, payload: &'a str, occurred_at: Timestamp,
        conversation: Option<ConversationId>, site: Option<SiteId>, message: Option<MessageId>, widget: bool, webhook: bool,
    ) => |d| {
        let insert = format!(
            "INSERT INTO events (event_id, tenant_id, kind, payload, occurred_at, dispatched_at,
                                 conversation_id, site_id, message_id, widget, webhook, tx)
             VALUES (:event_id, :tenant, :kind, :payload, :occurred_at, :occurred_at,
                     :conversation, :site, :message, :widget, :webhook, {})",
            d.writing_tx()
        );
        if d.chains_writes() {
            format!(
                "WITH entry AS ({insert} RETURNING id)
                 {DELIVERY_INSERT} SELECT :tenant, w.id, entry.id, :occurred_at, :occurred_at FROM entry CROSS JOIN webhook_endpoints w
                 WHERE :webhook AND {}",
                subscribed(d)
            )
        } else {
            insert
        }
    },
    FEED_HEAD(tenant: TenantId) => |d| {
        let (before, order) = d.tenant_entries_before("f", ":tenant", d.visible_tx());
        format!("SELECT f.tx AS tx, f.id AS id, f.occurred_at AS at FROM events f WHERE {before} ORDER BY {order} LIMIT 1")
    },
    VISITOR_FEED_HEAD(tenant: TenantId, conversation: ConversationId) => |d| format!(
        "SELECT f.tx AS tx, f.id AS id, f.occurred_at AS at FROM events f
         WHERE f.tenant_id = :tenant AND f.conversation_id = :conversation AND f.widget = TRUE AND f.tx < {}
         ORDER BY f.tx DESC, f.id DESC LIMIT 1",
        d.visible_tx()
    ),
    FEED_ENTRY_AT(tenant: TenantId, id: i64, tx: i64) => |_|
        "SELECT occurred_at AS at FROM events WHERE tenant_id = :tenant AND id = :id AND tx = :tx".into(),
    /// Every conversation of the scope.
    FEED_AFTER(scope: ConversationScope, widget: bool, tx: i64, id: i64, limit: u32) => |d| {
        let (after, order) = d.tenant_entries_after("f", ":tenant", ":tx", ":id");
        items(d, &after, &order)
    },
    /// One conversation's entries: its index (`conversation_id`, `tx`,
    /// `id`) holds few, whatever the plan.
    CONVERSATION_FEED_AFTER(scope: ConversationScope, conversation: ConversationId, widget: bool, tx: i64, id: i64, limit: u32) => |d|
        items(d, &format!("f.tenant_id = :tenant AND f.conversation_id = :conversation AND {}", d.after_position("f", ":tx", ":id")), "f.tx, f.id"),
    FEED_TAIL(tx: i64, id: i64, limit: u32) => |d| format!(
        "SELECT f.tx AS tx, f.id AS id, f.tenant_id AS tenant_id, f.conversation_id AS conversation_id FROM events f
         WHERE {} AND f.tx < {} ORDER BY f.tx, f.id LIMIT :limit",
        d.after_position("f", ":tx", ":id"),
        d.visible_tx()
    ),
    FEED_END() => |d| format!(
        "SELECT f.tx AS tx, f.id AS id FROM events f WHERE f.tx < {} ORDER BY f.tx DESC, f.id DESC LIMIT 1",
        d.visible_tx()
    ),
    /// The first entry past the bound, found by the position index: a
    /// `MIN(occurred_at)` here is planned as a walk of the time index
    /// that filters every retained entry, and the follower asks this at
    /// every step. It is the entry of the oldest transaction held back,
    /// which in practice is also the earliest stamped; for a threshold
    /// of seconds the difference does not matter.
    FEED_HELD_BACK() => |d| format!("SELECT occurred_at AS at FROM events WHERE tx >= {} ORDER BY tx, id LIMIT 1", d.visible_tx()),
    FEED_BLOCKER() => |d| d.feed_blocker(),
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
        self.one(FEED_HEAD { tenant }, |r| Ok((position(r, "tx", "id")?, r.ts("at")?)))
    }

    fn visitor_feed_head(&mut self, tenant: TenantId, conversation: ConversationId) -> StoreResult<Option<(Position, Timestamp)>> {
        self.one(VISITOR_FEED_HEAD { tenant, conversation }, |r| Ok((position(r, "tx", "id")?, r.ts("at")?)))
    }

    fn feed_entry_at(&mut self, tenant: TenantId, p: Position) -> StoreResult<Option<Timestamp>> {
        self.one(FEED_ENTRY_AT { tenant, id: p.id, tx: p.tx }, |r| r.ts("at"))
    }

    fn feed_after(&mut self, scope: ConversationScope, after: Position, widget: bool, limit: u32) -> StoreResult<Vec<FeedItem>> {
        self.all(FEED_AFTER { scope, widget, tx: after.tx, id: after.id, limit }, item)
    }

    fn conversation_feed_after(
        &mut self,
        scope: ConversationScope,
        conversation: ConversationId,
        after: Position,
        widget: bool,
        limit: u32,
    ) -> StoreResult<Vec<FeedItem>> {
        self.all(CONVERSATION_FEED_AFTER { scope, conversation, widget, tx: after.tx, id: after.id, limit }, item)
    }

    fn feed_tail(&mut self, after: Position, limit: u32) -> StoreResult<Vec<FeedMark>> {
        self.all(FEED_TAIL { tx: after.tx, id: after.id, limit }, |r| {
            Ok(FeedMark {
                position: position(r, "tx", "id")?,
                tenant: TenantId(r.i64("tenant_id")?),
                conversation: r.int("conversation_id")?.map(ConversationId),
            })
        })
    }

    fn feed_end(&mut self) -> StoreResult<Position> {
        Ok(self.one(FEED_END {}, |r| position(r, "tx", "id"))?.unwrap_or(Position::START))
    }

    fn feed_held_back_since(&mut self) -> StoreResult<Option<Timestamp>> {
        if !self.dialect().holds_feed_back() {
            return Ok(None);
        }
        Ok(self.one(FEED_HELD_BACK {}, |r| r.opt_ts("at"))?.flatten())
    }

    fn feed_blocker(&mut self) -> StoreResult<Option<FeedBlocker>> {
        if !self.dialect().holds_feed_back() {
            return Ok(None);
        }
        self.one(FEED_BLOCKER {}, |r| {
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
        // No answer is needed (on PostgreSQL it goes with the unit's next
        // round trip). Where the entry's statement inserts its deliveries,
        // the rows it changes are the deliveries added, which wake the
        // worker; elsewhere FAN_OUT follows and finds the entry by its
        // public id.
        let chained = self.dialect().chains_writes();
        let params = INSERT_ENTRY {
            event_id: &e.event_id,
            tenant,
            kind: e.kind.as_str(),
            payload: &e.payload,
            occurred_at: e.occurred_at,
            conversation,
            site,
            message: entry.message,
            widget: entry.widget,
            webhook: entry.webhook,
        };
        self.defer(params, chained && entry.webhook)?;
        if entry.webhook && !chained {
            self.defer(FAN_OUT { tenant, event_id: &e.event_id, kind: e.kind.as_str(), at: e.occurred_at }, true)?;
        }
        self.effects.feed_appended = true;
        if let Some(c) = conversation {
            self.note_changed(c);
        }
        Ok(())
    }
}
