-- The naive durable post on PostgreSQL, the reference of issue 36's
-- target: a message insert and its conversation's update, in one
-- transaction, committed synchronously. No lock, no feed entry, no
-- fan-out, no check: the least a post can write. `scripts/bench
-- --postgres` runs it through pgbench on 16 connections and prints
-- Parley's widget POST as a ratio of it.
\set cid random(1, :conversations)
BEGIN;
INSERT INTO messages (tenant_id, conversation_id, sender_type, body, internal, created_at)
VALUES (1, :cid, 'visitor', 'A message from the bench, of an ordinary length.', FALSE, 1700000000000);
UPDATE conversations SET last_message_at = 1700000000000 WHERE tenant_id = 1 AND id = :cid;
COMMIT;
