-- Written to run again harmlessly (IF NOT EXISTS): the upgrade tests re-apply
-- migrations from an older version over a database that has these.
-- Pushes waiting for a device: one row per device and conversation, queued
-- in the transaction of the change that causes it. A burst collapses into
-- the row (the latest reason and message win; `revision` counts them), and
-- a row that was sent stays, with `last_sent_at`, so the next push to the
-- same device about the same conversation waits out the spacing.
CREATE TABLE IF NOT EXISTS push_outbox (
    -- Never reused (rows are pruned): a relay tells pushes apart by it.
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    tenant_id       INTEGER NOT NULL REFERENCES tenants(id),
    device_id       INTEGER NOT NULL REFERENCES devices(id) ON DELETE CASCADE,
    operator_id     INTEGER NOT NULL REFERENCES operators(id) ON DELETE CASCADE,
    conversation_id INTEGER NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
    message_id      INTEGER,
    reason          TEXT    NOT NULL,
    pending         INTEGER NOT NULL,
    revision        INTEGER NOT NULL,
    due_at          INTEGER NOT NULL,
    lease_until     INTEGER,
    attempts        INTEGER NOT NULL,
    last_sent_at    INTEGER,
    created_at      INTEGER NOT NULL,
    UNIQUE (device_id, conversation_id)
);
-- What claims and the worker's wait read: the pending rows alone, by
-- tenant and due time, and by due time.
CREATE INDEX IF NOT EXISTS push_outbox_due ON push_outbox (tenant_id, due_at) WHERE pending = TRUE;
CREATE INDEX IF NOT EXISTS push_outbox_next ON push_outbox (due_at) WHERE pending = TRUE;
CREATE INDEX IF NOT EXISTS push_outbox_conversation ON push_outbox (conversation_id);
