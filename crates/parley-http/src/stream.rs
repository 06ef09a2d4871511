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
use parley_domain::auth::SignIn;
use parley_domain::feed::{Cursor, FeedItem, Follower, Reader, Slot, Step, StreamSlots};
use parley_domain::limits::ClientKey;
use parley_domain::metrics::Metrics;
use parley_domain::model::OperatorScope;
use parley_domain::widget::Caller;
use std::sync::Arc;
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
        Self { settings, slots: StreamSlots::new(settings.per_address, metrics), closing: CancellationToken::new() }
    }

    /// Ends every stream, now and any opened later: the server's drain
    /// then finds connections that are finishing, not ones that never
    /// would.
    pub fn close(&self) {
        self.closing.cancel();
    }

    /// Completes when the streams are closed: long polls wait on it too.
    pub(crate) fn closed(&self) -> impl Future<Output = ()> + use<> {
        self.closing.clone().cancelled_owned()
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
    /// A widget's installation token, used from the caller's origin.
    Visitor { caller: Caller, token: String },
}

/// What a recheck found.
enum Check {
    Allowed,
    Refused,
    /// The answer could not be had (the database is away): the stream
    /// goes on and asks again at the next check.
    Unknown,
}

impl Holder {
    async fn check(&self, s: &AppState) -> Check {
        let outcome = match self {
            Holder::Operator { token, kind, scope } => {
                s.auth.authenticate(token, *kind).await.map(|session| session.operator.scope() == *scope)
            }
            Holder::Visitor { caller, token } => s.widget.stream_allowed(caller, token).await.map(|()| true),
        };
        match outcome {
            Ok(true) => Check::Allowed,
            Ok(false) => Check::Refused,
            Err(DomainError::Store(_) | DomainError::Unavailable(_)) => Check::Unknown,
            Err(_) => Check::Refused,
        }
    }
}

/// Turns a feed item into the event the stream's client gets, or `None`
/// for an item it does not show.
pub(crate) type Render = fn(&FeedItem) -> Option<Event>;

struct Live {
    state: AppState,
    follower: Follower,
    holder: Holder,
    render: Render,
    closing: CancellationToken,
    recheck: Duration,
    next_check: Instant,
    done: bool,
    _slot: Slot,
}

/// Opens a stream in the place `slot` holds: from the client's
/// `Last-Event-ID`, else `from_query`, else the present, following the
/// feed as `reader` and showing what `render` makes of each entry.
pub(crate) async fn open(
    state: &AppState,
    slot: Slot,
    headers: &HeaderMap,
    from_query: Option<Cursor>,
    reader: Reader,
    holder: Holder,
    render: Render,
) -> Result<Response, ApiError> {
    let from = match last_event_id(headers) {
        Some(LastEventId::Cursor(cursor)) => Some(cursor),
        Some(LastEventId::Unknown) => return Ok(reset(slot)),
        None => from_query,
    };
    let follower = state.feed.follow(reader, from).await?;
    Ok(respond(state.clone(), follower, holder, slot, render))
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
    open(state, slot, headers, from_query, Reader::Operator(scope.into()), holder, operator_event).await
}

/// An operator's stream shows every entry it can read, notes included.
fn operator_event(item: &FeedItem) -> Option<Event> {
    event(item, crate::views::mobile::OperatorEventData::from(item))
}

/// The response of a stream: `follower`'s entries as `render` shows them,
/// until the holder is refused, the cursor is reset or the instance
/// shuts down.
fn respond(state: AppState, follower: Follower, holder: Holder, slot: Slot, render: Render) -> Response {
    let streams = state.streams.clone();
    let live = Live {
        follower,
        holder,
        render,
        closing: streams.closing.clone(),
        recheck: streams.recheck(),
        next_check: Instant::now() + streams.recheck(),
        done: false,
        _slot: slot,
        state,
    };
    let events = stream::unfold(live, next).flat_map(|batch| stream::iter(batch.into_iter().map(Ok::<_, Infallible>)));
    let sse = Sse::new(events).keep_alive(KeepAlive::new().interval(streams.settings.keepalive).text("keep-alive"));
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

/// The next events of a stream, once there are any; `None` ends it.
///
/// The feed is read when the stream starts, after a wake-up from the hub
/// and after a full page, never on a timer: an idle stream costs no
/// query but its holder's recheck. Every wait also watches shutdown.
async fn next(mut live: Live) -> Option<(Vec<Event>, Live)> {
    let closing = live.closing.clone();
    let step = async move {
        let (mut read, mut failed) = (true, false);
        loop {
            if live.done {
                return None;
            }
            if Instant::now() >= live.next_check {
                if let Check::Refused = live.holder.check(&live.state).await {
                    return None;
                }
                live.next_check = Instant::now() + live.recheck;
            }
            if read {
                match live.follower.read().await {
                    Ok(Some(Step::Items(items))) => {
                        failed = false;
                        let events: Vec<Event> = items.iter().filter_map(live.render).collect();
                        if !events.is_empty() {
                            return Some((events, live));
                        }
                    }
                    Ok(Some(Step::Reset)) => {
                        live.done = true;
                        return Some((vec![reset_event()], live));
                    }
                    Ok(None) => failed = false,
                    // Read again at the next wake-up or check: the cursor
                    // has not moved, so nothing is lost meanwhile.
                    Err(e) => {
                        failed = true;
                        tracing::warn!(error = %e, "a stream could not read the feed; trying again");
                    }
                }
            }
            read = tokio::select! {
                _ = live.follower.changed() => true,
                _ = tokio::time::sleep_until(live.next_check) => failed,
            };
        }
    };
    tokio::select! {
        _ = closing.cancelled() => None,
        next = step => next,
    }
}

/// One event of a stream: the item's cursor, its kind and `data`.
pub(crate) fn event(item: &FeedItem, data: impl serde::Serialize) -> Option<Event> {
    match Event::default().id(item.cursor().to_string()).event(item.kind.stream_name()).json_data(data) {
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

/// The cursor a reconnecting EventSource sends, if any. One that is not
/// a cursor of this service is treated as unknown: the client is told to
/// reset rather than refused, since it cannot act on an error.
fn last_event_id(headers: &HeaderMap) -> Option<LastEventId> {
    let raw = headers.get("last-event-id")?;
    let Ok(text) = raw.to_str() else { return Some(LastEventId::Unknown) };
    let text = text.trim();
    if text.is_empty() {
        return None;
    }
    Some(text.parse().map_or(LastEventId::Unknown, LastEventId::Cursor))
}

enum LastEventId {
    Cursor(Cursor),
    Unknown,
}
