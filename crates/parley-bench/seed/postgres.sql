-- The `scale` scenario's data on PostgreSQL: the same rows as sqlite.sql.
INSERT INTO visitors (tenant_id, site_id, uuid, name, email, created_at, updated_at)
SELECT s.tenant_id, s.id, 'scale-' || i, 'Scale visitor ' || i, 'scale' || i || '@example.com', {start} + i * 10, {start} + i * 10
FROM generate_series(1, {conversations}) AS i, sites s WHERE s.id = {site};

INSERT INTO conversations (public_id, tenant_id, site_id, installation_id, visitor_id, status, created_at, last_message_at, closed_at)
SELECT 'conv_scale' || v.id, v.tenant_id, v.site_id, (SELECT MIN(id) FROM installations WHERE site_id = {site}), v.id,
       CASE WHEN v.id % 3 = 0 THEN 'closed' ELSE 'unassigned' END, v.created_at, v.created_at + {per},
       CASE WHEN v.id % 3 = 0 THEN v.created_at + {per} END
FROM visitors v WHERE v.site_id = {site} AND v.uuid LIKE 'scale-%';

INSERT INTO messages (tenant_id, conversation_id, sender_type, body, internal, created_at)
SELECT c.tenant_id, c.id, CASE WHEN j % 2 = 0 THEN 'visitor' ELSE 'operator' END,
       CASE WHEN (c.id * {per} + j) % 10000 = 7 THEN 'a zebra ate my parcel ' || c.id
            WHEN (c.id * {per} + j) % 10 = 3 THEN 'I would like a refund for order ' || (c.id * 7 + j)
            ELSE 'Message ' || j || ' about order ' || (c.id * 7 + j) || ', delivery and tracking' END,
       FALSE, c.created_at + j
FROM conversations c, generate_series(0, {per} - 1) AS j WHERE c.site_id = {site} AND c.public_id LIKE 'conv_scale%'
ORDER BY c.id, j;

UPDATE conversations c SET last_body = (SELECT substr(m.body, 1, 500) FROM messages m WHERE m.conversation_id = c.id ORDER BY m.id DESC LIMIT 1)
WHERE c.site_id = {site} AND c.public_id LIKE 'conv_scale%';
-- The inbox's totals folded as the sweeper folds them (`FOLD_COUNTS`).
WITH folded AS (DELETE FROM conversation_counts RETURNING tenant_id, site_id, status, assignee_id, n)
INSERT INTO conversation_counts (tenant_id, site_id, status, assignee_id, n)
SELECT tenant_id, site_id, status, assignee_id, SUM(n) FROM folded GROUP BY tenant_id, site_id, status, assignee_id HAVING SUM(n) <> 0;
-- As autovacuum leaves a table that has settled, so that it does not run
-- while the bench measures.
VACUUM ANALYZE;
