-- Visitors who leave: read receipts, the email thread of a conversation,
-- the widget streams that are open, and the emails waiting to go.
--
-- When the visitor's widget showed an operator message: the read receipt
-- operators see, and what the widget's unread count and the email
-- fallback read (through the partial index below, the unread ones alone).
ALTER TABLE messages ADD COLUMN read_by_visitor_at INTEGER;
CREATE INDEX IF NOT EXISTS messages_unread_by_visitor ON messages (conversation_id, id)
    WHERE (sender_type = 'operator') AND (internal = FALSE) AND (read_by_visitor_at IS NULL);

-- Until when a widget stream of the conversation counts as open, as each
-- instance holding one says: pushed forward while one stays open there,
-- brought close when the last one there ends. The latest of its rows is
-- what counts, so an instance whose stream ended never shortens another's.
CREATE TABLE IF NOT EXISTS widget_presence (
    conversation_id INTEGER NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
    instance        TEXT    NOT NULL,
    tenant_id       INTEGER NOT NULL REFERENCES tenants(id),
    open_until      INTEGER NOT NULL,
    PRIMARY KEY (conversation_id, instance)
);

-- A conversation's email thread with its visitor: the Message-ID of its
-- first email and of its latest (either way), the last operator message
-- an email carried, the one-click unsubscribe, the last transcript.
CREATE TABLE IF NOT EXISTS mail_threads (
    conversation_id INTEGER PRIMARY KEY REFERENCES conversations(id) ON DELETE CASCADE,
    tenant_id       INTEGER NOT NULL REFERENCES tenants(id),
    root_id         TEXT,
    last_id         TEXT,
    emailed_through INTEGER NOT NULL,
    unsubscribed_at INTEGER,
    transcript_at   INTEGER,
    updated_at      INTEGER NOT NULL
);

-- Emails to visitors waiting to go: at most one of each kind per
-- conversation (`reply`: the unread operator messages; `transcript`),
-- queued in the transaction that decides it and deleted once sent. A
-- reply is due its delay after `created_at` until `due_at` says otherwise
-- (a retry, a visitor still on the page); `revision` counts the operator
-- messages that came while it waited, so an email that was being sent
-- when one came does not take the newer one's turn. It holds only what
-- waits (a row per conversation at most), so its claims read it whole.
CREATE TABLE IF NOT EXISTS visitor_mail (
    id              INTEGER PRIMARY KEY,
    tenant_id       INTEGER NOT NULL REFERENCES tenants(id),
    conversation_id INTEGER NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
    kind            TEXT    NOT NULL,
    due_at          INTEGER,
    lease_until     INTEGER,
    attempts        INTEGER NOT NULL,
    revision        INTEGER NOT NULL,
    last_error      TEXT,
    created_at      INTEGER NOT NULL,
    UNIQUE (conversation_id, kind)
);
