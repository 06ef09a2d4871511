-- No statement reads pending deliveries in one due order across every
-- endpoint any more: the claim, the next due time and the health report
-- each go endpoint by endpoint through `webhook_deliveries_endpoint_due`.
-- Left in place, the index drew PostgreSQL's planner into walking every
-- endpoint's due deliveries for each endpoint (see
-- postgres/0024_claims_by_endpoint.sql); it goes on both databases, whose
-- schemas stay the same.
DROP INDEX IF EXISTS webhook_deliveries_due;
