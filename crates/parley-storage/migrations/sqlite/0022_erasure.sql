-- parley: foreign keys off
-- Erasing conversations (an admin's request, or PARLEY_CONVERSATION_RETENTION).
--
-- The objects of files whose rows are gone wait here to be removed from
-- the file store: the row is written in the transaction that removes the
-- file's cause (an erased conversation, an upload no message named or
-- one refused), and the object is removed after the commit. A crash or a
-- store out of reach in between leaves a row to try again, never an
-- object nothing names. One the store keeps refusing is tried again
-- later and later (`next_attempt_at`), so it does not hold up the rest.

-- An erased conversation's id, and its visitor's, must never be given to
-- a later one: signed links, unsubscribe tokens, a widget's open stream
-- and partners' copies name them. SQLite without AUTOINCREMENT hands out
-- the largest id plus one, so erasing the newest row would free its id;
-- PostgreSQL's sequences never reuse one. The two tables are made again
-- with AUTOINCREMENT, with foreign keys off (see sqlite/migrate.rs): the
-- tables that refer to them keep their rows and, by name, refer to the
-- new tables. Copying the rows with their ids sets the sequences.
CREATE TABLE visitors_new (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    tenant_id       INTEGER NOT NULL REFERENCES tenants(id),
    site_id         INTEGER NOT NULL REFERENCES sites(id),
    uuid            TEXT    NOT NULL,
    name            TEXT,
    email           TEXT,
    phone           TEXT,
    last_url        TEXT,
    verified_at     INTEGER,
    created_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL,
    verified_method TEXT,
    verified_target TEXT,
    user_id         TEXT,
    site_email      TEXT,
    attributes      TEXT,
    locale          TEXT,
    UNIQUE (site_id, uuid)
);
INSERT INTO visitors_new (id, tenant_id, site_id, uuid, name, email, phone, last_url, verified_at, created_at, updated_at,
                          verified_method, verified_target, user_id, site_email, attributes, locale)
    SELECT id, tenant_id, site_id, uuid, name, email, phone, last_url, verified_at, created_at, updated_at,
           verified_method, verified_target, user_id, site_email, attributes, locale FROM visitors;
DROP TABLE visitors;
ALTER TABLE visitors_new RENAME TO visitors;
CREATE UNIQUE INDEX visitors_site_user ON visitors (site_id, user_id) WHERE user_id IS NOT NULL;

CREATE TABLE conversations_new (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    public_id       TEXT    NOT NULL UNIQUE,
    tenant_id       INTEGER NOT NULL REFERENCES tenants(id),
    site_id         INTEGER NOT NULL REFERENCES sites(id),
    installation_id INTEGER NOT NULL REFERENCES installations(id),
    visitor_id      INTEGER NOT NULL REFERENCES visitors(id),
    status          TEXT    NOT NULL CHECK (status IN ('unassigned', 'assigned', 'closed')),
    subject         TEXT,
    assignee_id     INTEGER REFERENCES operators(id),
    start_url       TEXT,
    created_at      INTEGER NOT NULL,
    last_message_at INTEGER NOT NULL,
    closed_at       INTEGER,
    verified_at     INTEGER,
    verified_method TEXT,
    away_replied_at INTEGER
);
INSERT INTO conversations_new (id, public_id, tenant_id, site_id, installation_id, visitor_id, status, subject, assignee_id,
                               start_url, created_at, last_message_at, closed_at, verified_at, verified_method, away_replied_at)
    SELECT id, public_id, tenant_id, site_id, installation_id, visitor_id, status, subject, assignee_id,
           start_url, created_at, last_message_at, closed_at, verified_at, verified_method, away_replied_at FROM conversations;
DROP TABLE conversations;
ALTER TABLE conversations_new RENAME TO conversations;
CREATE INDEX conversations_tenant_activity ON conversations (tenant_id, last_message_at DESC, id DESC);
CREATE INDEX conversations_site_activity ON conversations (site_id, last_message_at DESC, id DESC);
CREATE INDEX conversations_idle ON conversations (last_message_at) WHERE status <> 'closed';
CREATE INDEX conversations_visitor ON conversations (visitor_id);

CREATE TABLE IF NOT EXISTS file_removals (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    tenant_id       INTEGER NOT NULL REFERENCES tenants(id),
    storage_key     TEXT    NOT NULL,
    created_at      INTEGER NOT NULL,
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS file_removals_due ON file_removals (next_attempt_at, id);

-- The retention sweep finds conversations by their last message, across
-- tenants. An erasure finds a conversation's files, and deleting its
-- messages and its visitor checks the feed entries and challenges that
-- could still name them: without these, each check reads a whole table.
CREATE INDEX IF NOT EXISTS conversations_activity ON conversations (last_message_at, id);
CREATE INDEX IF NOT EXISTS attachments_conversation ON attachments (conversation_id);
CREATE INDEX IF NOT EXISTS events_message ON events (message_id);
CREATE INDEX IF NOT EXISTS verification_challenges_visitor ON verification_challenges (visitor_id);
