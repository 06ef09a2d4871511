-- Attachments: files visitors and operators upload into a conversation
-- and then name in a message.
--
-- The row is made before the bytes are stored (`content_type` null
-- until they are all in and checked), so an upload cut short, refused or
-- lost in a crash still has a row, and the sweep that removes what no
-- message named after a day removes its object too. `storage_key` is
-- random: nothing of the client's name or type reaches the store. No
-- cascade: a row goes only with its object, through the code that removes
-- both.
CREATE TABLE IF NOT EXISTS attachments (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    public_id       TEXT    NOT NULL UNIQUE,
    tenant_id       INTEGER NOT NULL REFERENCES tenants(id),
    site_id         INTEGER NOT NULL REFERENCES sites(id),
    conversation_id INTEGER NOT NULL REFERENCES conversations(id),
    message_id      INTEGER REFERENCES messages(id),
    uploader_type   TEXT    NOT NULL CHECK (uploader_type IN ('visitor', 'operator')),
    uploader_id     INTEGER,
    storage_key     TEXT    NOT NULL UNIQUE,
    name            TEXT    NOT NULL,
    content_type    TEXT,
    size            INTEGER NOT NULL DEFAULT 0,
    width           INTEGER,
    height          INTEGER,
    thumbnail_size  INTEGER,
    created_at      INTEGER NOT NULL
);
-- The tenant's usage (the quota) and the sweep of unnamed uploads.
CREATE INDEX IF NOT EXISTS attachments_tenant ON attachments (tenant_id);
CREATE INDEX IF NOT EXISTS attachments_unnamed ON attachments (created_at) WHERE (message_id IS NULL);
CREATE INDEX IF NOT EXISTS attachments_message ON attachments (message_id);

-- What a message's attachments are, as JSON, fixed when it is sent: every
-- read of messages carries them without a join. The rows above own the
-- files.
ALTER TABLE messages ADD COLUMN attachments TEXT;

-- The file types a site takes (JSON list of kinds); null: the default.
ALTER TABLE sites ADD COLUMN attachment_types TEXT;
