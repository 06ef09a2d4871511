//! The SQL behind the domain's storage operations, written once for both
//! databases.
//!
//! Each aggregate (tenancy, operators, conversations, verification,
//! webhooks, system) has a file with its statements and its part of
//! `ReadTx`/`WriteTx`, implemented for [`Tx`]. A backend only provides a
//! [`Conn`]: run a statement with typed arguments and hand back its rows.
//! What the two databases spell differently sits in [`Dialect`].
//!
//! Every statement that touches tenant data has the tenant (and, for the
//! visitor side, the site) in its `WHERE` clause, taken from the scope the
//! domain passes in. The exceptions serve every tenant or resolve a
//! capability (a token, a magic link, the worker's claims, the sweeper's
//! batches) and are named for it in their operation's documentation.

mod arg;
mod dialect;
mod row;
mod stmt;

mod attachments;
mod audit;
mod canned;
mod continuity;
mod conversations;
mod erasure;
mod feed;
mod logins;
mod notifications;
mod operators;
mod password_links;
mod search;
mod system;
mod tenancy;
mod verification;
mod webhooks;

pub use arg::{Arg, Bound, IdList, Param, Ty};
pub use dialect::Dialect;
pub use row::Row;
pub(crate) use row::find_column;
pub(crate) use stmt::statements;
pub use stmt::{Decl, Lockable, Params, Plan, Stmt};
#[cfg(test)]
pub(crate) use webhooks::plan_queries as webhooks_plan_queries;

use parley_domain::model::ConversationId;
use parley_domain::store::{MessageCounts, StoreError, StoreResult};

/// What a backend's connection does for the operations: run a statement
/// and hand each row to `each` (which answers whether it wants more).
pub trait Conn {
    fn dialect(&self) -> Dialect;
    fn query(&mut self, stmt: &'static Stmt, args: &[Arg<'_>], each: &mut dyn FnMut(&dyn Row) -> StoreResult<bool>) -> StoreResult<()>;
    /// Runs a statement without rows; returns how many rows it changed.
    fn execute(&mut self, stmt: &'static Stmt, args: &[Arg<'_>]) -> StoreResult<u64>;
    /// Runs a statement the unit does not wait for: a backend may hold it
    /// back and send it with the next statement that needs an answer, or
    /// with the COMMIT (PostgreSQL does). Returns the rows it changed if it
    /// ran at once, `None` if it was held back. Its only possible failure
    /// must be the database's own error, which fails the unit wherever it
    /// surfaces: from the unit's next statement (so a caller must not read
    /// a `Duplicate` there as that statement's own) or from the commit. A
    /// statement whose count must be checked, or whose refusal a caller
    /// maps to a specific answer, is not deferred.
    /// `counts_deliveries`: its changed rows are webhook deliveries added.
    /// Run at once, its rows are counted by `Tx::defer` from the answer.
    fn defer(&mut self, stmt: &'static Stmt, args: &[Arg<'_>], _counts_deliveries: bool) -> StoreResult<Option<u64>> {
        self.execute(stmt, args).map(Some)
    }
    /// Prepares a statement without running it (the tests' check of every
    /// statement on every backend).
    fn prepare(&mut self, stmt: &'static Stmt) -> StoreResult<()>;
}

/// Every statement of every aggregate.
pub fn all_statements() -> impl Iterator<Item = &'static Stmt> {
    [
        attachments::ALL,
        audit::ALL,
        canned::ALL,
        continuity::ALL,
        conversations::ALL,
        erasure::ALL,
        feed::ALL,
        logins::ALL,
        notifications::ALL,
        operators::ALL,
        password_links::ALL,
        search::ALL,
        system::ALL,
        tenancy::ALL,
        verification::ALL,
        webhooks::ALL,
    ]
    .into_iter()
    .flatten()
    .copied()
}

/// Prepares every statement on `conn`; returns how many there are.
pub fn prepare_every(conn: &mut dyn Conn) -> Result<usize, String> {
    let mut n = 0;
    for stmt in all_statements() {
        conn.prepare(stmt).map_err(|e| format!("{}: {e}", stmt.name))?;
        n += 1;
    }
    Ok(n)
}

/// What a committed write unit tells the rest of the backend.
#[derive(Clone, Copy, Debug, Default)]
pub struct Effects {
    /// Webhook deliveries created: the delivery worker is woken.
    pub deliveries_added: u64,
    /// What an installation token resolves to changed: cached resolutions
    /// are dropped.
    pub installations_changed: bool,
    /// Entries were appended to the feed: the instance's follower reads.
    pub feed_appended: bool,
    /// Pushes were queued: the push worker is woken.
    pub pushes_queued: bool,
    /// Conversations were erased: the answers kept in memory about any
    /// conversation are dropped, here and by the other instances (an
    /// erasure leaves no feed entry naming its conversation to tell them).
    pub conversations_erased: bool,
    /// Messages added (for `/metrics`): counted by this instance only,
    /// never announced to the others.
    pub messages: MessageCounts,
}

impl Effects {
    /// The effects of two units committed together.
    pub fn add(&mut self, other: Effects) {
        self.deliveries_added += other.deliveries_added;
        self.installations_changed |= other.installations_changed;
        self.feed_appended |= other.feed_appended;
        self.pushes_queued |= other.pushes_queued;
        self.conversations_erased |= other.conversations_erased;
        self.messages.merge(other.messages);
    }
}

/// A unit of work's handle: the operations of `ReadTx`/`WriteTx` over one
/// connection inside one transaction (or, for reads on PostgreSQL, one
/// statement at a time).
pub struct Tx<'c> {
    conn: &'c mut dyn Conn,
    /// A write unit: rows it reads in order to change them are locked.
    writing: bool,
    pub effects: Effects,
    /// Conversations the unit changed in what a visitor's poll answers
    /// (an entry appended about them, their row written): counted after
    /// the commit, see `Signals::conversations_changed`. An erasure is an
    /// effect instead (`conversations_erased`).
    pub changed: Vec<ConversationId>,
    /// Conversations this unit holds locked (PostgreSQL), so a message
    /// insert does not lock again.
    locked: Vec<ConversationId>,
    /// Whether this unit holds the verification sends lock (PostgreSQL).
    sends_locked: bool,
}

impl<'c> Tx<'c> {
    pub fn read(conn: &'c mut dyn Conn) -> Self {
        Self::new(conn, false)
    }

    pub fn write(conn: &'c mut dyn Conn) -> Self {
        Self::new(conn, true)
    }

    fn new(conn: &'c mut dyn Conn, writing: bool) -> Self {
        Self { conn, writing, effects: Effects::default(), changed: Vec::new(), locked: Vec::new(), sends_locked: false }
    }

    fn dialect(&self) -> Dialect {
        self.conn.dialect()
    }

    /// Notes that the unit changed `id` (see `changed`).
    fn note_changed(&mut self, id: ConversationId) {
        if self.changed.last() != Some(&id) {
            self.changed.push(id);
        }
    }

    /// The statement of `params`, locking the rows it reads inside a
    /// write unit (declared with `locked`, see [`statements!`]).
    fn locking<P: Lockable>(&self, params: P) -> Locking<P> {
        Locking { params, writing: self.writing }
    }

    /// Runs a statement, handing each row to `each` until it answers
    /// false.
    fn each(&mut self, params: impl Params, each: &mut dyn FnMut(&dyn Row) -> StoreResult<bool>) -> StoreResult<()> {
        let mut bound = Bound::new();
        params.bind(&mut bound);
        self.conn.query(params.stmt(), bound.as_slice(), each)
    }

    /// The first row, if any.
    fn one<T>(&mut self, params: impl Params, f: impl Fn(&dyn Row) -> StoreResult<T>) -> StoreResult<Option<T>> {
        let mut found = None;
        self.each(params, &mut |r| {
            found = Some(f(r)?);
            Ok(false)
        })?;
        Ok(found)
    }

    fn all<T>(&mut self, params: impl Params, mut f: impl FnMut(&dyn Row) -> StoreResult<T>) -> StoreResult<Vec<T>> {
        let mut list = Vec::new();
        self.each(params, &mut |r| {
            list.push(f(r)?);
            Ok(true)
        })?;
        Ok(list)
    }

    fn exec(&mut self, params: impl Params) -> StoreResult<usize> {
        let mut bound = Bound::new();
        params.bind(&mut bound);
        let n = self.conn.execute(params.stmt(), bound.as_slice())?;
        Ok(usize::try_from(n).unwrap_or(usize::MAX))
    }

    /// A write whose answer the unit does not need (see `Conn::defer`);
    /// with `counts_deliveries`, the rows it changed are webhook
    /// deliveries added (a backend that holds it back counts them itself,
    /// once they have run).
    fn defer(&mut self, params: impl Params, counts_deliveries: bool) -> StoreResult<()> {
        let mut bound = Bound::new();
        params.bind(&mut bound);
        if let Some(n) = self.conn.defer(params.stmt(), bound.as_slice(), counts_deliveries)?
            && counts_deliveries
        {
            self.effects.deliveries_added += n;
        }
        Ok(())
    }

    /// Holds the lock named `number` until the commit, where write units
    /// run side by side (PostgreSQL); SQLite's single writer needs none.
    fn transaction_lock(&mut self, number: i64) -> StoreResult<()> {
        if self.dialect().locks_rows() {
            self.one(system::TRANSACTION_LOCK { number }, |_| Ok(()))?;
        }
        Ok(())
    }

    /// Runs an `INSERT … RETURNING id` and returns the id. Scoped inserts
    /// are written as `INSERT … SELECT … WHERE EXISTS (parent in scope)`,
    /// so a parent of another tenant inserts nothing and fails here.
    fn insert(&mut self, params: impl Params) -> StoreResult<i64> {
        let name = params.stmt().name;
        self.one(params, |r| r.i64("id"))?.ok_or_else(|| StoreError::Internal(format!("{name}: parent row not in scope")))
    }

    /// A count from a `SELECT COUNT(*) AS n`.
    fn count(&mut self, params: impl Params) -> StoreResult<u64> {
        Ok(self.one(params, |r| r.u64("n"))?.unwrap_or(0))
    }
}

/// A statement's parameters, run as its locking variant in a write unit.
struct Locking<P> {
    params: P,
    writing: bool,
}

impl<P: Lockable> Params for Locking<P> {
    fn stmt(&self) -> &'static Stmt {
        if self.writing { self.params.locked() } else { self.params.stmt() }
    }

    fn bind<'a>(&'a self, to: &mut Bound<'a>) {
        self.params.bind(to);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statement_names_are_unique_and_texts_build() {
        let mut names = std::collections::HashSet::new();
        for stmt in all_statements() {
            assert!(names.insert(stmt.name), "two statements named {}", stmt.name);
            for d in Dialect::ALL {
                let text = stmt.text(d).unwrap_or_else(|e| panic!("{e}"));
                assert!(!text.trim().is_empty(), "{}", stmt.name);
            }
        }
    }
}
