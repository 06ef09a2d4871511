//! What really differs between SQLite and PostgreSQL, and nothing else.
//!
//! Statements are written once, with named parameters (`:tenant`, which
//! become `?N` on SQLite and `$N` on PostgreSQL), `RETURNING`,
//! `TRUE`/`FALSE` and typed parameters, which both databases read alike. The few fragments below are spelled
//! differently by each; a statement that needs one builds its text from
//! the connection's dialect, once per process (see `Stmt`).

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dialect {
    Sqlite,
    Postgres,
}

impl Dialect {
    #[cfg(test)]
    pub(crate) const ALL: [Dialect; 2] = [Dialect::Sqlite, Dialect::Postgres];

    pub(crate) fn index(self) -> usize {
        match self {
            Dialect::Sqlite => 0,
            Dialect::Postgres => 1,
        }
    }

    /// The `n`th parameter: what a statement's named parameters become
    /// (see `Stmt`), and how `parley db copy` numbers those of the
    /// statements it builds from the catalog.
    pub fn placeholder(self, n: usize) -> String {
        match self {
            Dialect::Sqlite => format!("?{n}"),
            Dialect::Postgres => format!("${n}"),
        }
    }

    /// Most parameters one statement may carry.
    pub fn max_parameters(self) -> usize {
        match self {
            Dialect::Sqlite => 32_766,
            Dialect::Postgres => 65_535,
        }
    }

    /// The integers of a JSON array parameter (`[1, 2, 3]`) as a one-column
    /// subquery: how a list of ids is bound as a single parameter.
    pub fn id_list(self, param: &str) -> String {
        match self {
            Dialect::Sqlite => format!("SELECT value FROM json_each({param})"),
            // `[1,2]` read as the array `{1,2}`. Unnesting an array is
            // estimated at its length (ten when unknown, as in a generic
            // plan), where `jsonb_array_elements_text` counts a hundred
            // rows: enough for the planner to scan the whole table rather
            // than look each id up.
            Dialect::Postgres => format!("SELECT unnest(CAST(translate({param}, '[]', '{{}}') AS BIGINT[]))"),
        }
    }

    /// Whether the JSON array of strings in `array` (a text column) holds
    /// `value`.
    pub fn json_array_has(self, array: &str, value: &str) -> String {
        match self {
            Dialect::Sqlite => format!("EXISTS (SELECT 1 FROM json_each({array}) AS e WHERE e.value = {value})"),
            Dialect::Postgres => {
                format!("EXISTS (SELECT 1 FROM jsonb_array_elements_text(CAST({array} AS jsonb)) AS e(value) WHERE e.value = {value})")
            }
        }
    }

    /// Whether `column` is among the ids `subquery` selects, where the
    /// subquery refers to the outer query (the webhook claim's, endpoint
    /// by endpoint). PostgreSQL cannot make a semi-join of such an `IN`:
    /// it tested every row of the table against the subquery, which made
    /// a claim cost the backlog times the endpoints (16 s at 16,000
    /// pending deliveries). As an array, the ids can be looked up by key
    /// (whether they are is the plan's choice: the webhook claim is
    /// planned at each run for it). The array holds every id the subquery
    /// selects: only for a subquery bounded by its `LIMIT`.
    pub fn among(self, column: &str, subquery: &str) -> String {
        match self {
            Dialect::Sqlite => format!("{column} IN ({subquery})"),
            Dialect::Postgres => format!("{column} = ANY (ARRAY({subquery}))"),
        }
    }

    /// Whether write units run side by side and must lock what they change
    /// (PostgreSQL), or one at a time (SQLite's single writer).
    pub fn locks_rows(self) -> bool {
        self == Dialect::Postgres
    }

    /// Whether a statement can carry the writes that follow from it in
    /// data-modifying `WITH` clauses (PostgreSQL): a message's insert
    /// carries its conversation's summary, a feed entry its webhook
    /// fan-out. Each is then one statement where it was two, and on
    /// PostgreSQL a statement's own cost (not its rows) is most of what a
    /// post costs the database. SQLite has no data-modifying `WITH`:
    /// there they follow as statements of their own.
    pub fn chains_writes(self) -> bool {
        self == Dialect::Postgres
    }

    /// A statement that holds a lock named by the number `:number` until
    /// the commit, for checks that span rows no single row lock covers.
    pub fn transaction_lock(self) -> &'static str {
        match self {
            Dialect::Sqlite => "SELECT :number AS locked",
            Dialect::Postgres => "SELECT pg_advisory_xact_lock(:number) IS NULL AS locked",
        }
    }

    /// `sql` (a `SELECT` of work to take) with the rows of `alias` locked
    /// and those another transaction holds skipped. On PostgreSQL several
    /// instances claim from the same rows at once: each takes what nobody
    /// else is taking, without waiting. SQLite's single writer needs
    /// neither.
    pub fn claim(self, sql: String, alias: &str) -> String {
        match self {
            Dialect::Sqlite => sql,
            Dialect::Postgres => format!("{sql} FOR UPDATE OF {alias} SKIP LOCKED"),
        }
    }

    /// The position of the feed entries a write unit appends, first part
    /// (see `visible_tx`). SQLite commits one writer at a time, so its
    /// AUTOINCREMENT ids alone follow commit order and this stays 0; on
    /// PostgreSQL it is the writing transaction's id.
    pub fn writing_tx(self) -> &'static str {
        match self {
            Dialect::Sqlite => "0",
            Dialect::Postgres => "CAST(CAST(pg_current_xact_id() AS text) AS BIGINT)",
        }
    }

    /// Feed entries whose `tx` is below this are readable, and no entry
    /// below it can appear later. On PostgreSQL it is the oldest
    /// transaction that was still running as of the statement's snapshot
    /// and may write to this database: every transaction below it has
    /// ended or runs in another database (whose sessions cannot write
    /// here), so what it wrote is in the snapshot or never will be, while
    /// entries of a transaction at or above it wait, even committed, until
    /// every older one has ended. With none running, it is the snapshot's
    /// end. An id from a sequence could not serve alone: a transaction may
    /// take id 10, a later one id 11 and commit first, and a reader that
    /// took 11 and moved on would never see 10.
    ///
    /// A running transaction counts as another database's only when
    /// `pg_stat_activity` places it there (it shows every role the
    /// database and transaction id of every session); one it no longer
    /// shows (ended since) or a prepared one holds entries back as if it
    /// were this database's: the bound errs late, never early. When no
    /// readable entry is at or above the oldest running transaction
    /// (`pg_snapshot_xmin`), that cheaper bound returns the same rows and
    /// `pg_stat_activity` is not read at all. That is asked as the highest
    /// `tx` (one step down the position index) and not as `NOT EXISTS (…
    /// tx >= …)`, which PostgreSQL plans as a scan that stops at the first
    /// entry found: in the usual case there is none, and it read the whole
    /// feed on every statement. Otherwise `pg_stat_activity` is read once
    /// per statement (a scalar subquery, its list hashed). Two cases keep
    /// the plain `pg_snapshot_xmin`: a hot standby, whose snapshots list
    /// no running transaction, and a statement inside a transaction that
    /// has written, whose own id a snapshot leaves out of its list (the
    /// `LEAST`): a cursor read there must not pass the entries it is
    /// about to append. On SQLite every committed entry is readable.
    pub fn visible_tx(self) -> &'static str {
        match self {
            Dialect::Sqlite => "9223372036854775807",
            Dialect::Postgres => {
                "(SELECT LEAST(CAST(CAST(pg_current_xact_id_if_assigned() AS text) AS BIGINT), CASE
                    WHEN pg_is_in_recovery()
                      OR COALESCE((SELECT MAX(tx) FROM events), -1) < CAST(CAST(pg_snapshot_xmin(pg_current_snapshot()) AS text) AS BIGINT)
                    THEN CAST(CAST(pg_snapshot_xmin(pg_current_snapshot()) AS text) AS BIGINT)
                    ELSE COALESCE(
                        (SELECT MIN(CAST(CAST(x AS text) AS BIGINT)) FROM pg_snapshot_xip(pg_current_snapshot()) AS x
                         WHERE MOD(CAST(CAST(x AS text) AS BIGINT), 4294967296) NOT IN (
                             SELECT CAST(CAST(a.backend_xid AS text) AS BIGINT) FROM pg_stat_activity a
                             WHERE a.datname <> current_database() AND a.backend_xid IS NOT NULL)),
                        CAST(CAST(pg_snapshot_xmax(pg_current_snapshot()) AS text) AS BIGINT))
                    END))"
            }
        }
    }

    /// Whether committed feed entries can wait behind a running
    /// transaction (see `visible_tx`); on SQLite they never do, so what
    /// asks about them need not ask the database.
    pub fn holds_feed_back(self) -> bool {
        matches!(self, Dialect::Postgres)
    }

    /// Whether message `m` holds every word of the search `:query` (as
    /// [`Self::search_query`] wrote it), through the search index: FTS5
    /// on SQLite, the GIN index of `to_tsvector('simple', translate(body, …))` on
    /// PostgreSQL (see the `search` migrations).
    pub fn message_matches(self) -> &'static str {
        match self {
            Dialect::Sqlite => "m.id IN (SELECT rowid FROM messages_fts WHERE messages_fts MATCH :query)",
            Dialect::Postgres => "to_tsvector('simple', translate(m.body, '@./:+_', '      ')) @@ to_tsquery('simple', :query)",
        }
    }

    /// The ids of tenant `:tenant`'s visitors whose name and email hold
    /// every word of `:query`, through their search index (the `search_at_scale`
    /// migrations; PostgreSQL's expression is its index's).
    pub fn visitor_matches(self) -> &'static str {
        match self {
            Dialect::Sqlite => {
                "SELECT v.id AS visitor_id FROM visitors_fts f JOIN visitors v ON v.id = f.rowid
                 WHERE visitors_fts MATCH :query AND v.tenant_id = :tenant"
            }
            Dialect::Postgres => {
                "SELECT v.id AS visitor_id FROM visitors v WHERE v.tenant_id = :tenant
                 AND to_tsvector('simple', translate(COALESCE(v.name, '') || ' ' || COALESCE(v.email, ''), '@./:+_', '      '))
                     @@ to_tsquery('simple', :query)"
            }
        }
    }

    /// Whether the full-text index hands matching messages over newest
    /// first and stops where it is told (FTS5 walks its lists in rowid
    /// order, either way), so that a search reads only as many as its page
    /// needs, however common its words. PostgreSQL's GIN index has no
    /// order: a search there reads the latest messages first and the index
    /// only when those did not fill the page (`sql::search`).
    pub fn matches_newest_first(self) -> bool {
        matches!(self, Dialect::Sqlite)
    }

    /// Messages within `scope` (a condition on conversation `c`) that
    /// match `:query`, from id `:before` down, newest first: `FROM …
    /// ORDER BY`. The index leads where it hands them over in that order
    /// ([`Self::matches_newest_first`]); elsewhere this is a plain filter.
    pub fn newest_matches(self, scope: &str) -> String {
        let (from, matches, order) = match self {
            Dialect::Sqlite => ("messages_fts f JOIN messages m ON m.id = f.rowid", "messages_fts MATCH :query", "f.rowid"),
            Dialect::Postgres => ("messages m", self.message_matches(), "m.id"),
        };
        format!(
            "FROM {from} JOIN conversations c ON c.id = m.conversation_id AND c.tenant_id = m.tenant_id
             WHERE {matches} AND {order} < :before AND {scope} ORDER BY {order} DESC"
        )
    }

    /// Replaces the rows of `conversation_counts` up to id `:upto` with
    /// one row per group holding their sum. PostgreSQL does it in one
    /// statement: a row of a transaction that commits meanwhile is then
    /// either folded or left, where a separate DELETE could remove it
    /// unfolded. SQLite's single writer allows the plain two statements
    /// (`DROP_FOLDED_COUNTS` follows, see [`Self::folds_in_one_statement`]).
    pub fn fold_counts(self) -> String {
        let group = "tenant_id, site_id, status, assignee_id";
        match self {
            Dialect::Sqlite => format!(
                "INSERT INTO conversation_counts ({group}, n)
                 SELECT {group}, SUM(n) FROM conversation_counts WHERE id <= :upto GROUP BY {group} HAVING SUM(n) <> 0"
            ),
            Dialect::Postgres => format!(
                "WITH folded AS (DELETE FROM conversation_counts WHERE id <= :upto RETURNING {group}, n)
                 INSERT INTO conversation_counts ({group}, n)
                 SELECT {group}, SUM(n) FROM folded GROUP BY {group} HAVING SUM(n) <> 0"
            ),
        }
    }

    /// Whether [`Self::fold_counts`] also removed what it folded.
    pub fn folds_in_one_statement(self) -> bool {
        matches!(self, Dialect::Postgres)
    }

    /// `words` (letters and digits only, see `parley_domain::search`) as
    /// the dialect's full-text query: every word required, as a whole
    /// word or as the start of one where `search::as_prefix` says so.
    pub fn search_query(self, words: &[String]) -> String {
        // How each dialect quotes a word, marks a prefix and joins them.
        let (quote, prefix, join) = match self {
            Dialect::Sqlite => ('"', "*", " "),
            Dialect::Postgres => ('\'', ":*", " & "),
        };
        let doubled = format!("{quote}{quote}");
        words
            .iter()
            .enumerate()
            .map(|(i, w)| {
                let star = if parley_domain::search::as_prefix(words, i) { prefix } else { "" };
                format!("{quote}{}{quote}{star}", w.replace(quote, &doubled))
            })
            .collect::<Vec<_>>()
            .join(join)
    }

    /// The session whose transaction is the feed's bound (`visible_tx`)
    /// while committed entries wait behind it; no row otherwise, or when
    /// the bound is a prepared transaction. `backend_xid` is the
    /// transaction id without its epoch, hence the modulo. Its state and
    /// start are shown to roles with `pg_read_all_stats` (or the
    /// session's own), null to others. SQLite never holds entries back.
    pub fn feed_blocker(self) -> String {
        match self {
            Dialect::Sqlite => {
                "SELECT 0 AS pid, NULL AS database, NULL AS application, NULL AS state, NULL AS running_us WHERE 0 = 1".into()
            }
            Dialect::Postgres => format!(
                "WITH b AS (SELECT {} AS tx)
                 SELECT CAST(a.pid AS BIGINT) AS pid, CAST(a.datname AS text) AS database, a.application_name AS application,
                        a.state AS state,
                        CAST(EXTRACT(EPOCH FROM clock_timestamp() - a.xact_start) * 1000000 AS BIGINT) AS running_us
                 FROM pg_stat_activity a, b
                 WHERE a.backend_xid IS NOT NULL
                   AND CAST(CAST(a.backend_xid AS text) AS BIGINT) = MOD(b.tx, 4294967296)
                   AND EXISTS (SELECT 1 FROM events WHERE tx >= b.tx)",
                self.visible_tx()
            ),
        }
    }

    /// Entries of `alias` after the position bound as `tx` and `id`. On
    /// SQLite every `tx` is 0, and SQLite seeks its index by the row
    /// value's first column alone, so the row value would scan every
    /// retained entry: it is spelled as the equality it amounts to there.
    pub fn after_position(self, alias: &str, tx: &str, id: &str) -> String {
        match self {
            Dialect::Sqlite => format!("{alias}.tx = {tx} AND {alias}.id > {id}"),
            Dialect::Postgres => format!("({alias}.tx, {alias}.id) > ({tx}, {id})"),
        }
    }

    /// Tenant `tenant`'s entries of `alias` after the position `tx`, `id`,
    /// and the order to read them in: `(condition, order)`.
    ///
    /// On PostgreSQL the tenant is bounded by a row value, not an
    /// equality. An equality makes the tenant a constant to the planner,
    /// so the position index (`tx`, `id`) gives the order as well as the
    /// tenant's index does, and with few tenants a generic plan may walk
    /// it, reading every tenant's entries. Ordered by the tenant first,
    /// only the tenant's index (`tenant_id`, `tx`, `id`) gives the order.
    /// SQLite seeks a row value by its first column alone (see
    /// [`Self::after_position`]), and plans with the values, so it keeps
    /// the equality.
    pub fn tenant_entries_after(self, alias: &str, tenant: &str, tx: &str, id: &str) -> (String, String) {
        match self {
            Dialect::Sqlite => {
                (format!("{alias}.tenant_id = {tenant} AND {}", self.after_position(alias, tx, id)), format!("{alias}.tx, {alias}.id"))
            }
            Dialect::Postgres => (
                format!("({alias}.tenant_id, {alias}.tx, {alias}.id) > ({tenant}, {tx}, {id}) AND {alias}.tenant_id <= {tenant}"),
                format!("{alias}.tenant_id, {alias}.tx, {alias}.id"),
            ),
        }
    }

    /// Tenant `tenant`'s entries of `alias` below transaction `bound`, and
    /// the order that reads the latest first: `(condition, order)`, for
    /// the reason [`Self::tenant_entries_after`] gives.
    pub fn tenant_entries_before(self, alias: &str, tenant: &str, bound: &str) -> (String, String) {
        match self {
            Dialect::Sqlite => {
                (format!("{alias}.tenant_id = {tenant} AND {alias}.tx < {bound}"), format!("{alias}.tx DESC, {alias}.id DESC"))
            }
            Dialect::Postgres => (
                format!("({alias}.tenant_id, {alias}.tx) < ({tenant}, {bound}) AND {alias}.tenant_id >= {tenant}"),
                format!("{alias}.tenant_id DESC, {alias}.tx DESC, {alias}.id DESC"),
            ),
        }
    }

    /// `sql` (a `SELECT`) with its rows locked, see `for_update`.
    pub fn locked(self, sql: String) -> String {
        format!("{sql}{}", self.for_update())
    }

    /// Appended to a `SELECT` whose rows a write unit goes on to change.
    /// SQLite runs one write transaction at a time, so nothing can change
    /// them meanwhile; PostgreSQL runs writers side by side, and the lock
    /// makes a concurrent unit wait for this one's commit.
    fn for_update(self) -> &'static str {
        match self {
            Dialect::Sqlite => "",
            Dialect::Postgres => " FOR UPDATE",
        }
    }
}
