-- The inbox's total (`COUNT_CONVERSATIONS`) without counting every
-- conversation: triggers record each change of a conversation's group
-- (tenant, site, status, assignee) as a row of +1 or -1, and the sweep
-- folds the rows into one per group (`FOLD_COUNTS`). Writers only ever
-- add rows, so concurrent writers never wait on a shared counter; a count
-- sums the scope's rows. PostgreSQL keeps the same table with a trigger
-- function (postgres/0023_search_at_scale.sql). The table is derived, so
-- `parley db copy` leaves it to the target's triggers
-- (`copy::catalog::DERIVED`).
CREATE TABLE IF NOT EXISTS conversation_counts (
    id INTEGER PRIMARY KEY,
    tenant_id INTEGER NOT NULL,
    site_id INTEGER NOT NULL,
    status TEXT NOT NULL,
    assignee_id INTEGER,
    n INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS conversation_counts_group ON conversation_counts (tenant_id, site_id, status, assignee_id);
INSERT INTO conversation_counts (tenant_id, site_id, status, assignee_id, n)
SELECT tenant_id, site_id, status, assignee_id, COUNT(*) FROM conversations GROUP BY tenant_id, site_id, status, assignee_id;
CREATE TRIGGER IF NOT EXISTS conversation_counts_insert AFTER INSERT ON conversations BEGIN
    INSERT INTO conversation_counts (tenant_id, site_id, status, assignee_id, n) VALUES (new.tenant_id, new.site_id, new.status, new.assignee_id, 1);
END;
CREATE TRIGGER IF NOT EXISTS conversation_counts_delete AFTER DELETE ON conversations BEGIN
    INSERT INTO conversation_counts (tenant_id, site_id, status, assignee_id, n) VALUES (old.tenant_id, old.site_id, old.status, old.assignee_id, -1);
END;
CREATE TRIGGER IF NOT EXISTS conversation_counts_update AFTER UPDATE OF tenant_id, site_id, status, assignee_id ON conversations
WHEN old.tenant_id IS NOT new.tenant_id OR old.site_id IS NOT new.site_id OR old.status IS NOT new.status OR old.assignee_id IS NOT new.assignee_id
BEGIN
    INSERT INTO conversation_counts (tenant_id, site_id, status, assignee_id, n) VALUES (old.tenant_id, old.site_id, old.status, old.assignee_id, -1);
    INSERT INTO conversation_counts (tenant_id, site_id, status, assignee_id, n) VALUES (new.tenant_id, new.site_id, new.status, new.assignee_id, 1);
END;

-- Searching visitors by name and email word by word, as messages are
-- searched (`GET mobile/search`): an FTS5 index kept by triggers from the
-- visitors table, whose text it does not store twice. PostgreSQL's
-- counterpart is an expression index (postgres/0023_search_at_scale.sql);
-- neither is data (`copy::catalog::is_search_table`).
-- Visitors are written far less often than messages, so their index
-- keeps prefix indexes: a word typed in part (`sca`) would otherwise read
-- every indexed word it starts, one per visitor when emails are unique.
CREATE VIRTUAL TABLE IF NOT EXISTS visitors_fts USING fts5(
    name, email, content = 'visitors', content_rowid = 'id', tokenize = 'unicode61 remove_diacritics 0', prefix = '2 3 4 5 6 7 8'
);
INSERT INTO visitors_fts (visitors_fts) VALUES ('rebuild');
CREATE TRIGGER IF NOT EXISTS visitors_fts_insert AFTER INSERT ON visitors BEGIN
    INSERT INTO visitors_fts (rowid, name, email) VALUES (new.id, new.name, new.email);
END;
CREATE TRIGGER IF NOT EXISTS visitors_fts_delete AFTER DELETE ON visitors BEGIN
    INSERT INTO visitors_fts (visitors_fts, rowid, name, email) VALUES ('delete', old.id, old.name, old.email);
END;
CREATE TRIGGER IF NOT EXISTS visitors_fts_update AFTER UPDATE OF name, email ON visitors BEGIN
    INSERT INTO visitors_fts (visitors_fts, rowid, name, email) VALUES ('delete', old.id, old.name, old.email);
    INSERT INTO visitors_fts (rowid, name, email) VALUES (new.id, new.name, new.email);
END;
