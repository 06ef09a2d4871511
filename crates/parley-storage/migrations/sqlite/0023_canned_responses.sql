-- Canned responses: texts a team answers with often, under a shortcut
-- typed after `/` in the reply box; lower case, one per tenant.
CREATE TABLE IF NOT EXISTS canned_responses (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    tenant_id   INTEGER NOT NULL REFERENCES tenants(id),
    shortcut    TEXT    NOT NULL,
    body        TEXT    NOT NULL,
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL,
    UNIQUE (tenant_id, shortcut)
);
