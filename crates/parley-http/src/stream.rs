//! Server-Sent Events: the widget's stream of one conversation and the
//! operators' stream of everything they can see.
//!
//! A stream is a [`Follower`] of the feed turned into `text/event-stream`:
//! each event carries its cursor as `id`, so EventSource resumes with
//! `Last-Event-ID` after any drop. Between events a `: keep-alive`
//! comment keeps proxies from closing an idle connection. Whoever opened
//! the stream is checked again while it runs (an operator's token, a
//! widget's installation) and the stream ends when that no longer holds,
//! when its client's cursor is unknown (`reset`), or when the instance
//! shuts down.

use std::convert::Infallible;
use std::time::Duration;

use axum::http::header::HeaderName;
use axum::http::{HeaderMap, HeaderValue};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::{StreamExt, stream};
use parley_domain::DomainError;
use parley_domain::auth::{SessionGuard, SignIn};
use parley_domain::continuity::presence::PresenceGuard;
use parley_domain::feed::{Catchup, Cursor, FeedItem, Follower, Reader, Slot, Step, StreamSlots};
use parley_domain::limits::ClientKey;
use parley_domain::metrics::Metrics;
use parley_domain::model::OperatorScope;
use parley_domain::typing::{Side, Typing};
use parley_domain::widget::Caller;
use std::collections::HashMap;
use std::sync::Arc;
use tokio::sync::broadcast;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::AppState;
use crate::error::ApiError;

#[derive(Clone, Copy, Debug)]
pub struct StreamSettings {
    /// A comment comes at least this often (`PARLEY_STREAM_KEEPALIVE`).
    pub keepalive: Duration,
    /// Streams one client address may hold (`PARLEY_STREAMS_PER_ADDRESS`).
    pub per_address: usize,
    /// Streams all addresses together may hold: connections kept for
    /// other requests, since the overload rule never closes a stream.
    pub total: usize,
}

/// Longest time a stream goes on without checking who holds it: a
/// revoked token's stream ends within this.
const RECHECK_AT_MOST: Duration = Duration::from_secs(5);

/// The streams of this instance: their settings, their places per
/// address, and the signal that ends them all at shutdown.
#[derive(Clone)]
pub struct Streams {
    settings: StreamSettings,
    slots: Arc<StreamSlots>,
    closing: CancellationToken,
}

impl Streams {
    pub fn new(settings: StreamSettings, metrics: &Metrics) -> Self {
        Self { settings, slots: StreamSlots::new(settings.per_address, settings.total, metrics), closing: CancellationToken::new() }
    }

    /// Ends every stream, now and any opened later: the server's drain
    /// then finds connections that are finishing, not ones that never
    /// would.
    pub fn close(&self) {
        self.closing.cancel();
    }

    /// A place for one more stream of this client address, taken before
    /// anything else is done for it.
    pub(crate) fn take(&self, key: ClientKey) -> Result<Slot, DomainError> {
        self.slots.take(key)
    }

    fn recheck(&self) -> Duration {
        self.settings.keepalive.min(RECHECK_AT_MOST)
    }
}

/// Who opened a stream, checked again while it runs.
pub(crate) enum Holder {
    /// An operator's bearer token, and the scope the stream reads with:
    /// the stream ends when the token expires or is revoked, the operator
    /// is disabled, or its role changes (the client reconnects with its
    /// new scope).
    Operator { token: String, kind: SignIn, scope: OperatorScope },
    /// A widget's installation token, used from the caller's origin, and
    /// the conversation's presence, which ends with the stream. The
    /// conversation is looked for again now and then (`looked_at`): an
    /// erased one ends the stream, and the widget, reconnecting to a 404,
    /// starts afresh.
    Visitor { caller: Caller, token: String, public_id: String, looked_at: Instant, _presence: PresenceGuard },
}

/// Reads a stream makes on its recheck timer after a wake-up whose read
/// found nothing: the entry it was woken for may become readable to it a
/// moment later (see `Live::step`).
const SUSPECT_READS: u8 = 3;

/// How many of its rechecks a visitor's stream makes for each look for
/// its conversation (a minute at the default keep-alive): a look is a
/// query per stream, the token's own recheck is cached.
const RECHECKS_PER_LOOK: u32 = 12;

/// What a recheck found.
enum Check {
    Allowed,
    Refused,
    /// The answer could not be had (the database is away): the stream
    /// goes on and asks again at the next check.
    Unknown,
}

impl Holder {
    /// What every read of the feed checks for this holder: an operator's
    /// token, in the snapshot of the entries it reads, so that no entry
    /// committed after the token ended is handed out.
    fn guard(&self) -> Option<SessionGuard> {
        match self {
            Holder::Operator { token, scope, .. } => Some(SessionGuard::new(token, *scope)),
            Holder::Visitor { .. } => None,
        }
    }

    /// Whether the holder still holds, asked while the stream is idle.
    async fn check(&mut self, s: &AppState, recheck: Duration) -> Check {
        let outcome = match self {
            Holder::Operator { token, kind, scope } => {
                s.auth.authenticate(token, *kind).await.map(|session| session.operator.scope() == *scope)
            }
            Holder::Visitor { caller, token, public_id, looked_at, .. } if looked_at.elapsed() >= recheck * RECHECKS_PER_LOOK => {
                *looked_at = Instant::now();
                s.widget.stream_reader(caller, token, public_id.clone()).await.map(|_| true)
            }
            Holder::Visitor { caller, token, .. } => s.widget.stream_allowed(caller, token).await.map(|()| true),
        };
        match outcome {
            Ok(true) => Check::Allowed,
            Ok(false) => Check::Refused,
            Err(DomainError::Store(_) | DomainError::Unavailable(_)) => Check::Unknown,
            Err(_) => Check::Refused,
        }
    }
}

/// Turns a feed item into the event the stream's client gets (its kind
/// and data; the stream adds its id), or `None` for an item it does not
/// show.
pub(crate) type Render = fn(&FeedItem, &parley_domain::attachments::links::Links) -> Option<Event>;

/// The typing indicators a stream shows: the other side's, in the
/// conversations its holder sees.
struct Indicators {
    receiver: broadcast::Receiver<Typing>,
    /// Conversations an operator's stream has checked, and whether the
    /// operator sees them, for a minute: one read per conversation, not
    /// one per indicator.
    seen: HashMap<i64, (bool, Instant)>,
}

/// How long an operator stream trusts what it learned about a
/// conversation it may see, for typing indicators. As short as a stream's own recheck: an agent taken off a site stops
/// hearing its visitors as soon as it stops reading its events.
const SEEN_FOR: Duration = RECHECK_AT_MOST;
/// Conversations an operator stream remembers for that.
const SEEN_AT_MOST: usize = 1_000;

/// A follower of the feed held by someone who is checked again while it
/// waits: what streams and long polls share.
struct Live {
    state: AppState,
    follower: Follower,
    holder: Holder,
    closing: CancellationToken,
    recheck: Duration,
    next_check: Instant,
    /// Whether to read before waiting: at the start, after a wake-up,
    /// and after a read that failed.
    read: bool,
    /// Whether the read to come follows a wake-up from the hub.
    woken: bool,
    /// Reads left on the recheck timer after a wake-up whose read found
    /// nothing (see `SUSPECT_READS`).
    suspect: u8,
    /// The place of its client address, if it holds one.
    _slot: Option<Slot>,
    /// A stream's typing indicators (a long poll has none).
    typing: Option<Indicators>,
}

/// What following gave next.
enum Next {
    /// Entries the reader sees, oldest first.
    Items(Vec<FeedItem>),
    /// The client's cursor is unknown or expired.
    Reset,
    /// The holder no longer passes its check.
    Refused,
    /// The instance is shutting down.
    Closing,
    /// The deadline came first.
    TimedOut,
    /// The other side is typing.
    Typing(Typing),
}

impl Live {
    fn new(state: AppState, follower: Follower, holder: Holder, slot: Option<Slot>) -> Self {
        let streams = &state.streams;
        let recheck = streams.recheck();
        let follower = match holder.guard() {
            Some(guard) => follower.guarded(guard),
            None => follower,
        };
        Live {
            follower,
            holder,
            closing: streams.closing.clone(),
            recheck,
            next_check: Instant::now() + recheck,
            read: true,
            woken: false,
            suspect: 0,
            _slot: slot,
            state,
            typing: None,
        }
    }

    /// Shows the other side's typing indicators too.
    fn with_typing(mut self) -> Self {
        self.typing = Some(Indicators { receiver: self.state.typing.subscribe(), seen: HashMap::new() });
        self
    }

    /// Waits for the next entries, until `deadline` if there is one.
    ///
    /// The feed is read at the start, after a wake-up from the hub and
    /// after a full page; on the timer only after a failed read, or a few
    /// times after a wake-up whose read found nothing: an idle follower
    /// costs no query but its holder's recheck. Every wait also watches
    /// shutdown.
    async fn next(&mut self, deadline: Option<Instant>) -> Next {
        let closing = self.closing.clone();
        tokio::select! {
            _ = closing.cancelled() => Next::Closing,
            next = self.step(deadline) => next,
        }
    }

    async fn step(&mut self, deadline: Option<Instant>) -> Next {
        loop {
            if Instant::now() >= self.next_check {
                if let Check::Refused = self.holder.check(&self.state, self.recheck).await {
                    return Next::Refused;
                }
                self.next_check = Instant::now() + self.recheck;
            }
            if self.read {
                self.read = false;
                match self.follower.read().await {
                    Ok(Some(Step::Items(items))) => {
                        self.suspect = 0;
                        return Next::Items(items);
                    }
                    Ok(Some(Step::Reset)) => return Next::Reset,
                    // A wake-up is spent by the read that follows it. On
                    // PostgreSQL that read's bound of what is readable can
                    // lag the follower's that published the entry, so a
                    // read that found nothing after a wake-up is followed
                    // by a few more on the recheck timer: an entry is never
                    // left waiting for the conversation's next one.
                    Ok(None) => self.suspect = if self.woken { SUSPECT_READS } else { self.suspect.saturating_sub(1) },
                    Err(DomainError::Unauthenticated) => return Next::Refused,
                    // Read again at the next wake-up or check: the cursor
                    // has not moved, so nothing is lost meanwhile.
                    Err(e) => {
                        self.read = true;
                        tracing::warn!(error = %e, "a stream could not read the feed; trying again");
                    }
                }
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return Next::TimedOut;
            }
            let failed = self.read;
            let again = failed || self.suspect > 0;
            let wake = deadline.map_or(self.next_check, |d| d.min(self.next_check));
            let reader = self.follower.reader();
            let (read, woken) = tokio::select! {
                _ = self.follower.changed() => (true, true),
                _ = tokio::time::sleep_until(wake) => (again, false),
                typing = indicator(&self.state, &self.holder, reader, &mut self.typing) => {
                    self.read = failed;
                    return Next::Typing(typing);
                }
            };
            self.read = read;
            self.woken = woken;
        }
    }
}

/// The next indicator a stream shows; never, for one without indicators.
async fn indicator(state: &AppState, holder: &Holder, reader: Reader, typing: &mut Option<Indicators>) -> Typing {
    let Some(indicators) = typing.as_mut() else { return std::future::pending().await };
    loop {
        let typing = match indicators.receiver.recv().await {
            Ok(typing) => typing,
            // Late indicators are worth nothing: skip to the present.
            Err(broadcast::error::RecvError::Lagged(_)) => continue,
            Err(broadcast::error::RecvError::Closed) => return std::future::pending().await,
        };
        let shown = match (holder, reader) {
            (Holder::Visitor { .. }, Reader::Visitor(_, conversation)) => typing.for_visitor(conversation),
            (Holder::Operator { scope, .. }, _) => {
                typing.side == Side::Visitor
                    && typing.tenant == scope.tenant.0
                    && sees(state, indicators, *scope, typing.conversation).await
            }
            _ => false,
        };
        if shown {
            return typing;
        }
    }
}

/// Whether the operator of `scope` sees conversation `id`, as the
/// stream last learned it.
async fn sees(state: &AppState, indicators: &mut Indicators, scope: OperatorScope, id: i64) -> bool {
    let now = Instant::now();
    if let Some((yes, at)) = indicators.seen.get(&id)
        && now.duration_since(*at) < SEEN_FOR
    {
        return *yes;
    }
    let Ok(yes) = state.inbox.sees(scope, parley_domain::model::ConversationId(id)).await else { return false };
    if indicators.seen.len() >= SEEN_AT_MOST {
        indicators.seen.retain(|_, (_, at)| now.duration_since(*at) < SEEN_FOR);
    }
    indicators.seen.insert(id, (yes, now));
    yes
}

/// Opens a stream in the place `slot` holds: from the client's
/// `Last-Event-ID`, else `from_query`, else the present, following the
/// feed as `reader` and showing what `render` makes of each entry. A
/// cursor the reader was never given (or that is not a cursor at all)
/// gets a `reset`.
pub(crate) async fn open(
    state: &AppState,
    slot: Slot,
    headers: &HeaderMap,
    from_query: Option<&str>,
    reader: Reader,
    holder: Holder,
    render: Render,
) -> Result<Response, ApiError> {
    let text = match last_event_id(headers) {
        Some(Ok(text)) => Some(text),
        Some(Err(NotText)) => return Ok(reset(slot)),
        None => from_query,
    };
    let from = match text {
        Some(text) => match state.feed.parse_cursor(reader, text) {
            Some(cursor) => Some(cursor),
            None => return Ok(reset(slot)),
        },
        None => None,
    };
    let follower = state.feed.follow(reader, from).await?;
    Ok(respond(Live::new(state.clone(), follower, holder, Some(slot)).with_typing(), render))
}

/// Opens an operator's stream (the mobile API's, or the web app's under
/// its session cookie): it reads as the operator's scope, shows every
/// entry it can read, notes included, and ends when `token` (of `kind`)
/// stops passing or the operator's scope changes.
pub(crate) async fn open_operator(
    state: &AppState,
    slot: Slot,
    headers: &HeaderMap,
    from_query: Option<Cursor>,
    token: String,
    kind: SignIn,
    scope: OperatorScope,
) -> Result<Response, ApiError> {
    let holder = Holder::Operator { token, kind, scope };
    let from_query = from_query.map(|c| c.to_string());
    open(state, slot, headers, from_query.as_deref(), Reader::Operator(scope.into()), holder, operator_event).await
}

/// An operator's catch-up (`Accept: application/json`): the entries after
/// `after` it can see, oldest first, at most a page; with `wait`, held
/// until one comes or the time is up (long polling). Without `after` it
/// answers at once with the present cursor.
///
/// A waiting long poll is a stream in all but its answer: it holds a
/// place of its address (`slot`, taken when it may wait), ends at
/// shutdown with what it has, its token is checked again while it waits,
/// and every read checks it in the snapshot of the entries, so that no
/// entry committed after a logout or a revocation reaches its holder.
pub(crate) async fn long_poll(
    state: &AppState,
    slot: Option<Slot>,
    after: Option<Cursor>,
    wait: Duration,
    token: String,
    kind: SignIn,
    scope: OperatorScope,
) -> Result<Catchup, ApiError> {
    let reader = Reader::Operator(scope.into());
    let Some(after) = after else {
        return Ok(Catchup { items: Vec::new(), cursor: state.feed.head(reader).await? });
    };
    let follower = state.feed.follow(reader, Some(after)).await?;
    let mut live = Live::new(state.clone(), follower, Holder::Operator { token, kind, scope }, slot);
    let items = match live.next(Some(Instant::now() + wait)).await {
        Next::Items(items) => items,
        Next::Reset => return Err(DomainError::CursorExpired.into()),
        Next::Refused => return Err(DomainError::Unauthenticated.into()),
        Next::Closing | Next::TimedOut | Next::Typing(_) => Vec::new(),
    };
    Ok(Catchup { items, cursor: live.follower.cursor() })
}

/// An operator's stream shows every entry it can read, notes included.
fn operator_event(item: &FeedItem, links: &parley_domain::attachments::links::Links) -> Option<Event> {
    event(item, crate::views::mobile::OperatorEventData::new(item, links))
}

/// The response of a stream: the follower's entries as `render` shows
/// them, until the holder is refused, the cursor is reset or the instance
/// shuts down.
fn respond(live: Live, render: Render) -> Response {
    let keepalive = live.state.streams.settings.keepalive;
    let events = stream::unfold((live, false), move |(mut live, done)| async move {
        if done {
            return None;
        }
        loop {
            match live.next(None).await {
                Next::Items(items) => {
                    let (feed, reader, links) = (&live.state.feed, live.follower.reader(), live.state.attachments.links());
                    let events: Vec<Event> =
                        items.iter().filter_map(|item| Some(render(item, links)?.id(feed.cursor_text(reader, item.cursor())))).collect();
                    if !events.is_empty() {
                        return Some((events, (live, false)));
                    }
                }
                Next::Reset => return Some((vec![reset_event()], (live, true))),
                Next::Typing(typing) => {
                    let operators = matches!(live.holder, Holder::Operator { .. });
                    let data = crate::views::stream::TypingEventData::new(&typing, operators);
                    if let Ok(event) = Event::default().event("typing").json_data(data) {
                        return Some((vec![event], (live, false)));
                    }
                }
                Next::Refused | Next::Closing | Next::TimedOut => return None,
            }
        }
    })
    .flat_map(|batch| stream::iter(batch.into_iter().map(Ok::<_, Infallible>)));
    // A first line at once: a proxy may hold the response's headers until
    // the first bytes of its body (nginx before 1.23 over HTTP/2 does),
    // and a client that gives a stream a few seconds to open would
    // otherwise wait for the first keep-alive, and give up.
    let events = stream::once(async { Ok(Event::default().comment("open")) }).chain(events);
    let sse = Sse::new(events).keep_alive(KeepAlive::new().interval(keepalive).text("keep-alive"));
    let mut response = sse.into_response();
    // Proxies that buffer responses (nginx does by default) would hold
    // events back until a buffer fills.
    response.headers_mut().insert(HeaderName::from_static("x-accel-buffering"), HeaderValue::from_static("no"));
    response
}

/// A stream that only says `reset`: the client's cursor is not one this
/// service issued.
fn reset(slot: Slot) -> Response {
    let once = stream::once(async move {
        drop(slot);
        Ok::<_, Infallible>(reset_event())
    });
    Sse::new(once).into_response()
}

/// Tells the client to reload and follow from a new cursor. EventSource
/// dispatches an event only when it has data, hence `{}`.
fn reset_event() -> Event {
    Event::default().event("reset").data("{}")
}

/// One event of a stream: the item's kind and `data` (the stream adds
/// the item's cursor as its id).
pub(crate) fn event(item: &FeedItem, data: impl serde::Serialize) -> Option<Event> {
    match Event::default().event(item.kind.stream_name()).json_data(data) {
        Ok(event) => Some(event),
        Err(e) => {
            tracing::error!(error = %e, "a stream event could not be written");
            None
        }
    }
}

/// Whether a request asks for a stream rather than JSON.
pub(crate) fn wants_stream(headers: &HeaderMap) -> bool {
    headers
        .get_all(axum::http::header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|v| v.split(';').next().is_some_and(|t| t.trim().eq_ignore_ascii_case("text/event-stream")))
}

/// The cursor a reconnecting EventSource sends, if any, as text; one
/// that is not text cannot be a cursor of this service: the client is
/// told to reset rather than refused, since it cannot act on an error.
fn last_event_id(headers: &HeaderMap) -> Option<Result<&str, NotText>> {
    let raw = headers.get("last-event-id")?;
    let Ok(text) = raw.to_str() else { return Some(Err(NotText)) };
    let text = text.trim();
    (!text.is_empty()).then_some(Ok(text))
}

struct NotText;
