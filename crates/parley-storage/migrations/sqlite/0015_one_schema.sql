-- parley: foreign keys off
-- The schema PostgreSQL has (the test in copy/tests.rs compares the two):
-- conversations are found by their visitor through an index, and an
-- operator's email is unique by lower(email), as every query compares it,
-- rather than by a COLLATE NOCASE constraint (which only SQLite knows).
-- SQLite cannot drop a column's UNIQUE, so the table is made again, with
-- foreign keys off (see sqlite/migrate.rs): the tables that refer to
-- operators keep their rows and, by name, refer to the new table.
CREATE INDEX IF NOT EXISTS conversations_visitor ON conversations (visitor_id);

CREATE TABLE operators_new (
    id            INTEGER PRIMARY KEY,
    tenant_id     INTEGER NOT NULL REFERENCES tenants(id),
    email         TEXT    NOT NULL,  -- unique by lower(email): login is by email alone
    name          TEXT    NOT NULL,
    password_hash TEXT    NOT NULL,
    role          TEXT    NOT NULL CHECK (role IN ('admin', 'agent')),
    active        INTEGER NOT NULL DEFAULT 1,
    created_at    INTEGER NOT NULL
);
INSERT INTO operators_new (id, tenant_id, email, name, password_hash, role, active, created_at)
    SELECT id, tenant_id, email, name, password_hash, role, active, created_at FROM operators;
DROP TABLE operators;
ALTER TABLE operators_new RENAME TO operators;
CREATE INDEX operators_tenant ON operators (tenant_id, id);
CREATE UNIQUE INDEX operators_email_lower ON operators (lower(email));
