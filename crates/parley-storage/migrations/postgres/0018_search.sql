-- Searching messages (the web app's search, `GET mobile/search`): a GIN
-- index of message bodies' words, in the `simple` configuration (lower
-- case, no stemming: messages come in every language). SQLite's
-- counterpart is an FTS5 table (sqlite/0024_search.sql); neither is data,
-- so the schema comparison and `parley db copy` leave both out
-- (`copy::catalog::is_search_index`).
CREATE INDEX IF NOT EXISTS messages_search ON messages USING GIN (to_tsvector('simple', body));
