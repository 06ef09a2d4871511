-- What an operator's list shows of a conversation, kept on its row and
-- written with each message (`insert_message`), where reading it from
-- the messages cost every list row a walk through its conversation:
-- the start of the latest message the visitor and operators wrote
-- (neither a note nor a system line), at most 500 characters; and since
-- when the visitor has waited, the first of its messages after the last
-- operator reply, NULL once answered.
ALTER TABLE conversations ADD COLUMN last_body TEXT;
ALTER TABLE conversations ADD COLUMN waiting_since INTEGER;
UPDATE conversations SET
    last_body = (SELECT substr(lm.body, 1, 500) FROM messages lm
                 WHERE lm.conversation_id = conversations.id AND lm.sender_type <> 'system' AND lm.internal = FALSE
                 ORDER BY lm.id DESC LIMIT 1),
    waiting_since = (SELECT MIN(w.created_at) FROM messages w
                     WHERE w.conversation_id = conversations.id AND w.sender_type = 'visitor'
                       AND w.id > COALESCE((SELECT MAX(o.id) FROM messages o
                                            WHERE o.conversation_id = conversations.id AND o.sender_type = 'operator'
                                              AND o.internal = FALSE), 0));
