-- Erasing conversations (an admin's request, or PARLEY_CONVERSATION_RETENTION).
--
-- The objects of files whose rows are gone wait here to be removed from
-- the file store: the row is written in the transaction that removes the
-- file's cause (an erased conversation, an upload no message named), and
-- the object is removed after the commit. A crash or a store out of reach
-- in between leaves a row to try again, never an object nothing names.
CREATE TABLE IF NOT EXISTS file_removals (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    tenant_id   INTEGER NOT NULL REFERENCES tenants(id),
    storage_key TEXT    NOT NULL,
    created_at  INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS file_removals_created ON file_removals (created_at, id);

-- The retention sweep finds conversations by their last activity, across
-- tenants; an erasure finds a conversation's files.
CREATE INDEX IF NOT EXISTS conversations_activity ON conversations (last_message_at, id);
CREATE INDEX IF NOT EXISTS attachments_conversation ON attachments (conversation_id);
