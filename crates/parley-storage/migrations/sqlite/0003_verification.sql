-- Visitor verification: challenges (codes stored only as salted digests),
-- what a verification established, and the demo's outbox.

CREATE TABLE verification_challenges (
    id               INTEGER PRIMARY KEY,
    tenant_id        INTEGER NOT NULL REFERENCES tenants(id),
    site_id          INTEGER NOT NULL REFERENCES sites(id),
    conversation_id  INTEGER NOT NULL REFERENCES conversations(id),
    visitor_id       INTEGER NOT NULL REFERENCES visitors(id),
    method           TEXT    NOT NULL CHECK (method IN ('email_otp', 'sms_otp', 'magic_link')),
    target           TEXT    NOT NULL,           -- the normalised email or phone
    code_salt        BLOB    NOT NULL,
    code_hash        BLOB    NOT NULL,           -- SHA-256(salt || code)
    status           TEXT    NOT NULL CHECK (status IN ('active', 'verified', 'superseded', 'spent', 'failed')),
    attempts         INTEGER NOT NULL DEFAULT 0, -- wrong codes so far
    created_at       INTEGER NOT NULL,
    expires_at       INTEGER NOT NULL,
    completed_at     INTEGER
);
CREATE INDEX verification_challenges_conversation ON verification_challenges (conversation_id, created_at);
CREATE INDEX verification_challenges_tenant ON verification_challenges (tenant_id, created_at);
CREATE INDEX verification_challenges_target ON verification_challenges (target, created_at);

ALTER TABLE visitors ADD COLUMN verified_method TEXT;
ALTER TABLE visitors ADD COLUMN verified_target TEXT;
ALTER TABLE conversations ADD COLUMN verified_method TEXT;

-- What `parley demo` would have sent, for the sandbox page.
CREATE TABLE sandbox_outbox (
    id          INTEGER PRIMARY KEY,
    tenant_id   INTEGER NOT NULL REFERENCES tenants(id),
    channel     TEXT    NOT NULL CHECK (channel IN ('email', 'sms')),
    recipient   TEXT    NOT NULL,
    subject     TEXT,
    body        TEXT    NOT NULL,
    created_at  INTEGER NOT NULL
);
CREATE INDEX sandbox_outbox_tenant ON sandbox_outbox (tenant_id, id);
