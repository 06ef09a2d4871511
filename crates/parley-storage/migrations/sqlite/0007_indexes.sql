-- Indexes the PostgreSQL schema has from the start: memberships by
-- tenant, pending deliveries by age (expiry), the demo outbox by age.
CREATE INDEX operator_sites_tenant ON operator_sites (tenant_id, operator_id);
CREATE INDEX webhook_deliveries_pending_created ON webhook_deliveries (created_at) WHERE status = 'pending';
CREATE INDEX sandbox_outbox_created ON sandbox_outbox (created_at);
