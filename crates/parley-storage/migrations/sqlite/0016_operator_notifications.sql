-- Written to run again harmlessly (IF NOT EXISTS): the upgrade tests re-apply
-- migrations from an older version over a database that has these.
-- Operator notifications: the devices an operator's sign-ins push to, and
-- how far each operator has read each conversation.
--
-- A device belongs to the sign-in (login token or web session) that
-- registered it and goes with it. A push token is one device's, across
-- the whole service: registering it again moves it. It is unique by its
-- SHA-256 (`push_key`), since a browser's endpoint may be longer than an
-- index entry can hold. For a browser, the push token is its
-- subscription's endpoint and the subscription's keys sit beside it.
CREATE TABLE IF NOT EXISTS devices (
    id           INTEGER PRIMARY KEY,
    tenant_id    INTEGER NOT NULL REFERENCES tenants(id),
    operator_id  INTEGER NOT NULL REFERENCES operators(id) ON DELETE CASCADE,
    token_id     INTEGER NOT NULL REFERENCES operator_tokens(id) ON DELETE CASCADE,
    platform     TEXT    NOT NULL,
    push_token   TEXT    NOT NULL,
    push_key     BLOB    NOT NULL UNIQUE,
    web_p256dh   TEXT,
    web_auth     TEXT,
    app_id       TEXT,
    name         TEXT,
    locale       TEXT,
    created_at   INTEGER NOT NULL,
    last_push_at INTEGER
);
CREATE INDEX IF NOT EXISTS devices_operator ON devices (operator_id);
CREATE INDEX IF NOT EXISTS devices_token ON devices (token_id);

-- The last message each operator has read in each conversation; unread
-- counts are the visitor's messages after it. It never moves backwards.
CREATE TABLE IF NOT EXISTS read_markers (
    tenant_id       INTEGER NOT NULL REFERENCES tenants(id),
    operator_id     INTEGER NOT NULL REFERENCES operators(id) ON DELETE CASCADE,
    conversation_id INTEGER NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
    message_id      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL,
    PRIMARY KEY (operator_id, conversation_id)
);
CREATE INDEX IF NOT EXISTS read_markers_conversation ON read_markers (conversation_id);

-- What unread counts read: a visitor's messages of a conversation after an
-- id. Partial, so that operators' messages cost it nothing, and covering,
-- so that counting reads the index alone.
CREATE INDEX IF NOT EXISTS messages_visitor ON messages (conversation_id, id) WHERE sender_type = 'visitor';
