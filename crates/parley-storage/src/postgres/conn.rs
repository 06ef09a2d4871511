//! The statement seam over a PostgreSQL connection, pipelined.
//!
//! On PostgreSQL the cost that counts is the round trip: each one wakes a
//! server process and a pool thread. So what a unit does not wait for is
//! held back and sent with the next statement it does wait for, in one
//! round trip: its BEGIN, the statements it defers (`Conn::defer`: writes
//! whose only possible failure is the server's own error), and its COMMIT.
//! A message post is four round trips instead of eight.
//!
//! A deferred statement's error still fails the unit: the server aborts
//! the transaction, every later statement of it fails, a COMMIT sent
//! behind it rolls back, and the first error is what the unit's caller
//! hears. That is why a deferred statement may not carry a check of its
//! own (a count that must be one): by the time the count arrives, the
//! COMMIT behind it may have happened.

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
use crate::sql::{Arg, Conn, Dialect, Row, Stmt, Ty};

/// A client and the runtime that drives its connection. The connection's
/// task runs only while the pool thread waits on the runtime, which is
/// the only time there is anything for it to do.
pub(super) struct Link {
    // Declared first: dropped before the runtime that drives it.
    pub(super) client: Client,
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
/// for plans that hold whatever the arguments, as SQLite needs anyway.
const SESSION: &str = "SET synchronous_commit TO on; SET plan_cache_mode TO force_generic_plan";

/// A statement held back until the next round trip.
struct Later {
    stmt: &'static Stmt,
    args: Vec<Owned>,
    /// Its changed rows count towards `PgConn::tally`.
    tally: bool,
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

type Pending<'a> = Pin<Box<dyn Future<Output = Result<Answer, tokio_postgres::Error>> + 'a>>;

/// One connection with the statements it has prepared and the current
/// transaction's held-back statements.
pub(super) struct PgConn {
    connector: Arc<Connector>,
    link: Link,
    /// Prepared statements by the address of their `Stmt` (a static), so
    /// the lookup hashes a pointer, not the SQL text.
    prepared: HashMap<usize, Statement>,
    /// The transaction's BEGIN, until it is sent.
    begin: Option<&'static str>,
    later: Vec<Later>,
    /// Something of the current transaction has reached the server.
    started: bool,
    /// Rows changed by tallied deferred statements (webhook deliveries
    /// created), known once they have run.
    pub(super) tally: u64,
    /// Set when a statement failed inside the current transaction: the
    /// database has aborted it, and a COMMIT would silently roll back.
    pub(super) failed: bool,
}

impl PgConn {
    pub(super) fn open(connector: Arc<Connector>) -> StoreResult<Self> {
        let link = Link::open(&connector)?;
        Ok(Self { connector, link, prepared: HashMap::new(), begin: None, later: Vec::new(), started: false, tally: 0, failed: false })
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
        self.begin = Some(begin);
        self.later.clear();
        self.started = false;
        self.tally = 0;
        self.failed = false;
    }

    /// Sends what is held back and the COMMIT in one round trip. A unit
    /// that never reached the server and held nothing back sends nothing.
    pub(super) fn commit(&mut self) -> StoreResult<()> {
        if !self.started && self.later.is_empty() {
            self.begin = None;
            return Ok(());
        }
        self.trip(None, Some("COMMIT")).map(|_| ())
    }

    /// Drops what is held back and ends the transaction if it started.
    pub(super) fn rollback(&mut self) {
        self.later.clear();
        self.begin = None;
        if std::mem::take(&mut self.started)
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
        let types: Vec<Type> = stmt.params.iter().map(|t| pg_type(*t)).collect();
        let prepared = self.link.run(|c| c.prepare_typed(stmt.text(Dialect::Postgres), &types))?;
        self.prepared.insert(key, prepared.clone());
        Ok(prepared)
    }

    /// One round trip: the BEGIN if not yet sent, everything held back,
    /// then `last` (whose answer is returned) and `end`. Nothing of a
    /// transaction has run on the server before its first round trip, so
    /// when the connection turns out dead on that one (the server
    /// restarted, a proxy dropped it while idle) it is replaced and the
    /// same round trip sent again; unless it carried the COMMIT.
    fn trip(&mut self, last: Option<(&'static Stmt, &[Arg<'_>], Ask)>, end: Option<&'static str>) -> StoreResult<Answer> {
        let replayable = !self.started && end.is_none();
        let outcome = match self.send(last, end) {
            Err(e) if replayable && connection_lost(&e) => match self.reconnect() {
                Ok(()) => self.send(last, end),
                Err(again) => return Err(self.fail_with(again)),
            },
            other => other,
        };
        self.begin = None;
        self.later.clear();
        self.started = true;
        match outcome {
            Ok(answer) => Ok(answer),
            Err(e) if end.is_some() && e.code().is_none() => {
                self.failed = true;
                // The connection failed while the commit was on its way:
                // it may have happened. Not "try again", which could
                // repeat it.
                Err(StoreError::Internal(format!("the outcome of a commit is unknown: {e}")))
            }
            Err(e) => Err(self.fail_with(map(e))),
        }
    }

    fn fail_with(&mut self, e: StoreError) -> StoreError {
        self.failed = true;
        e
    }

    fn reconnect(&mut self) -> StoreResult<()> {
        self.link = Link::open(&self.connector)?;
        self.prepared.clear();
        Ok(())
    }

    /// Sends the round trip and reads every answer; the first error wins.
    fn send(&mut self, last: Option<(&'static Stmt, &[Arg<'_>], Ask)>, end: Option<&'static str>) -> Result<Answer, tokio_postgres::Error> {
        let mut statements = Vec::with_capacity(self.later.len());
        for i in 0..self.later.len() {
            statements.push(self.statement(self.later[i].stmt)?);
        }
        let last = match last {
            Some((stmt, args, ask)) => Some((self.statement(stmt)?, args, ask)),
            None => None,
        };
        let client = &self.link.client;
        let held: Vec<Vec<&(dyn ToSql + Sync)>> =
            self.later.iter().map(|l| l.args.iter().map(|a| a as &(dyn ToSql + Sync)).collect()).collect();
        let last_params: Vec<&(dyn ToSql + Sync)> =
            last.as_ref().map(|(_, args, _)| args.iter().map(|a| a as &(dyn ToSql + Sync)).collect()).unwrap_or_default();
        let mut futures: Vec<Pending<'_>> = Vec::with_capacity(held.len() + 3);
        if let Some(begin) = self.begin {
            futures.push(Box::pin(async move { client.batch_execute(begin).await.map(|()| Answer::Done) }));
        }
        for (statement, params) in statements.iter().zip(&held) {
            futures.push(Box::pin(async move { client.execute(statement, params).await.map(Answer::Changed) }));
        }
        if let Some((statement, _, ask)) = &last {
            let params = &last_params;
            futures.push(match ask {
                Ask::Rows => Box::pin(async move { client.query(statement, params).await.map(Answer::Rows) }),
                Ask::Changed => Box::pin(async move { client.execute(statement, params).await.map(Answer::Changed) }),
            });
        }
        if let Some(end) = end {
            futures.push(Box::pin(async move { client.batch_execute(end).await.map(|()| Answer::Done) }));
        }
        let skip = usize::from(self.begin.is_some());
        let answers = self.link.runtime.block_on(in_order(futures));
        let mut result = Ok(Answer::Done);
        for (i, answer) in answers.into_iter().enumerate() {
            match answer {
                Err(e) => return Err(e),
                Ok(Answer::Changed(n)) if i >= skip && i - skip < self.later.len() => {
                    if self.later[i - skip].tally {
                        self.tally += n;
                    }
                }
                Ok(answer) if last.is_some() && i == skip + self.later.len() => result = Ok(answer),
                Ok(_) => {}
            }
        }
        result
    }
}

/// Polls every future in the order given, so each sends its request in
/// that order (tokio-postgres sends on the first poll): the server runs
/// them in sequence, and they share one round trip.
async fn in_order<T>(mut futures: Vec<Pin<Box<dyn Future<Output = T> + '_>>>) -> Vec<T> {
    let mut answers: Vec<Option<T>> = futures.iter().map(|_| None).collect();
    poll_fn(|cx| {
        let mut done = true;
        for (future, answer) in futures.iter_mut().zip(answers.iter_mut()) {
            if answer.is_none() {
                match future.as_mut().poll(cx) {
                    Poll::Ready(value) => *answer = Some(value),
                    Poll::Pending => done = false,
                }
            }
        }
        if done { Poll::Ready(()) } else { Poll::Pending }
    })
    .await;
    answers.into_iter().flatten().collect()
}

fn pg_type(t: Ty) -> Type {
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
        let Answer::Rows(rows) = self.trip(Some((stmt, args, Ask::Rows)), None)? else {
            return Err(StoreError::Internal(format!("{}: no rows came back", stmt.name)));
        };
        for row in &rows {
            if !each(&PgRow(row))? {
                break;
            }
        }
        Ok(())
    }

    fn execute(&mut self, stmt: &'static Stmt, args: &[Arg<'_>]) -> StoreResult<u64> {
        match self.trip(Some((stmt, args, Ask::Changed)), None)? {
            Answer::Changed(n) => Ok(n),
            _ => Err(StoreError::Internal(format!("{}: no count came back", stmt.name))),
        }
    }

    fn defer(&mut self, stmt: &'static Stmt, args: &[Arg<'_>], tally: bool) -> StoreResult<Option<u64>> {
        self.later.push(Later { stmt, args: args.iter().map(Owned::of).collect(), tally });
        Ok(None)
    }

    fn prepare(&mut self, stmt: &'static Stmt) -> StoreResult<()> {
        self.statement(stmt).map(|_| ()).map_err(|e| self.fail_with(map(e)))
    }
}

struct PgRow<'a>(&'a tokio_postgres::Row);

impl PgRow<'_> {
    fn get<'r, T: tokio_postgres::types::FromSql<'r>>(&'r self, col: &str) -> StoreResult<Option<T>> {
        self.0.try_get::<_, Option<T>>(col).map_err(|e| StoreError::Internal(format!("column {col}: {e}")))
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
