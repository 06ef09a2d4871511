-- Failed sign-ins, counted here rather than in memory so that every
-- instance sharing a database counts the same ones. `key` is an email
-- (lower-cased) or a client address; rows leave once past the longest
-- window. AUTOINCREMENT: an attempt takes back its own reservation by
-- id, which must never have been handed to another failure meanwhile.
CREATE TABLE login_failures (
    id     INTEGER PRIMARY KEY AUTOINCREMENT,
    key    TEXT    NOT NULL,
    at     INTEGER NOT NULL
);
CREATE INDEX login_failures_key ON login_failures (key, at);
CREATE INDEX login_failures_at ON login_failures (at);
