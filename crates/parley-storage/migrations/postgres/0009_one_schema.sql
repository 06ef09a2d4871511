-- The pair of SQLite's 0015, which brings SQLite to the schema PostgreSQL
-- already has (the index of conversations by visitor, operators' emails
-- unique by lower(email)): nothing to change here.
SELECT 1;
