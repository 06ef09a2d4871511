-- Searching messages (the web app's search, `GET mobile/search`): an FTS5
-- index of message bodies, kept by triggers from the messages table it
-- reads (external content: the text is not stored twice). Accents are
-- kept, as PostgreSQL's `simple` configuration keeps them, so both find
-- the same; prefixes of two and three characters are indexed, so short
-- prefixes need not read every term. PostgreSQL's
-- counterpart is an expression index (postgres/0018_search.sql); neither
-- is data, so the schema comparison and `parley db copy` leave both out
-- (`copy::catalog::is_search_index`) and each database builds its own.
CREATE VIRTUAL TABLE IF NOT EXISTS messages_fts USING fts5(
    body, content = 'messages', content_rowid = 'id', tokenize = 'unicode61 remove_diacritics 0', prefix = '2 3'
);
INSERT INTO messages_fts (messages_fts) VALUES ('rebuild');
CREATE TRIGGER IF NOT EXISTS messages_fts_insert AFTER INSERT ON messages BEGIN
    INSERT INTO messages_fts (rowid, body) VALUES (new.id, new.body);
END;
CREATE TRIGGER IF NOT EXISTS messages_fts_delete AFTER DELETE ON messages BEGIN
    INSERT INTO messages_fts (messages_fts, rowid, body) VALUES ('delete', old.id, old.body);
END;
CREATE TRIGGER IF NOT EXISTS messages_fts_update AFTER UPDATE OF body ON messages BEGIN
    INSERT INTO messages_fts (messages_fts, rowid, body) VALUES ('delete', old.id, old.body);
    INSERT INTO messages_fts (rowid, body) VALUES (new.id, new.body);
END;
