-- One message post in a practical floor of what a post costs PostgreSQL
-- on this machine, the second pgbench reference of
-- `scripts/bench --postgres`, which puts eight of these between a BEGIN
-- and a COMMIT so that eight posts share one commit. Not Parley's
-- statements but the same writes (the locked conversation, the message,
-- the conversation's activity, the event and its fan-out) as one
-- statement. Each client writes to its own share of the conversations
-- (`clients`, passed with -D like `conversations`, is the number of
-- pgbench connections), so batches never wait on one another's row
-- locks, and scripts/bench drops the foreign keys to the tenant and site
-- rows every post shares first. Larger batches would cost less again.
\set part :conversations / :clients
\set base :client_id * :part
\set cid :base + random(1, :part)
\set ev random(1, 9000000000000000000)
WITH c AS (SELECT c.id, c.site_id FROM conversations c WHERE c.tenant_id = 1 AND c.id = :cid FOR UPDATE),
 m AS (INSERT INTO messages (tenant_id, conversation_id, sender_type, sender_id, sender_name, body, internal, created_at)
       SELECT 1, c.id, 'visitor', NULL, NULL, 'A message from the bench, of an ordinary length.', FALSE, 1700000000000 FROM c RETURNING id),
 u AS (UPDATE conversations AS x SET status = 'unassigned', assignee_id = NULL, last_message_at = 1700000000000, closed_at = NULL, verified_at = NULL
       FROM c WHERE x.id = c.id),
 e AS (INSERT INTO events (event_id, tenant_id, kind, payload, occurred_at, dispatched_at, conversation_id, site_id, message_id, widget, webhook, tx)
       SELECT 'evt_floor_' || :ev, 1, 'message.created', repeat('x', 330), 1700000000000, 1700000000000, c.id, c.site_id, m.id, TRUE, TRUE,
              CAST(CAST(pg_current_xact_id() AS text) AS BIGINT) FROM c CROSS JOIN m RETURNING id),
 d AS (INSERT INTO webhook_deliveries (tenant_id, endpoint_id, event_id, next_attempt_at, created_at)
       SELECT 1, w.id, e.id, 1700000000000, 1700000000000 FROM e CROSS JOIN webhook_endpoints w WHERE w.tenant_id = 1 AND w.enabled = TRUE)
SELECT m.id FROM m;
