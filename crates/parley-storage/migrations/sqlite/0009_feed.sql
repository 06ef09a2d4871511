-- The feed: the webhook outbox becomes the one ordered log of every change
-- a client can see. Webhook deliveries, the live streams and the operators'
-- catch-up all read it. Each entry names the conversation (and its site)
-- and the message it is about, whether the conversation's visitor sees it
-- (`widget`) and whether it is a webhook event (`webhook`; notes, system
-- messages and assignment changes are not).
--
-- Entries are ordered by (tx, id). On SQLite one writer commits at a time,
-- so AUTOINCREMENT ids already follow commit order and `tx` stays 0; on
-- PostgreSQL `tx` is the writing transaction's id (see docs/architecture.md).
ALTER TABLE webhook_events RENAME TO events;
ALTER TABLE events ADD COLUMN conversation_id INTEGER REFERENCES conversations(id);
ALTER TABLE events ADD COLUMN site_id INTEGER REFERENCES sites(id);
ALTER TABLE events ADD COLUMN message_id INTEGER REFERENCES messages(id);
ALTER TABLE events ADD COLUMN widget INTEGER NOT NULL DEFAULT FALSE;
ALTER TABLE events ADD COLUMN webhook INTEGER NOT NULL DEFAULT TRUE;
ALTER TABLE events ADD COLUMN tx INTEGER NOT NULL DEFAULT 0;
DROP INDEX webhook_events_occurred;
CREATE INDEX events_position ON events (tx, id);
CREATE INDEX events_tenant ON events (tenant_id, tx, id);
CREATE INDEX events_conversation ON events (conversation_id, tx, id) WHERE conversation_id IS NOT NULL;
CREATE INDEX events_occurred ON events (occurred_at);
