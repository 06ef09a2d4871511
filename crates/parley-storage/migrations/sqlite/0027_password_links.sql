-- Set-password links: an invited operator's first password, or a new
-- one an admin sent a link for. Only the token's SHA-256 is kept; a link
-- works once, for 72 hours, and a newer link or a set password spends
-- the operator's others (`used_at`).
CREATE TABLE IF NOT EXISTS password_links (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    tenant_id   INTEGER NOT NULL REFERENCES tenants(id),
    operator_id INTEGER NOT NULL REFERENCES operators(id),
    token_hash  BLOB NOT NULL UNIQUE,
    created_at  INTEGER NOT NULL,
    expires_at  INTEGER NOT NULL,
    used_at     INTEGER
);
CREATE INDEX IF NOT EXISTS password_links_operator ON password_links (operator_id);
