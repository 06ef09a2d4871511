-- The `scale` scenario's data, written straight into the bench tenant's
-- site {site}: {conversations} visitors with a conversation each and
-- {per} messages per conversation, alternately the visitor's and an
-- operator's, a third of the conversations closed, their summaries kept
-- as the service keeps them. The words vary: one message in ten speaks
-- of a refund, one in ten thousand of a zebra, so searches of common and
-- of rare words both have answers. The conversations are recent (the first
-- is a few minutes ago: the idle sweep leaves them alone) and the
-- messages are numbered in the order they were said, as the service
-- numbers them. PostgreSQL's twin is postgres.sql.
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < {conversations})
INSERT INTO visitors (tenant_id, site_id, uuid, name, email, created_at, updated_at)
SELECT s.tenant_id, s.id, 'scale-' || i, 'Scale visitor ' || i, 'scale' || i || '@example.com', {start} + i * 10, {start} + i * 10
FROM n, sites s WHERE s.id = {site};

INSERT INTO conversations (public_id, tenant_id, site_id, installation_id, visitor_id, status, created_at, last_message_at, closed_at)
SELECT 'conv_scale' || v.id, v.tenant_id, v.site_id, (SELECT MIN(id) FROM installations WHERE site_id = {site}), v.id,
       CASE WHEN v.id % 3 = 0 THEN 'closed' ELSE 'unassigned' END, v.created_at, v.created_at + {per},
       CASE WHEN v.id % 3 = 0 THEN v.created_at + {per} END
FROM visitors v WHERE v.site_id = {site} AND v.uuid LIKE 'scale-%';

WITH RECURSIVE k(j) AS (SELECT 0 UNION ALL SELECT j + 1 FROM k WHERE j < {per} - 1)
INSERT INTO messages (tenant_id, conversation_id, sender_type, body, internal, created_at)
SELECT c.tenant_id, c.id, CASE WHEN j % 2 = 0 THEN 'visitor' ELSE 'operator' END,
       CASE WHEN (c.id * {per} + j) % 10000 = 7 THEN 'a zebra ate my parcel ' || c.id
            WHEN (c.id * {per} + j) % 10 = 3 THEN 'I would like a refund for order ' || (c.id * 7 + j)
            ELSE 'Message ' || j || ' about order ' || (c.id * 7 + j) || ', delivery and tracking' END,
       FALSE, c.created_at + j
FROM conversations c, k WHERE c.site_id = {site} AND c.public_id LIKE 'conv_scale%'
ORDER BY c.id, j;

UPDATE conversations SET
    last_body = (SELECT substr(m.body, 1, 500) FROM messages m WHERE m.conversation_id = conversations.id ORDER BY m.id DESC LIMIT 1),
    waiting_since = NULL
WHERE site_id = {site} AND public_id LIKE 'conv_scale%';

-- The inbox's totals folded as the sweeper folds them (`FOLD_COUNTS`),
-- so the bench measures a total as a running service reads it.
CREATE TEMP TABLE folded AS SELECT tenant_id, site_id, status, assignee_id, SUM(n) AS n FROM conversation_counts
GROUP BY tenant_id, site_id, status, assignee_id HAVING SUM(n) <> 0;
DELETE FROM conversation_counts;
INSERT INTO conversation_counts (tenant_id, site_id, status, assignee_id, n) SELECT tenant_id, site_id, status, assignee_id, n FROM folded;
DROP TABLE folded;
