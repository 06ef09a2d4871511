-- Verification emails are limited per mailbox, whatever the capitalisation
-- of its address: the count compares lower(target).
CREATE INDEX verification_challenges_target_key ON verification_challenges (lower(target), created_at);
DROP INDEX verification_challenges_target;
CREATE INDEX verification_challenges_target ON verification_challenges (target, created_at) WHERE method = 'sms_otp';

-- Webhook endpoints that keep failing are backed off as a whole: the
-- failures in a row, until when no attempt is made (circuit open), and how
-- many pauses in a row it had (each one twice as long).
ALTER TABLE webhook_endpoints ADD COLUMN failure_streak INTEGER NOT NULL DEFAULT 0;
ALTER TABLE webhook_endpoints ADD COLUMN paused_until INTEGER;
ALTER TABLE webhook_endpoints ADD COLUMN pause_count INTEGER NOT NULL DEFAULT 0;

-- Claims take each endpoint's oldest due deliveries.
CREATE INDEX webhook_deliveries_endpoint_due ON webhook_deliveries (endpoint_id, next_attempt_at, id) WHERE status = 'pending';

-- Retention: the sweeper prunes old events (with their deliveries and
-- attempts), old challenges and spent tokens in bounded batches.
CREATE INDEX webhook_events_occurred ON webhook_events (occurred_at);
CREATE INDEX webhook_deliveries_event ON webhook_deliveries (event_id);
CREATE INDEX verification_challenges_created ON verification_challenges (created_at);
CREATE INDEX operator_tokens_expiry ON operator_tokens (expires_at);
DROP INDEX webhook_events_pending;
