-- Webhook endpoints, their deliveries (one per event and endpoint) and
-- every attempt of each delivery.

CREATE TABLE webhook_endpoints (
    id                           INTEGER PRIMARY KEY,
    tenant_id                    INTEGER NOT NULL REFERENCES tenants(id),
    url                          TEXT    NOT NULL,
    events                       TEXT,             -- JSON array of kinds; NULL means every kind
    secret                       TEXT    NOT NULL, -- whsec_…: needed to sign, so kept, never logged
    previous_secret              TEXT,             -- still signs until previous_secret_expires_at
    previous_secret_expires_at   INTEGER,
    enabled                      INTEGER NOT NULL DEFAULT 1,
    disabled_reason              TEXT,
    created_at                   INTEGER NOT NULL
);
CREATE INDEX webhook_endpoints_tenant ON webhook_endpoints (tenant_id, id);

CREATE TABLE webhook_deliveries (
    id               INTEGER PRIMARY KEY,
    tenant_id        INTEGER NOT NULL REFERENCES tenants(id),
    endpoint_id      INTEGER NOT NULL REFERENCES webhook_endpoints(id) ON DELETE CASCADE,
    event_id         INTEGER NOT NULL REFERENCES webhook_events(id),
    status           TEXT    NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'failed')),
    attempts         INTEGER NOT NULL DEFAULT 0,
    next_attempt_at  INTEGER NOT NULL,
    lease_until      INTEGER,                      -- a worker holds it until then
    last_error       TEXT,
    created_at       INTEGER NOT NULL,
    finished_at      INTEGER
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at, id) WHERE status = 'pending';
CREATE INDEX webhook_deliveries_endpoint ON webhook_deliveries (endpoint_id, id DESC);

CREATE TABLE webhook_attempts (
    id           INTEGER PRIMARY KEY,
    tenant_id    INTEGER NOT NULL REFERENCES tenants(id),
    delivery_id  INTEGER NOT NULL REFERENCES webhook_deliveries(id) ON DELETE CASCADE,
    attempted_at INTEGER NOT NULL,
    duration_ms  INTEGER NOT NULL,
    status_code  INTEGER,                          -- NULL when no response came
    error        TEXT
);
CREATE INDEX webhook_attempts_delivery ON webhook_attempts (delivery_id, id);

-- Events are now fanned out to deliveries as they are written; the old
-- "dispatched" marker has no reader left.
UPDATE webhook_events SET dispatched_at = occurred_at WHERE dispatched_at IS NULL;
