-- The feed (see the SQLite migration 0009): the webhook outbox becomes the
-- one ordered log of every change a client can see.
--
-- `tx` is the id of the transaction that wrote the entry. Sequence values
-- are not given out in commit order, so entries are read in (tx, id) order
-- and only below the oldest transaction still running: no entry can then
-- appear behind a position a reader has passed (docs/architecture.md).
ALTER TABLE webhook_events RENAME TO events;
ALTER TABLE events ADD COLUMN conversation_id BIGINT REFERENCES conversations(id);
ALTER TABLE events ADD COLUMN site_id BIGINT REFERENCES sites(id);
ALTER TABLE events ADD COLUMN message_id BIGINT REFERENCES messages(id);
ALTER TABLE events ADD COLUMN widget BOOLEAN NOT NULL DEFAULT FALSE;
ALTER TABLE events ADD COLUMN webhook BOOLEAN NOT NULL DEFAULT TRUE;
ALTER TABLE events ADD COLUMN tx BIGINT NOT NULL DEFAULT 0;
ALTER INDEX webhook_events_pkey RENAME TO events_pkey;
ALTER INDEX webhook_events_event_id_key RENAME TO events_event_id_key;
DROP INDEX webhook_events_tenant;
DROP INDEX webhook_events_occurred;
CREATE INDEX events_position ON events (tx, id);
CREATE INDEX events_tenant ON events (tenant_id, tx, id);
CREATE INDEX events_conversation ON events (conversation_id, tx, id) WHERE conversation_id IS NOT NULL;
CREATE INDEX events_occurred ON events (occurred_at);
