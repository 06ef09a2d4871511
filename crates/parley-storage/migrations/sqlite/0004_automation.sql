-- Automation: what the sweeper looks for, and service-wide state such as
-- when it last ran (shared by every instance on this database).

CREATE TABLE system_state (
    key   TEXT PRIMARY KEY,
    value INTEGER NOT NULL
);

CREATE INDEX conversations_idle ON conversations (last_message_at) WHERE status <> 'closed';
CREATE INDEX installations_heartbeat ON installations (last_seen_at) WHERE heartbeat_status = 'healthy';
