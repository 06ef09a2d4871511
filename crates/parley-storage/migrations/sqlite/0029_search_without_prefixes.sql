-- The full-text index again, without the prefix indexes 0024 made: they
-- tripled the index's writes on every message post (docs/benchmarks.md),
-- and a prefix query reads a range of terms without them. The triggers
-- of 0024 keep feeding the table of the same name.
DROP TABLE IF EXISTS messages_fts;
CREATE VIRTUAL TABLE messages_fts USING fts5(
    body, content = 'messages', content_rowid = 'id', tokenize = 'unicode61 remove_diacritics 0'
);
INSERT INTO messages_fts (messages_fts) VALUES ('rebuild');
