-- Secrets of the installation itself, made at the first start and shared
-- by every instance: what seals visitors' cursors and signs the marks of
-- browsers and apps that have signed in before. Kept in the database so
-- that instances agree and a restart keeps what was issued valid.
CREATE TABLE server_keys (
    name        TEXT    NOT NULL PRIMARY KEY,
    secret      BLOB    NOT NULL,
    created_at  INTEGER NOT NULL
);
