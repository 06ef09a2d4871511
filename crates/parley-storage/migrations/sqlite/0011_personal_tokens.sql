-- Personal access tokens: bearer tokens an admin makes by name for
-- testing the mobile API, listed with their last use and revocable one by
-- one. They live beside login tokens and web sessions in operator_tokens;
-- `kind` tells the three apart (sessions were known by their device name
-- until now).
ALTER TABLE operator_tokens ADD COLUMN kind TEXT NOT NULL DEFAULT 'login';
ALTER TABLE operator_tokens ADD COLUMN last_used_at INTEGER;
UPDATE operator_tokens SET kind = 'session' WHERE device_name = 'web app';
CREATE INDEX operator_tokens_personal ON operator_tokens (tenant_id, operator_id) WHERE kind = 'personal';
