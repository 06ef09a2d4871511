//! What instances sharing one PostgreSQL database tell each other.
//!
//! Each instance keeps one extra connection, outside the pool, that
//! LISTENs on a channel. After a local commit that added webhook
//! deliveries (or changed installations, or appended to the feed) it
//! NOTIFYs the others, so their delivery workers and feed followers wake
//! at once and their token caches drop what is stale; what it hears from them it turns into the same local signals a
//! commit of its own sends. Notifications are sent from here, after the
//! commit, rather than inside each transaction: a NOTIFY in a transaction
//! serialises every commit that carries one, and a post would pay for it.
//! They are coalesced, at most one per kind every `GAP`.
//!
//! A notification is only a hint. Whatever it wakes reads the database
//! itself, and the delivery worker polls anyway, so one lost while this
//! connection is down delays work and never loses it; after reconnecting
//! every signal fires once, for what may have been missed.
//!
//! The same connection holds the session advisory locks that elect one
//! instance for work that must run in one place at a time (the sweeper).
//! A lock ends with the connection, so a killed instance hands its work on
//! at once. Work run under it must still be safe if two instances ever
//! overlap (the connection dropped mid-pass and another took the lock):
//! the sweeper's units lock and re-check the rows they change.

use std::future::poll_fn;
use std::sync::Arc;
use std::time::Duration;

use parley_domain::store::{StoreError, StoreResult};
use tokio::sync::{Notify, mpsc, oneshot};
use tokio::task::JoinHandle;
use tokio_postgres::{AsyncMessage, Client};

use super::Connector;
use super::error::map;
use crate::backend::Signals;
use crate::sql::Effects;

/// The channel every instance of an installation listens on.
const CHANNEL: &str = "parley_instances";
/// At most one notification of a kind per gap.
const GAP: Duration = Duration::from_millis(20);
/// How long to wait before connecting again after the connection failed.
const RETRY: Duration = Duration::from_secs(1);
/// The longest any statement here may take. Past it the connection is
/// taken for dead (a half-open socket answers nothing, and the server
/// keeps its session, locks included, until its keepalive gives up), so
/// the session is dropped and a new one made.
const ANSWER_WITHIN: Duration = Duration::from_secs(5);
/// How often an otherwise quiet connection is checked.
const HEARTBEAT: Duration = Duration::from_secs(10);
/// Three heartbeats missed and the server ends the session (see `serve`).
const SESSION: &str = "SET idle_session_timeout = '30s'";

const DELIVERIES: &str = "deliveries";
const INSTALLATIONS: &str = "installations";
const FEED: &str = "feed";
const PUSHES: &str = "pushes";
const ERASED: &str = "erased";
/// A broadcast of `Backend::broadcast`: `signal <instance> <text>`.
const SIGNAL: &str = "signal";
/// NOTIFY takes payloads below 8,000 bytes.
const SIGNAL_MAX: usize = 7_000;
/// Broadcasts waiting for the listener; past this the newest are dropped
/// (hints only) rather than memory growing while the connection is down.
const SIGNALS_WAITING: usize = 1_024;

/// What a pool thread tells this instance's listener after a commit.
#[derive(Default)]
pub(crate) struct Outgoing {
    /// The effects committed since the last announcement.
    pending: std::sync::Mutex<Effects>,
    /// Broadcasts to send.
    said: std::sync::Mutex<Vec<String>>,
    wake: Notify,
}

impl Outgoing {
    /// Called once a commit that includes `effects` is durable.
    pub(crate) fn after_commit(&self, effects: &Effects) {
        if names(effects).next().is_some() {
            self.pending.lock().unwrap_or_else(|p| p.into_inner()).add(*effects);
            self.wake.notify_one();
        }
    }

    fn take(&self) -> Effects {
        std::mem::take(&mut *self.pending.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// Queues a broadcast to the other instances.
    pub(crate) fn say(&self, text: String) {
        if text.len() > SIGNAL_MAX {
            tracing::warn!(bytes = text.len(), "a broadcast too long for NOTIFY was dropped");
            return;
        }
        let mut said = self.said.lock().unwrap_or_else(|p| p.into_inner());
        if said.len() < SIGNALS_WAITING {
            said.push(text);
        }
        drop(said);
        self.wake.notify_one();
    }

    fn take_said(&self) -> Vec<String> {
        std::mem::take(&mut *self.said.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

/// The name on the channel of each kind of effect other instances act on.
fn names(effects: &Effects) -> impl Iterator<Item = &'static str> {
    [
        (effects.deliveries_added > 0, DELIVERIES),
        (effects.installations_changed, INSTALLATIONS),
        (effects.feed_appended, FEED),
        (effects.pushes_queued, PUSHES),
        (effects.conversations_erased, ERASED),
    ]
    .into_iter()
    .filter_map(|(set, name)| set.then_some(name))
}

/// The effect another instance announced by `name` (its messages are its
/// own to count).
fn named(name: &str) -> Effects {
    Effects {
        deliveries_added: u64::from(name == DELIVERIES),
        installations_changed: name == INSTALLATIONS,
        feed_appended: name == FEED,
        pushes_queued: name == PUSHES,
        conversations_erased: name == ERASED,
        ..Effects::default()
    }
}

enum Request {
    TryLock(i64, oneshot::Sender<StoreResult<bool>>),
    Unlock(i64),
    Stop,
}

pub(crate) struct Unlocker(mpsc::UnboundedSender<Request>);

impl Unlocker {
    /// Releases the session lock `key` (a lost connection already has).
    pub(crate) fn unlock(&self, key: i64) {
        let _ = self.0.send(Request::Unlock(key));
    }
}

/// The handle the backend keeps.
pub(crate) struct Instances {
    requests: mpsc::UnboundedSender<Request>,
    task: std::sync::Mutex<Option<JoinHandle<()>>>,
}

impl Instances {
    /// Starts the listener on the current runtime.
    pub(crate) fn start(connector: Arc<Connector>, signals: Arc<Signals>, outgoing: Arc<Outgoing>) -> Self {
        let (requests, receiver) = mpsc::unbounded_channel();
        let me = instance_tag();
        let task = tokio::spawn(listen(connector, signals, outgoing, receiver, me));
        Self { requests, task: std::sync::Mutex::new(Some(task)) }
    }

    /// Takes the session lock `key` if no instance holds it.
    pub(crate) async fn try_lock(&self, key: i64) -> StoreResult<bool> {
        let (tx, rx) = oneshot::channel();
        self.requests.send(Request::TryLock(key, tx)).map_err(|_| stopped())?;
        rx.await.map_err(|_| stopped())?
    }

    /// What releases a lock taken here, from wherever it is dropped.
    pub(crate) fn unlocker(&self) -> Unlocker {
        Unlocker(self.requests.clone())
    }

    /// Stops listening; the connection, and any lock it held, ends.
    pub(crate) async fn stop(&self) {
        let _ = self.requests.send(Request::Stop);
        let task = self.task.lock().ok().and_then(|mut t| t.take());
        if let Some(mut task) = task
            && tokio::time::timeout(ANSWER_WITHIN, &mut task).await.is_err()
        {
            task.abort();
        }
    }
}

fn stopped() -> StoreError {
    StoreError::Unavailable("the instance listener has stopped".into())
}

/// A tag for this process's notifications, so it can ignore its own.
fn instance_tag() -> String {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    format!("{}-{nanos:x}", std::process::id())
}

/// Connects, listens and serves requests until stopped, connecting again
/// whenever the connection fails.
async fn listen(
    connector: Arc<Connector>,
    signals: Arc<Signals>,
    outgoing: Arc<Outgoing>,
    mut requests: mpsc::UnboundedReceiver<Request>,
    me: String,
) {
    loop {
        match session(&connector, &signals, &outgoing, &mut requests, &me).await {
            Ok(()) => return,
            Err(e) => tracing::warn!(error = %e, "lost the PostgreSQL listener connection; other instances' wake-ups wait for the poll"),
        }
        // While disconnected, lock requests are answered at once.
        let retry = tokio::time::sleep(RETRY);
        tokio::pin!(retry);
        loop {
            tokio::select! {
                _ = &mut retry => break,
                request = requests.recv() => match request {
                    None | Some(Request::Stop) => return,
                    Some(Request::TryLock(_, reply)) => { let _ = reply.send(Err(StoreError::Unavailable("no listener connection".into()))); }
                    Some(Request::Unlock(_)) => {}
                },
            }
        }
    }
}

/// One connection's life: `Ok` when asked to stop, `Err` when it failed.
async fn session(
    connector: &Connector,
    signals: &Signals,
    outgoing: &Outgoing,
    requests: &mut mpsc::UnboundedReceiver<Request>,
    me: &str,
) -> StoreResult<()> {
    let mut config = connector.config.clone();
    config.keepalives_idle(HEARTBEAT).tcp_user_timeout(ANSWER_WITHIN * 2);
    let (client, mut connection) = within(config.connect(connector.tls.clone())).await?;
    let (heard, mut notifications) = mpsc::unbounded_channel::<String>();
    let driver = tokio::spawn(async move {
        while let Some(message) = poll_fn(|cx| connection.poll_message(cx)).await {
            match message {
                Ok(AsyncMessage::Notification(n)) => {
                    if heard.send(n.payload().to_owned()).is_err() {
                        return;
                    }
                }
                Ok(_) => {}
                Err(e) => {
                    tracing::debug!(error = %e, "the PostgreSQL listener connection ended");
                    return;
                }
            }
        }
    });
    let result = serve(&client, signals, outgoing, requests, &mut notifications, me).await;
    drop(client);
    driver.abort();
    result
}

async fn serve(
    client: &Client,
    signals: &Signals,
    outgoing: &Outgoing,
    requests: &mut mpsc::UnboundedReceiver<Request>,
    notifications: &mut mpsc::UnboundedReceiver<String>,
    me: &str,
) -> StoreResult<()> {
    // A connection that goes silent without a reset (a hung proxy, a
    // partition) would keep its session, and the locks it holds, on the
    // server until TCP gives up, hours later: the server ends it itself
    // once no heartbeat has come for this long. PostgreSQL 14 and later;
    // older servers keep the session until their keepalives end it.
    if let Err(e) = within(client.batch_execute(SESSION)).await {
        tracing::warn!(error = %e, "the server cannot end a silent listener session itself; a lost instance may hold the sweeper's lock until TCP gives up");
    }
    within(client.batch_execute(&format!("LISTEN {CHANNEL}"))).await?;
    // What others said while nobody listened is lost: act as if they had
    // said everything.
    signals.after_commit(Effects {
        deliveries_added: 1,
        installations_changed: true,
        feed_appended: true,
        pushes_queued: true,
        conversations_erased: true,
        ..Effects::default()
    });
    let mut heartbeat = tokio::time::interval(HEARTBEAT);
    heartbeat.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            // Announcements first: at shutdown, the last commits' are sent
            // before the stop is heard.
            biased;
            _ = outgoing.wake.notified() => {
                for kind in names(&outgoing.take()) {
                    let payload = format!("{kind} {me}");
                    within(client.execute("SELECT pg_notify($1, $2)", &[&CHANNEL, &payload])).await?;
                }
                for text in outgoing.take_said() {
                    let payload = format!("{SIGNAL} {me} {text}");
                    within(client.execute("SELECT pg_notify($1, $2)", &[&CHANNEL, &payload])).await?;
                }
                tokio::time::sleep(GAP).await;
            }
            payload = notifications.recv() => {
                let Some(payload) = payload else { return Err(StoreError::Unavailable("connection closed".into())) };
                let mut parts = payload.splitn(3, ' ');
                let (kind, from) = (parts.next().unwrap_or_default(), parts.next().unwrap_or_default());
                if from != me {
                    match (kind, parts.next()) {
                        (SIGNAL, Some(text)) => signals.hear(text.to_owned()),
                        _ => signals.after_commit(named(kind)),
                    }
                }
            }
            request = requests.recv() => match request {
                None | Some(Request::Stop) => return Ok(()),
                Some(Request::TryLock(key, reply)) => {
                    let taken = within(client.query_one("SELECT pg_try_advisory_lock($1) AS taken", &[&key])).await;
                    let taken = match taken {
                        Ok(row) => row.try_get::<_, bool>("taken").map_err(map),
                        Err(e) => {
                            let _ = reply.send(Err(e.clone()));
                            return Err(e);
                        }
                    };
                    // Whoever asked may have stopped waiting: a lock
                    // nobody holds a `Lead` for would never be released.
                    if let Err(Ok(true)) = reply.send(taken) {
                        within(client.query_one("SELECT pg_advisory_unlock($1) AS released", &[&key])).await?;
                    }
                }
                Some(Request::Unlock(key)) => {
                    within(client.query_one("SELECT pg_advisory_unlock($1) AS released", &[&key])).await?;
                }
            },
            _ = heartbeat.tick() => {
                within(client.simple_query("SELECT 1")).await?;
            }
        }
    }
}

/// `query`'s result, or a lost connection if it takes longer than
/// `ANSWER_WITHIN`.
async fn within<T>(query: impl std::future::Future<Output = Result<T, tokio_postgres::Error>>) -> StoreResult<T> {
    match tokio::time::timeout(ANSWER_WITHIN, query).await {
        Ok(answer) => answer.map_err(map),
        Err(_) => Err(StoreError::Unavailable("the listener connection stopped answering".into())),
    }
}
