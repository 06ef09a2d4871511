-- The audit log: every admin change with who made it (the operator and
-- its email then; no operator for retention), from which address and
-- when. `target_id` names the changed record without a reference: an
-- erasure's entry outlives its conversation. `details` is a JSON object.
CREATE TABLE IF NOT EXISTS audit_entries (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    tenant_id      INTEGER NOT NULL REFERENCES tenants(id),
    operator_id    INTEGER REFERENCES operators(id),
    actor          TEXT    NOT NULL,
    client_address TEXT,
    action         TEXT    NOT NULL,
    target_id      INTEGER,
    details        TEXT    NOT NULL,
    created_at     INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS audit_entries_tenant ON audit_entries (tenant_id, id);
