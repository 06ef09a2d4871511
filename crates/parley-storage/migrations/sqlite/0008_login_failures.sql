-- Failed sign-ins, counted here rather than in memory so that every
-- instance sharing a database counts the same ones. `key` is an email
-- (lower-cased) or a client address; rows leave once past the longest
-- window.
CREATE TABLE login_failures (
    id     INTEGER PRIMARY KEY,
    key    TEXT    NOT NULL,
    at     INTEGER NOT NULL
);
CREATE INDEX login_failures_key ON login_failures (key, at);
CREATE INDEX login_failures_at ON login_failures (at);
