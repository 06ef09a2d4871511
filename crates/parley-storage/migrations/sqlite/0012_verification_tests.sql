-- Test messages admins send to check a verification channel. Counted
-- here, inside the write that records the next one, so their limits (per
-- tenant, per recipient) hold across restarts and instances like the
-- challenges' do. `recipient` is the phone number, or the email address
-- in its matching form (lower-cased).
CREATE TABLE verification_tests (
    id          INTEGER PRIMARY KEY,
    tenant_id   INTEGER NOT NULL REFERENCES tenants(id),
    channel     TEXT    NOT NULL CHECK (channel IN ('email', 'sms')),
    recipient   TEXT    NOT NULL,
    created_at  INTEGER NOT NULL
);
CREATE INDEX verification_tests_tenant ON verification_tests (tenant_id, created_at);
CREATE INDEX verification_tests_recipient ON verification_tests (recipient, created_at);
