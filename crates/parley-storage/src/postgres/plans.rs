//! The plans PostgreSQL makes for every statement on filled tables.
//!
//! A statement runs as a prepared statement, and after five runs
//! PostgreSQL may switch to its generic plan: one made without the
//! values. With few tenants its estimates can make a walk of the wrong
//! index look cheap (the feed's head once walked every tenant's entries
//! backwards), and a benchmark found it weeks later. Here each statement
//! is planned generically against tables of a realistic shape, and a
//! scan of a large table fails the test, naming the statement.

use crate::testing;

/// Two tenants, the first with most of the rows: 20,000 conversations of
/// four messages, each message with its feed entry (a fifth of them for
/// the feed alone) and each other entry with a webhook delivery to one of
/// four endpoints (a quarter of them pending; four more endpoints have
/// none). At this size a scan
/// costs PostgreSQL more than any index path, so one planned is a plan
/// that grows with the table.
const FILL: &str = "
INSERT INTO tenants (id, slug, name, created_at) VALUES (1, 'big', 'Big', 0), (2, 'small', 'Small', 0);
INSERT INTO sites (id, tenant_id, name, created_at) VALUES (1, 1, 'big site', 0), (2, 2, 'small site', 0), (3, 1, 'second', 0);
INSERT INTO installations (id, tenant_id, site_id, token, name, created_at) VALUES (1, 1, 1, 'tok1', 'web', 0), (2, 2, 2, 'tok2', 'web', 0), (3, 1, 3, 'tok3', 'web', 0);
INSERT INTO operators (id, tenant_id, email, name, password_hash, role, created_at)
SELECT i, CASE WHEN i % 10 = 0 THEN 2 ELSE 1 END, 'op' || i || '@example.com', 'Op ' || i, 'x', CASE WHEN i % 5 = 0 THEN 'admin' ELSE 'agent' END, 0
FROM generate_series(1, 40) AS i;
INSERT INTO operator_sites (tenant_id, operator_id, site_id) SELECT tenant_id, id, CASE WHEN tenant_id = 2 THEN 2 ELSE 1 + (id % 2) * 2 END FROM operators;
INSERT INTO visitors (id, tenant_id, site_id, uuid, name, email, created_at, updated_at)
SELECT i, CASE WHEN i % 100 = 0 THEN 2 ELSE 1 END, CASE WHEN i % 100 = 0 THEN 2 WHEN i % 7 = 0 THEN 3 ELSE 1 END,
       'v' || i, 'Visitor ' || i, 'v' || i || '@example.com', i * 1000, i * 1000
FROM generate_series(1, 20000) AS i;
INSERT INTO conversations (id, public_id, tenant_id, site_id, installation_id, visitor_id, status, assignee_id, created_at, last_message_at, closed_at)
SELECT v.id, 'conv_' || v.id, v.tenant_id, v.site_id, v.site_id, v.id,
       CASE v.id % 3 WHEN 0 THEN 'closed' WHEN 1 THEN 'unassigned' ELSE 'assigned' END,
       CASE WHEN v.id % 3 = 2 THEN (SELECT MIN(o.id) FROM operators o WHERE o.tenant_id = v.tenant_id) END,
       v.created_at, v.created_at + 8, CASE WHEN v.id % 3 = 0 THEN v.created_at + 8 END
FROM visitors v;
INSERT INTO messages (tenant_id, conversation_id, sender_type, body, internal, created_at, client_message_id)
SELECT c.tenant_id, c.id, CASE WHEN j % 2 = 0 THEN 'visitor' ELSE 'operator' END, 'Message ' || j || ' about order ' || c.id,
       FALSE, c.created_at + j, 'cm' || c.id || '-' || j
FROM conversations c, generate_series(0, 3) AS j ORDER BY c.id, j;
INSERT INTO events (event_id, tenant_id, kind, payload, occurred_at, dispatched_at, conversation_id, site_id, message_id, widget, webhook, tx)
SELECT 'evt_' || m.id, m.tenant_id, 'message.created', '{}', m.created_at, m.created_at, m.conversation_id, c.site_id, m.id, TRUE, m.id % 5 <> 0, m.id
FROM messages m JOIN conversations c ON c.id = m.conversation_id ORDER BY m.id;
INSERT INTO webhook_endpoints (id, tenant_id, url, secret, created_at)
SELECT i, CASE WHEN i % 4 = 0 THEN 2 ELSE 1 END, 'https://hooks.example.com/' || i, 'whsec', 0 FROM generate_series(1, 8) AS i;
INSERT INTO webhook_deliveries (tenant_id, endpoint_id, event_id, status, next_attempt_at, created_at)
SELECT e.tenant_id, CASE WHEN e.tenant_id = 2 THEN 4 ELSE 1 + e.id % 3 END, e.id,
       CASE WHEN e.id % 5 = 1 THEN 'pending' ELSE 'delivered' END, e.occurred_at, e.occurred_at
FROM events e WHERE e.webhook ORDER BY e.id;
SELECT setval(pg_get_serial_sequence(t, 'id'), 1000000) FROM unnest(ARRAY['tenants', 'sites', 'installations', 'operators', 'visitors', 'conversations', 'webhook_endpoints']) AS t;
";

/// Tables that grow with use: a statement that scans one of them
/// slows down with every conversation.
const LARGE: &[&str] = &["messages", "events", "conversations", "visitors", "webhook_deliveries"];

/// What the hottest statements must walk: the feed's reads on every
/// stream open and catch-up, the polls. (A post's webhook fan-out rides
/// in its feed entry's insert here, `Dialect::chains_writes`; `FAN_OUT`
/// is SQLite's.)
const USES: &[(&str, &str)] = &[
    ("FEED_HEAD", "Index Scan Backward using events_tenant on events f"),
    // The bound of what is readable, asked by every feed read.
    ("FEED_HEAD", "Index Only Scan Backward using events_position on events"),
    ("VISITOR_FEED_HEAD", "Index Scan Backward using events_conversation on events f"),
    ("FEED_AFTER", "Index Scan using events_tenant on events f"),
    ("CONVERSATION_FEED_AFTER", "Index Scan using events_conversation on events f"),
    ("FEED_TAIL", "Index Scan using events_position on events f"),
    ("POLL_AFTER", "Index Scan using messages_conversation on messages m"),
    ("MESSAGES_AFTER", "Index Scan using messages_conversation on messages m"),
    ("SEARCH_DETAILS", "Index Scan using conversations_pkey on conversations c"),
    // The health report's oldest due delivery, endpoint by endpoint.
    ("OLDEST_DUE_DELIVERY", "using webhook_deliveries_endpoint_due on webhook_deliveries"),
    ("NEXT_DELIVERY_DUE", "using webhook_deliveries_endpoint_due on webhook_deliveries"),
];

/// Statements that may scan a large table, and why.
const MAY_SCAN: &[(&str, &str)] = &[(
    "SEARCH_NEWEST",
    "SQLite's search, which walks its full-text index newest first; PostgreSQL's runs SEARCH_RECENT and SEARCH_INDEXED instead",
)];

/// The plan PostgreSQL makes for `stmt`, prepared with its parameters'
/// types as the connection prepares it, and run with `values` (all NULL
/// when none are given: a generic plan needs none).
fn plan(client: &mut postgres::Client, stmt: &'static crate::sql::Stmt, values: &[&str]) -> Result<String, String> {
    let sql = stmt.text(crate::sql::Dialect::Postgres).map_err(|e| e.to_string())?;
    let types: Vec<String> = stmt.types().map(|t| super::conn::pg_type(t).name().to_owned()).collect();
    client.batch_execute("DEALLOCATE ALL").map_err(|e| super::describe(&e))?;
    let values = if values.is_empty() { vec!["NULL"; types.len()] } else { values.to_vec() };
    let (declared, args) = if types.is_empty() {
        (String::new(), String::new())
    } else {
        (format!("({})", types.join(", ")), format!("({})", values.join(", ")))
    };
    client.batch_execute(&format!("PREPARE planned{declared} AS {sql}")).map_err(|e| super::describe(&e))?;
    let rows = client.query(&format!("EXPLAIN EXECUTE planned{args}"), &[]).map_err(|e| super::describe(&e))?;
    Ok(rows.iter().map(|r| r.get::<_, String>(0)).collect::<Vec<_>>().join("\n"))
}

/// A fresh database filled by `batches` (each sent on its own: `VACUUM`
/// cannot share one), and a connection to it planning as
/// `plans` says (`force_generic_plan` or `force_custom_plan`), without JIT.
fn filled(server: &str, batches: &[&str], plans: &str) -> (testing::TestDatabase, postgres::Client) {
    let db = testing::fresh_postgres(server).expect("database");
    let mut client = super::connector(&db.url).expect("connector").blocking().expect("client");
    for sql in batches {
        client.batch_execute(sql).expect("fill");
    }
    client.batch_execute(&format!("SET plan_cache_mode = {plans}; SET jit = off")).expect("plan settings");
    (db, client)
}

#[test]
fn no_statement_scans_a_large_table_and_hot_ones_walk_their_index_under_a_generic_plan() {
    let Some(server) = testing::postgres_url() else { return };
    let (_db, mut client) = filled(&server, &[FILL, "VACUUM ANALYZE"], "force_generic_plan");
    for (name, _) in USES.iter().chain(MAY_SCAN) {
        assert!(crate::sql::all_statements().any(|s| s.name == *name), "no statement {name}");
    }
    let mut scans = Vec::new();
    // A statement planned with its values at each run has no generic
    // plan to go astray; the benchmark measures those.
    for stmt in crate::sql::all_statements().filter(|s| s.plan != crate::sql::Plan::EachRun) {
        let plan = plan(&mut client, stmt, &[]).unwrap_or_else(|e| panic!("{}: {e}", stmt.name));
        let scanned: Vec<&str> = LARGE.iter().copied().filter(|t| plan.contains(&format!("Seq Scan on {t} "))).collect();
        if !scanned.is_empty() && !MAY_SCAN.iter().any(|(name, _)| *name == stmt.name) {
            scans.push(format!("{} scans {scanned:?}:\n{plan}", stmt.name));
        }
        for (_, path) in USES.iter().filter(|(name, _)| *name == stmt.name) {
            if !plan.contains(path) {
                scans.push(format!("{} does not take {path}:\n{plan}", stmt.name));
            }
        }
    }
    assert!(scans.is_empty(), "{} plans went astray:\n\n{}", scans.len(), scans.join("\n\n"));
}

/// Statistics taken before a burst of deliveries: the tables' sizes as of
/// the last `ANALYZE` say there are none.
const BURST: &str = "
INSERT INTO tenants (id, slug, name, created_at) VALUES (1, 'a', 'A', 0), (2, 'b', 'B', 0);
INSERT INTO webhook_endpoints (id, tenant_id, url, secret, created_at)
SELECT i, 1 + i % 2, 'https://hooks.example.com/' || i, 'whsec', 0 FROM generate_series(1, 8) AS i;
ANALYZE;
INSERT INTO events (event_id, tenant_id, kind, payload, occurred_at, dispatched_at, widget, webhook, tx)
SELECT 'evt_' || i, 1 + i % 2, 'message.created', '{}', i, i, FALSE, TRUE, i FROM generate_series(1, 20000) AS i;
INSERT INTO webhook_deliveries (tenant_id, endpoint_id, event_id, next_attempt_at, created_at)
SELECT e.tenant_id, w.id, e.id, e.occurred_at, e.occurred_at FROM events e JOIN webhook_endpoints w ON w.tenant_id = e.tenant_id AND w.id <= 2;
";

/// The webhook worker's claim is planned at each run (`Plan::EachRun`), so
/// a burst of deliveries after the last statistics (autovacuum off, or
/// not yet round) still gets the plan of its size: each endpoint's due
/// deliveries through the endpoint's index, then each of them by key. A
/// plan made once, when the table was empty, read every delivery for
/// every endpoint (16 s a claim at 16,000 pending), and with statistics of
/// the burst an index of every endpoint's due deliveries drew the planner
/// into walking them all for each endpoint (it is gone, migration 24).
#[test]
fn the_webhook_claim_is_planned_for_the_backlog_it_finds() {
    let Some(server) = testing::postgres_url() else { return };
    let (_db, mut client) = filled(&server, &[BURST], "force_custom_plan");
    // Statistics from before the burst, then statistics of it.
    for statistics in ["before", "after"] {
        if statistics == "after" {
            client.batch_execute("ANALYZE").expect("statistics of the burst");
        }
        for name in ["DUE_DELIVERIES", "CLAIMABLE_DELIVERIES"] {
            let stmt = crate::sql::all_statements().find(|s| s.name == name).unwrap_or_else(|| panic!("no statement {name}"));
            assert_eq!(stmt.plan, crate::sql::Plan::EachRun, "{name} is planned at each run");
            let plan = plan(&mut client, stmt, &["9000000000000000000", "64"]).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert!(
                !plan.contains("Seq Scan on webhook_deliveries"),
                "{name}, statistics {statistics} the burst, reads every delivery:\n{plan}"
            );
            for path in ["using webhook_deliveries_endpoint_due on webhook_deliveries d2", "Index Cond: (id = ANY"] {
                assert!(plan.contains(path), "{name}, statistics {statistics} the burst, does not take {path}:\n{plan}");
            }
        }
    }
}
