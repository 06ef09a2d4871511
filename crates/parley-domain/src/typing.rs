//! Typing indicators: "the other side is writing", sent to the streams
//! of the conversation's other side and nowhere else. They are not
//! stored, so they are never in the feed, a catch-up, a replay after a
//! reconnect or a webhook; a stream that misses one misses five seconds
//! of a hint.
//!
//! A sender is heard at most once every [`AT_MOST_EVERY`] (extra calls
//! are answered the same and dropped before any database read), and a
//! client shows an indicator for [`SHOWN_FOR`] unless another comes. On
//! PostgreSQL each indicator is also broadcast to the other instances
//! (`Database::broadcast`, a NOTIFY), whose streams get it the same way.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use tokio::sync::broadcast;

use crate::error::DomainError;
use crate::model::*;
use crate::store::Database;
use crate::widget::{Caller, WidgetService};

/// How long a client shows an indicator.
pub const SHOWN_FOR: Duration = Duration::from_secs(5);
/// The least time between two indicators of one sender.
pub const AT_MOST_EVERY: Duration = Duration::from_secs(2);
/// Senders remembered for the limit in each of its two windows: past
/// that, more indicators are dropped until the window turns, so a flood
/// of made-up senders costs a bounded amount of memory.
const REMEMBERED: usize = 10_000;
/// The longest conversation public id there is (`conv_` and 24 more).
const PUBLIC_ID_MAX: usize = 64;
/// Visitor indicators one client address may send, per second and in a
/// burst: far above what the people behind one office's address type,
/// far below what would fill a window of [`REMEMBERED`] senders.
const PER_ADDRESS_PER_SECOND: u32 = 20;
const PER_ADDRESS_BURST: u32 = 40;
/// Indicators a slow stream may fall behind by before it skips some.
const BUFFER: usize = 1_024;

/// Who is typing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Side {
    Visitor,
    Operator,
}

/// One indicator, as streams get it and instances tell each other.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Typing {
    pub tenant: i64,
    pub site: i64,
    pub conversation: i64,
    pub public_id: String,
    pub side: Side,
    /// The operator's id, for an operator.
    pub operator: Option<i64>,
    /// The name the other side sees: the operator's, or the visitor's if it gave one.
    pub name: Option<String>,
}

impl Typing {
    fn of(c: Conversation, side: Side, operator: Option<OperatorId>, name: Option<String>) -> Self {
        Self {
            tenant: c.tenant_id.0,
            site: c.site_id.0,
            conversation: c.id.0,
            public_id: c.public_id,
            side,
            operator: operator.map(|o| o.0),
            name,
        }
    }

    /// Whether the widget stream of `conversation` shows it: an operator
    /// typing there.
    pub fn for_visitor(&self, conversation: ConversationId) -> bool {
        self.side == Side::Operator && self.conversation == conversation.0
    }
}

#[derive(Clone)]
pub struct TypingService {
    db: Database,
    widget: WidgetService,
    bus: broadcast::Sender<Typing>,
    /// When each visitor was last heard, by its token and conversation.
    visitors: Arc<Mutex<Recent>>,
    /// When each operator was last heard, by its id and conversation: a
    /// window of its own, which no flood of visitors' fills.
    operators: Arc<Mutex<Recent>>,
    per_address: Arc<governor::DefaultKeyedRateLimiter<crate::limits::ClientKey>>,
}

/// Senders heard lately, in two windows of [`AT_MOST_EVERY`]: the
/// current one and the one before, which is dropped as a whole when the
/// current one turns, so nothing needs sweeping.
struct Recent {
    current: HashMap<String, Instant>,
    previous: HashMap<String, Instant>,
    turned: Instant,
}

impl TypingService {
    /// Starts hearing other instances' indicators on the current runtime
    /// until the database closes.
    pub fn new(db: Database, widget: WidgetService) -> Self {
        let bus = broadcast::channel(BUFFER).0;
        let mut heard = db.heard();
        let forward = bus.clone();
        tokio::spawn(async move {
            loop {
                match heard.recv().await {
                    Ok(text) => {
                        if let Some(typing) = text.strip_prefix("typing ").and_then(|json| serde_json::from_str::<Typing>(json).ok()) {
                            let _ = forward.send(typing);
                        }
                    }
                    Err(broadcast::error::RecvError::Lagged(_)) => {}
                    Err(broadcast::error::RecvError::Closed) => return,
                }
            }
        });
        let window = || Arc::new(Mutex::new(Recent { current: HashMap::new(), previous: HashMap::new(), turned: Instant::now() }));
        let quota = governor::Quota::per_second(std::num::NonZeroU32::MIN.saturating_add(PER_ADDRESS_PER_SECOND - 1))
            .allow_burst(std::num::NonZeroU32::MIN.saturating_add(PER_ADDRESS_BURST - 1));
        let per_address = Arc::new(governor::RateLimiter::keyed(quota));
        Self { db, widget, bus, visitors: window(), operators: window(), per_address }
    }

    /// What a stream hears from now on (filtered by the stream).
    pub fn subscribe(&self) -> broadcast::Receiver<Typing> {
        self.bus.subscribe()
    }

    /// The visitor of conversation `public_id` is typing: its operators'
    /// streams are told. Answers the same whether this call was sent on
    /// or dropped by the limit.
    pub async fn visitor(&self, caller: &Caller, token: &str, public_id: String) -> Result<(), DomainError> {
        let context = self.widget.resolve_typing(token, caller).await?;
        // Not a conversation id this service makes: nothing to remember.
        if public_id.len() > PUBLIC_ID_MAX || !public_id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-') {
            return Err(DomainError::NotFound);
        }
        if self.per_address.check_key(&caller.key()).is_err() {
            return Err(DomainError::rate_limited(Duration::from_secs(1)));
        }
        if self.per_address.len() > REMEMBERED {
            self.per_address.retain_recent();
        }
        if !first_in_a_while(&self.visitors, format!("{token} {public_id}")) {
            return Ok(());
        }
        let scope = context.scope();
        let (conversation, visitor) =
            self.db.read(move |r| r.conversation_and_visitor_by_public_id(scope.into(), &public_id)?.ok_or(DomainError::NotFound)).await?;
        if context.installation.identity.required && visitor.user_id.is_none() {
            return Err(DomainError::IdentityRequired);
        }
        self.send(Typing::of(conversation, Side::Visitor, None, visitor.profile.name));
        Ok(())
    }

    /// An operator is typing in conversation `id`, which it must be able
    /// to see: the visitor's widget is told.
    pub async fn operator(&self, session: &Session, id: ConversationId) -> Result<(), DomainError> {
        let scope = session.operator.scope();
        if !first_in_a_while(&self.operators, format!("{} {}", scope.operator.0, id.0)) {
            // Still refuses what the operator may not see: the limit
            // must not become a way to tell conversations apart.
            return self.db.read(move |r| r.conversation(scope.into(), id)?.map(drop).ok_or(DomainError::NotFound)).await;
        }
        let conversation = self.db.read(move |r| r.conversation(scope.into(), id)?.ok_or(DomainError::NotFound)).await?;
        self.send(Typing::of(conversation, Side::Operator, Some(scope.operator), Some(session.operator.name.clone())));
        Ok(())
    }

    fn send(&self, typing: Typing) {
        if let Ok(json) = serde_json::to_string(&typing) {
            self.db.broadcast(format!("typing {json}"));
        }
        // No stream listening here is no failure.
        let _ = self.bus.send(typing);
    }
}

/// Whether `sender` was not heard within [`AT_MOST_EVERY`] in `window`;
/// it counts as heard now if so. A full window drops the rest until it
/// turns, so made-up senders cost bounded memory.
fn first_in_a_while(window: &Mutex<Recent>, sender: String) -> bool {
    let now = Instant::now();
    let mut recent = window.lock().unwrap_or_else(|p| p.into_inner());
    if now.duration_since(recent.turned) >= AT_MOST_EVERY {
        recent.previous = std::mem::take(&mut recent.current);
        recent.turned = now;
    }
    let heard = recent.current.get(&sender).or_else(|| recent.previous.get(&sender));
    if heard.is_some_and(|at| now.duration_since(*at) < AT_MOST_EVERY) || recent.current.len() >= REMEMBERED {
        return false;
    }
    recent.current.insert(sender, now);
    true
}
