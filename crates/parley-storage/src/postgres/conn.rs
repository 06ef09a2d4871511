//! The statement seam over a PostgreSQL connection, pipelined.
//!
//! On PostgreSQL the cost that counts is the round trip: each one wakes a
//! server process and a pool thread. So what a unit does not wait for is
//! held back and sent with the next statement it does wait for, in one
//! round trip: its BEGIN, the statements it defers (`Conn::defer`: writes
//! whose only possible failure is the server's own error), and its COMMIT.
//! A message post is five round trips instead of eight.
//!
//! A deferred statement's error still fails the unit: the server aborts
//! the transaction, every later statement of it fails, a COMMIT sent
//! behind it rolls back, and the first error is what the unit's caller
//! hears. That is why a deferred statement may not carry a check of its
//! own (a count that must be one): by the time the count arrives, the
//! COMMIT behind it may have happened.

use std::cell::Cell;
use std::collections::HashMap;
use std::error::Error;
use std::future::{Future, poll_fn};
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;

use bytes::BytesMut;
use parley_domain::store::{StoreError, StoreResult};
use tokio_postgres::types::{IsNull, ToSql, Type};
use tokio_postgres::{Client, Statement};

use super::Connector;
use super::error::{connection_lost, map};
use crate::sql::{Arg, Conn, Dialect, Plan, Row, Stmt, Ty, find_column};

/// A client and the runtime that drives its connection. The connection's
/// task runs only while the pool thread waits on the runtime, which is
/// the only time there is anything for it to do.
pub(super) struct Link {
    // Declared first: dropped before the runtime that drives it.
    client: Client,
    runtime: tokio::runtime::Runtime,
}

impl Link {
    pub(super) fn open(connector: &Connector) -> StoreResult<Self> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| StoreError::Unavailable(format!("no runtime for a PostgreSQL connection: {e}")))?;
        let (client, connection) = runtime.block_on(connector.config.connect(connector.tls.clone())).map_err(map)?;
        runtime.spawn(async move {
            if let Err(e) = connection.await {
                tracing::debug!(error = %e, "a PostgreSQL connection ended");
            }
        });
        // Durable commits whatever the server's default. Plans made once
        // per statement, as SQLite does: see `SESSION`.
        runtime.block_on(client.batch_execute(SESSION)).map_err(map)?;
        Ok(Self { client, runtime })
    }

    /// Runs `f` against the client until its future is done.
    pub(super) fn run<'a, F: Future>(&'a self, f: impl FnOnce(&'a Client) -> F) -> F::Output {
        self.runtime.block_on(f(&self.client))
    }
}

/// Every connection's settings. `synchronous_commit` makes a COMMIT
/// return once it is on disk, whatever the server's default. A prepared
/// statement's plan is made once (`force_generic_plan`): left to choose,
/// the server re-plans statements like `?2 IS NULL OR c.site_id = ?2` on
/// every run, since a plan for the actual values always looks cheaper,
/// and the planning cost more than the query. The statements are written
/// for plans that hold whatever the arguments, as SQLite needs anyway
/// (the few that are not say so: `Plan::EachRun`). No JIT: it compiles
/// a statement whose estimated cost is high, taking longer than the
/// statement runs, and a search's estimates are often high and wrong.
const SESSION: &str = "SET synchronous_commit TO on; SET plan_cache_mode TO force_generic_plan; SET jit TO off";

/// The plan mode around a statement planned with each run's values
/// (`Plan::EachRun`), and back. `LOCAL`: every unit runs in a transaction
/// (see `begin`), whose end undoes both whatever happens between them.
const PLAN_EACH_RUN: &str = "SET LOCAL plan_cache_mode TO force_custom_plan";
const PLAN_ONCE: &str = "SET LOCAL plan_cache_mode TO force_generic_plan";

/// A statement held back until the next round trip.
struct Deferred {
    stmt: &'static Stmt,
    args: Vec<Owned>,
    /// Its changed rows are webhook deliveries added.
    counts_deliveries: bool,
}

/// What the last statement of a round trip is for.
#[derive(Clone, Copy)]
enum Ask {
    Rows,
    Changed,
}

enum Answer {
    Done,
    Changed(u64),
    Rows(Vec<tokio_postgres::Row>),
}

type Reply = Result<Answer, tokio_postgres::Error>;

type Pending<'a> = Pin<Box<dyn Future<Output = Reply> + 'a>>;

/// Where a connection's current transaction stands.
#[derive(Clone, Copy, PartialEq, Eq)]
enum State {
    /// None, or it ended.
    Idle,
    /// Begun by a unit, its BEGIN not sent yet.
    Unsent(&'static str),
    /// Something of it reached the server.
    Open,
}

/// One connection with the statements it has prepared and the current
/// transaction's held-back statements.
pub(super) struct PgConn {
    connector: Arc<Connector>,
    link: Link,
    /// Prepared statements by the address of their `Stmt` (a static), so
    /// the lookup hashes a pointer, not the SQL text.
    prepared: HashMap<usize, Statement>,
    state: State,
    deferred: Vec<Deferred>,
    /// Webhook deliveries created by the transaction's deferred
    /// statements, known once they have run.
    pub(super) deliveries_added: u64,
    /// Set when a statement failed inside the current transaction: the
    /// database has aborted it, and a COMMIT would silently roll back.
    pub(super) failed: bool,
}

impl PgConn {
    pub(super) fn open(connector: Arc<Connector>) -> StoreResult<Self> {
        let link = Link::open(&connector)?;
        Ok(Self { connector, link, prepared: HashMap::new(), state: State::Idle, deferred: Vec::new(), deliveries_added: 0, failed: false })
    }

    #[cfg(test)]
    pub(super) fn link(&self) -> &Link {
        &self.link
    }

    pub(super) fn is_closed(&self) -> bool {
        self.link.client.is_closed()
    }

    /// Starts a transaction; its BEGIN goes with the first statement.
    pub(super) fn begin(&mut self, begin: &'static str) {
        self.state = State::Unsent(begin);
        self.deferred.clear();
        self.deliveries_added = 0;
        self.failed = false;
    }

    /// Sends what is held back and the COMMIT in one round trip. A unit
    /// that never reached the server and held nothing back sends nothing.
    pub(super) fn commit(&mut self) -> StoreResult<()> {
        if self.state != State::Open && self.deferred.is_empty() {
            self.state = State::Idle;
            return Ok(());
        }
        self.trip(None, Some("COMMIT")).map(|_| ())
    }

    /// Drops what is held back and ends the transaction if it started.
    pub(super) fn rollback(&mut self) {
        self.forget_pending();
        if std::mem::replace(&mut self.state, State::Idle) == State::Open
            && let Err(e) = self.link.run(|c| c.batch_execute("ROLLBACK"))
        {
            tracing::warn!(error = %e, "could not roll back a transaction");
        }
    }

    fn statement(&mut self, stmt: &'static Stmt) -> Result<Statement, tokio_postgres::Error> {
        let key = stmt as *const Stmt as usize;
        if let Some(s) = self.prepared.get(&key) {
            return Ok(s.clone());
        }
        // Each entry point has checked the text (`Stmt::text`), so this is
        // never the empty fallback.
        let text = stmt.text(Dialect::Postgres).unwrap_or_default();
        let types: Vec<Type> = stmt.types().map(pg_type).collect();
        let prepared = self.link.run(|c| c.prepare_typed(text, &types))?;
        self.prepared.insert(key, prepared.clone());
        Ok(prepared)
    }

    /// One round trip: the BEGIN if not yet sent, everything held back,
    /// then `last` (whose answer is returned) and `end`. Nothing of a
    /// transaction has run on the server before its first round trip, so
    /// when the connection turns out dead on that one (the server
    /// restarted, a proxy dropped it while idle: the connection's task
    /// only runs during a round trip, so that is where it is noticed) it
    /// is replaced and the same round trip sent again; one carrying the
    /// COMMIT only when nothing after its BEGIN can have run.
    fn trip(&mut self, last: Option<(&'static Stmt, &[Arg<'_>], Ask)>, end: Option<&'static str>) -> StoreResult<Answer> {
        let mut outcome = self.prepare_and_send(last, end);
        let replayable = |f: &Failure| connection_lost(&f.error) && (end.is_none() || f.before_work);
        if self.state != State::Open && matches!(&outcome, Err(f) if replayable(f)) {
            outcome = match self.reconnect() {
                Ok(()) => self.prepare_and_send(last, end),
                Err(e) => {
                    self.forget_pending();
                    return Err(self.mark_failed(e));
                }
            };
        }
        let sent_end = matches!(&outcome, Ok(_) | Err(Failure { end_sent: true, .. }));
        self.forget_pending();
        // A COMMIT that reached the server ended the transaction, whatever
        // it answered (in an aborted transaction it answers ROLLBACK).
        self.state = if end.is_none() || !sent_end { State::Open } else { State::Idle };
        match outcome {
            Ok(answer) => Ok(answer),
            Err(Failure { error: e, end_sent: true, .. }) if end.is_some() && e.code().is_none() => {
                self.failed = true;
                // The connection failed while the commit was on its way:
                // it may have happened. Not "try again", which could
                // repeat it.
                Err(StoreError::Internal(format!("the outcome of a commit is unknown: {e}")))
            }
            Err(f) => Err(self.mark_failed(map(f.error))),
        }
    }

    /// Drops the unsent BEGIN and the held-back statements.
    fn forget_pending(&mut self) {
        if let State::Unsent(_) = self.state {
            self.state = State::Idle;
        }
        self.deferred.clear();
    }

    fn mark_failed(&mut self, e: StoreError) -> StoreError {
        self.failed = true;
        e
    }

    fn reconnect(&mut self) -> StoreResult<()> {
        self.link = Link::open(&self.connector)?;
        self.prepared.clear();
        Ok(())
    }

    /// Prepares what the round trip needs (on a new connection, or the
    /// first time a statement is used), then sends it. The error says
    /// whether the round trip's `end` had been sent.
    fn prepare_and_send(&mut self, last: Option<(&'static Stmt, &[Arg<'_>], Ask)>, end: Option<&'static str>) -> Result<Answer, Failure> {
        let mut statements = Vec::with_capacity(self.deferred.len());
        for i in 0..self.deferred.len() {
            statements.push(self.statement(self.deferred[i].stmt).map_err(Failure::unsent)?);
        }
        let each_run = last.is_some_and(|(stmt, _, _)| stmt.plan == Plan::EachRun);
        let last = match last {
            Some((stmt, args, ask)) => Some((self.statement(stmt).map_err(Failure::unsent)?, args, ask)),
            None => None,
        };
        self.send(&statements, last, each_run, end)
    }

    /// Sends the round trip and reads every answer; the first error wins.
    /// A `last` statement planned with each run's values (`Plan::EachRun`)
    /// is sent between two settings of the transaction's plan mode, in
    /// the same round trip.
    fn send(
        &mut self,
        statements: &[Statement],
        last: Option<(Statement, &[Arg<'_>], Ask)>,
        each_run: bool,
        end: Option<&'static str>,
    ) -> Result<Answer, Failure> {
        let client = &self.link.client;
        let deferred_params: Vec<Vec<&(dyn ToSql + Sync)>> =
            self.deferred.iter().map(|d| d.args.iter().map(|a| a as &(dyn ToSql + Sync)).collect()).collect();
        let last_params: Vec<&(dyn ToSql + Sync)> =
            last.as_ref().map(|(_, args, _)| args.iter().map(|a| a as &(dyn ToSql + Sync)).collect()).unwrap_or_default();
        let mut slots: Vec<(Slot, Pending<'_>)> = Vec::with_capacity(statements.len() + 3);
        if let State::Unsent(begin) = self.state {
            slots.push((Slot::Begin, Box::pin(async move { client.batch_execute(begin).await.map(|()| Answer::Done) })));
        }
        for ((statement, params), d) in statements.iter().zip(&deferred_params).zip(&self.deferred) {
            let slot = Slot::Deferred { counts_deliveries: d.counts_deliveries };
            slots.push((slot, Box::pin(async move { client.execute(statement, params).await.map(Answer::Changed) })));
        }
        if each_run {
            slots.push((Slot::Setting, Box::pin(async move { client.batch_execute(PLAN_EACH_RUN).await.map(|()| Answer::Done) })));
        }
        if let Some((statement, _, ask)) = &last {
            let params = &last_params;
            slots.push((
                Slot::Last,
                match ask {
                    Ask::Rows => Box::pin(async move { client.query(statement, params).await.map(Answer::Rows) }),
                    Ask::Changed => Box::pin(async move { client.execute(statement, params).await.map(Answer::Changed) }),
                },
            ));
        }
        if each_run {
            slots.push((Slot::Setting, Box::pin(async move { client.batch_execute(PLAN_ONCE).await.map(|()| Answer::Done) })));
        }
        if let Some(end) = end {
            slots.push((Slot::End, Box::pin(async move { client.batch_execute(end).await.map(|()| Answer::Done) })));
        }
        let (kinds, futures): (Vec<Slot>, Vec<Pending<'_>>) = slots.into_iter().unzip();
        let (answers, sent) = self.link.runtime.block_on(in_order(futures));
        let end_sent = kinds.iter().position(|k| *k == Slot::End).is_some_and(|i| i < sent);
        let mut answer = Answer::Done;
        let mut deliveries = 0;
        for (slot, result) in kinds.into_iter().zip(answers) {
            match (slot, result) {
                // Not sent: an earlier request failed before it was.
                (_, None) => break,
                (slot, Some(Err(e))) => {
                    let before_work = sent == 0 || (slot == Slot::Begin && e.code().is_some());
                    return Err(Failure { error: e, end_sent, before_work });
                }
                (Slot::Deferred { counts_deliveries: true }, Some(Ok(Answer::Changed(n)))) => deliveries += n,
                (Slot::Last, Some(Ok(a))) => answer = a,
                _ => {}
            }
        }
        self.deliveries_added += deliveries;
        Ok(answer)
    }
}

/// Why a round trip failed, and how far it got.
struct Failure {
    error: tokio_postgres::Error,
    /// The round trip's COMMIT reached the server (or may have).
    end_sent: bool,
    /// Nothing after the BEGIN ran: nothing was sent, or the BEGIN itself
    /// was refused by the server (which runs requests in order).
    before_work: bool,
}

impl Failure {
    fn unsent(error: tokio_postgres::Error) -> Self {
        Self { error, end_sent: false, before_work: true }
    }
}

/// What a request of a round trip is for.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Slot {
    Begin,
    Deferred {
        counts_deliveries: bool,
    },
    /// The plan mode around a `Plan::EachRun` statement.
    Setting,
    Last,
    End,
}

/// Polls every future in the order given, so each sends its request in
/// that order: tokio-postgres encodes and sends a request on its first
/// poll, so the server runs them in sequence and they share one round
/// trip. A request that fails on its first poll was never sent (the
/// connection was closed, or its arguments could not be encoded); those
/// after it are then not polled at all (`None`), so nothing behind a
/// failed statement, a COMMIT least of all, reaches the server. Returns
/// the answers and how many requests were sent.
async fn in_order(mut futures: Vec<Pending<'_>>) -> (Vec<Option<Reply>>, usize) {
    let mut answers: Vec<Option<Reply>> = futures.iter().map(|_| None).collect();
    let mut sent = futures.len();
    let mut first = true;
    poll_fn(|cx| {
        let mut done = true;
        for (i, (future, answer)) in futures.iter_mut().zip(answers.iter_mut()).enumerate().take(sent) {
            if answer.is_some() {
                continue;
            }
            match future.as_mut().poll(cx) {
                Poll::Ready(value) => {
                    let unsent = first && value.is_err();
                    *answer = Some(value);
                    if unsent {
                        // Answers after it can never come: stop here.
                        sent = i;
                        break;
                    }
                }
                Poll::Pending => done = false,
            }
        }
        first = false;
        if done { Poll::Ready(()) } else { Poll::Pending }
    })
    .await;
    (answers, sent)
}

pub(super) fn pg_type(t: Ty) -> Type {
    match t {
        Ty::Int => Type::INT8,
        Ty::Text => Type::TEXT,
        Ty::Bool => Type::BOOL,
        Ty::Bytes => Type::BYTEA,
    }
}

/// An argument kept until its statement is sent.
#[derive(Debug)]
enum Owned {
    Int(Option<i64>),
    Text(Option<String>),
    Bool(Option<bool>),
    Bytes(Option<Vec<u8>>),
}

impl Owned {
    fn of(arg: &Arg<'_>) -> Self {
        match *arg {
            Arg::Int(v) => Owned::Int(v),
            Arg::Text(v) => Owned::Text(v.map(str::to_owned)),
            Arg::Bool(v) => Owned::Bool(v),
            Arg::Bytes(v) => Owned::Bytes(v.map(<[u8]>::to_vec)),
        }
    }

    fn arg(&self) -> Arg<'_> {
        match self {
            Owned::Int(v) => Arg::Int(*v),
            Owned::Text(v) => Arg::Text(v.as_deref()),
            Owned::Bool(v) => Arg::Bool(*v),
            Owned::Bytes(v) => Arg::Bytes(v.as_deref()),
        }
    }
}

impl ToSql for Owned {
    fn to_sql(&self, ty: &Type, out: &mut BytesMut) -> Result<IsNull, Box<dyn Error + Sync + Send>> {
        self.arg().to_sql(ty, out)
    }

    fn accepts(ty: &Type) -> bool {
        <Arg<'_> as ToSql>::accepts(ty)
    }

    fn to_sql_checked(&self, ty: &Type, out: &mut BytesMut) -> Result<IsNull, Box<dyn Error + Sync + Send>> {
        self.arg().to_sql_checked(ty, out)
    }
}

impl ToSql for Arg<'_> {
    fn to_sql(&self, ty: &Type, out: &mut BytesMut) -> Result<IsNull, Box<dyn Error + Sync + Send>> {
        match self {
            Arg::Int(v) => v.to_sql(ty, out),
            Arg::Text(v) => v.to_sql(ty, out),
            Arg::Bool(v) => v.to_sql(ty, out),
            Arg::Bytes(v) => v.to_sql(ty, out),
        }
    }

    fn accepts(ty: &Type) -> bool {
        [Type::INT8, Type::TEXT, Type::BOOL, Type::BYTEA].contains(ty)
    }

    /// Statements are prepared with the types their arguments are checked
    /// against, so a mismatch here is a bug worth a clear message.
    fn to_sql_checked(&self, ty: &Type, out: &mut BytesMut) -> Result<IsNull, Box<dyn Error + Sync + Send>> {
        if pg_type(self.ty()) != *ty {
            return Err(format!("a {:?} argument for a parameter of type {ty}", self.ty()).into());
        }
        self.to_sql(ty, out)
    }
}

impl Conn for PgConn {
    fn dialect(&self) -> Dialect {
        Dialect::Postgres
    }

    fn query(&mut self, stmt: &'static Stmt, args: &[Arg<'_>], each: &mut dyn FnMut(&dyn Row) -> StoreResult<bool>) -> StoreResult<()> {
        stmt.text(Dialect::Postgres)?;
        let Answer::Rows(rows) = self.trip(Some((stmt, args, Ask::Rows)), None)? else {
            return Err(StoreError::Internal(format!("{}: no rows came back", stmt.name)));
        };
        for row in &rows {
            if !each(&PgRow { row, hint: Cell::new(0) })? {
                break;
            }
        }
        Ok(())
    }

    fn execute(&mut self, stmt: &'static Stmt, args: &[Arg<'_>]) -> StoreResult<u64> {
        stmt.text(Dialect::Postgres)?;
        match self.trip(Some((stmt, args, Ask::Changed)), None)? {
            Answer::Changed(n) => Ok(n),
            _ => Err(StoreError::Internal(format!("{}: no count came back", stmt.name))),
        }
    }

    fn defer(&mut self, stmt: &'static Stmt, args: &[Arg<'_>], counts_deliveries: bool) -> StoreResult<Option<u64>> {
        stmt.text(Dialect::Postgres)?;
        self.deferred.push(Deferred { stmt, args: args.iter().map(Owned::of).collect(), counts_deliveries });
        Ok(None)
    }

    fn prepare(&mut self, stmt: &'static Stmt) -> StoreResult<()> {
        stmt.text(Dialect::Postgres)?;
        self.statement(stmt).map(|_| ()).map_err(|e| self.mark_failed(map(e)))
    }
}

struct PgRow<'a> {
    row: &'a tokio_postgres::Row,
    /// See `find_column`: by name, `try_get` would scan every column.
    hint: Cell<usize>,
}

impl PgRow<'_> {
    fn get<'r, T: tokio_postgres::types::FromSql<'r>>(&'r self, col: &str) -> StoreResult<Option<T>> {
        let columns = self.row.columns();
        let i = find_column(columns.len(), |i| columns.get(i).map(|c| c.name()), col, &self.hint)?;
        self.row.try_get::<_, Option<T>>(i).map_err(|e| StoreError::Internal(format!("column {col}: {e}")))
    }
}

impl Row for PgRow<'_> {
    fn int(&self, col: &str) -> StoreResult<Option<i64>> {
        self.get(col)
    }

    fn text(&self, col: &str) -> StoreResult<Option<String>> {
        self.get(col)
    }

    fn boolean(&self, col: &str) -> StoreResult<Option<bool>> {
        self.get(col)
    }

    fn bytes(&self, col: &str) -> StoreResult<Option<Vec<u8>>> {
        self.get(col)
    }
}
