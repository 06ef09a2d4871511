-- Times are integer milliseconds since the Unix epoch (UTC), booleans are
-- 0/1 integers: the same values the PostgreSQL schema stores.

CREATE TABLE tenants (
    id          INTEGER PRIMARY KEY,
    slug        TEXT    NOT NULL UNIQUE,
    name        TEXT    NOT NULL,
    created_at  INTEGER NOT NULL
);

CREATE TABLE sites (
    id              INTEGER PRIMARY KEY,
    tenant_id       INTEGER NOT NULL REFERENCES tenants(id),
    name            TEXT    NOT NULL,
    domains         TEXT    NOT NULL DEFAULT '[]',   -- JSON array of host names
    widget_title    TEXT    NOT NULL DEFAULT '',
    widget_greeting TEXT    NOT NULL DEFAULT '',
    accent_color    TEXT    NOT NULL DEFAULT '#2563eb',
    privacy_text    TEXT    NOT NULL DEFAULT '',
    privacy_url     TEXT,
    created_at      INTEGER NOT NULL
);
CREATE INDEX sites_tenant ON sites (tenant_id, id);

CREATE TABLE installations (
    id                INTEGER PRIMARY KEY,
    tenant_id         INTEGER NOT NULL REFERENCES tenants(id),
    site_id           INTEGER NOT NULL REFERENCES sites(id),
    token             TEXT    NOT NULL UNIQUE,
    name              TEXT    NOT NULL,
    installation_type TEXT    NOT NULL DEFAULT 'web',
    enabled           INTEGER NOT NULL DEFAULT 1,
    heartbeat_status  TEXT    NOT NULL DEFAULT 'pending'
                      CHECK (heartbeat_status IN ('pending', 'healthy', 'stale')),
    last_seen_at      INTEGER,
    widget_version    TEXT,
    page_host         TEXT,
    reported_type     TEXT,
    created_at        INTEGER NOT NULL
);
CREATE INDEX installations_site ON installations (tenant_id, site_id, id);

CREATE TABLE operators (
    id            INTEGER PRIMARY KEY,
    tenant_id     INTEGER NOT NULL REFERENCES tenants(id),
    email         TEXT    NOT NULL UNIQUE COLLATE NOCASE,  -- login is by email alone
    name          TEXT    NOT NULL,
    password_hash TEXT    NOT NULL,
    role          TEXT    NOT NULL CHECK (role IN ('admin', 'agent')),
    active        INTEGER NOT NULL DEFAULT 1,
    created_at    INTEGER NOT NULL
);
CREATE INDEX operators_tenant ON operators (tenant_id, id);

CREATE TABLE operator_sites (
    tenant_id   INTEGER NOT NULL REFERENCES tenants(id),
    operator_id INTEGER NOT NULL REFERENCES operators(id) ON DELETE CASCADE,
    site_id     INTEGER NOT NULL REFERENCES sites(id) ON DELETE CASCADE,
    PRIMARY KEY (operator_id, site_id)
);

CREATE TABLE operator_tokens (
    id          INTEGER PRIMARY KEY,
    tenant_id   INTEGER NOT NULL REFERENCES tenants(id),
    operator_id INTEGER NOT NULL REFERENCES operators(id) ON DELETE CASCADE,
    token_hash  BLOB    NOT NULL UNIQUE,   -- SHA-256 of the bearer token
    device_name TEXT,
    created_at  INTEGER NOT NULL,
    expires_at  INTEGER NOT NULL,
    revoked_at  INTEGER
);
CREATE INDEX operator_tokens_operator ON operator_tokens (operator_id);

CREATE TABLE visitors (
    id          INTEGER PRIMARY KEY,
    tenant_id   INTEGER NOT NULL REFERENCES tenants(id),
    site_id     INTEGER NOT NULL REFERENCES sites(id),
    uuid        TEXT    NOT NULL,
    name        TEXT,
    email       TEXT,
    phone       TEXT,
    last_url    TEXT,
    verified_at INTEGER,
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL,
    UNIQUE (site_id, uuid)
);

CREATE TABLE conversations (
    id              INTEGER PRIMARY KEY,
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
    verified_at     INTEGER
);
CREATE INDEX conversations_tenant_activity ON conversations (tenant_id, last_message_at DESC, id DESC);
CREATE INDEX conversations_site_activity ON conversations (site_id, last_message_at DESC, id DESC);

-- AUTOINCREMENT: ids are never reused, so `after_id` polling stays correct
-- even if messages are ever deleted.
CREATE TABLE messages (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    tenant_id       INTEGER NOT NULL REFERENCES tenants(id),
    conversation_id INTEGER NOT NULL REFERENCES conversations(id),
    sender_type     TEXT    NOT NULL CHECK (sender_type IN ('visitor', 'operator', 'system')),
    sender_id       INTEGER,
    sender_name     TEXT,
    body            TEXT    NOT NULL,
    internal        INTEGER NOT NULL DEFAULT 0,
    created_at      INTEGER NOT NULL
);
CREATE INDEX messages_conversation ON messages (conversation_id, id);

-- The transactional outbox: one row per event, written with its cause.
CREATE TABLE webhook_events (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    event_id      TEXT    NOT NULL UNIQUE,
    tenant_id     INTEGER NOT NULL REFERENCES tenants(id),
    kind          TEXT    NOT NULL,
    payload       TEXT    NOT NULL,
    occurred_at   INTEGER NOT NULL,
    dispatched_at INTEGER            -- set once fanned out to endpoints
);
CREATE INDEX webhook_events_pending ON webhook_events (id) WHERE dispatched_at IS NULL;
