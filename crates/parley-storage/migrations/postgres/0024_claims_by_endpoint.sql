-- The index of pending deliveries in one due order across every endpoint
-- has no reader left (the claim, the next due time and the health report
-- each go endpoint by endpoint through `webhook_deliveries_endpoint_due`),
-- and it misled the planner: costed cheaper because it follows the
-- table's order, it was chosen for an endpoint's oldest due deliveries
-- and filtered by endpoint row by row, so each endpoint of a claim walked
-- every endpoint's backlog (1.6 s a claim at 16,000 pending deliveries and
-- 1,000 endpoints). See sqlite/0031_claims_by_endpoint.sql.
DROP INDEX IF EXISTS webhook_deliveries_due;
