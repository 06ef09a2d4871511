-- The statements of one widget message post on PostgreSQL, as Parley sends
-- them (see crates/parley-storage/src/sql/conversations.rs and webhooks.rs),
-- for the pgbench reference of `scripts/bench --postgres`. The conversation
-- is picked by id (up to `conversations`, the highest id, which
-- scripts/bench passes) instead of its public id, and the event payload is
-- a text of the usual size (pgbench would read the colons of a JSON literal
-- as its variables); everything else is the same work.
\set cid random(1, :conversations)
\set ev random(1, 9000000000000000000)
BEGIN;
SELECT c.id AS c_id, c.public_id AS c_public_id, c.tenant_id AS c_tenant_id, c.site_id AS c_site_id,
       c.visitor_id AS c_visitor_id, c.status AS c_status, c.assignee_id AS c_assignee_id,
       c.created_at AS c_created_at, c.last_message_at AS c_last_message_at,
       v.id AS v_id, v.name AS v_name, v.last_url AS v_last_url
  FROM conversations c
  JOIN visitors v ON v.id = c.visitor_id AND v.tenant_id = c.tenant_id AND v.site_id = c.site_id
 WHERE c.tenant_id = 1 AND (CAST(NULL AS BIGINT) IS NULL OR c.site_id = CAST(NULL AS BIGINT))
   AND (CAST(NULL AS BIGINT) IS NULL OR FALSE OR c.site_id IN (SELECT os.site_id FROM operator_sites os WHERE os.operator_id = CAST(NULL AS BIGINT) AND os.tenant_id = 1))
   AND c.id = :cid FOR UPDATE \gset
INSERT INTO messages (tenant_id, conversation_id, sender_type, sender_id, sender_name, body, internal, created_at)
SELECT 1, :cid, 'visitor', NULL, NULL, 'A message from the bench, of an ordinary length.', FALSE, 1700000000000
 WHERE EXISTS (SELECT 1 FROM conversations c WHERE c.tenant_id = 1 AND c.id = :cid)
RETURNING id AS m_id \gset
UPDATE conversations AS c SET status = 'unassigned', assignee_id = NULL, last_message_at = 1700000000000, closed_at = NULL, verified_at = NULL
 WHERE c.tenant_id = 1 AND c.id = :cid;
INSERT INTO events (event_id, tenant_id, kind, payload, occurred_at, dispatched_at, conversation_id, site_id, message_id, widget, webhook, tx)
VALUES ('evt_pgbench_' || :ev, 1, 'message.created',
        repeat('x', 330),
        1700000000000, 1700000000000, :cid, :c_site_id, :m_id, TRUE, TRUE, CAST(CAST(pg_current_xact_id() AS text) AS BIGINT));
INSERT INTO webhook_deliveries (tenant_id, endpoint_id, event_id, next_attempt_at, created_at)
SELECT 1, w.id, e.id, 1700000000000, 1700000000000 FROM events e CROSS JOIN webhook_endpoints w
 WHERE e.event_id = 'evt_pgbench_' || :ev AND e.tenant_id = 1 AND w.tenant_id = 1 AND w.enabled = TRUE;
COMMIT;
