-- Idempotent sends: a client names the message it sends, and a repeat of
-- the same name in the same conversation from the same sender creates
-- nothing. The index enforces it (visitor messages have no sender_id,
-- hence the COALESCE) and finds the first message when a repeat comes.
ALTER TABLE messages ADD COLUMN client_message_id TEXT;
CREATE UNIQUE INDEX messages_client_message
    ON messages (conversation_id, sender_type, COALESCE(sender_id, 0), client_message_id)
    WHERE client_message_id IS NOT NULL;
