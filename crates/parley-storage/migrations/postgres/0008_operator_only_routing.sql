-- What the visitor is shown of routing (hardening, round 3). Lines written
-- before it: who took a conversation, who assigned it to whom and who
-- handed it over become operator-only, and the visitor's stream no longer
-- carries them; the close and reopen lines no longer name the operator in
-- their text, which keeps the name for operators as the line's sender.
-- Only system lines are touched. Each statement reads the messages once
-- (no index serves a text pattern); see docs/operations.md, "Upgrades".
UPDATE messages SET internal = TRUE
 WHERE sender_type = 'system' AND internal = FALSE
   AND (body LIKE '% joined the conversation'
        OR body LIKE '% assigned the conversation to %'
        OR body LIKE '% transferred the conversation to %');

UPDATE events SET widget = FALSE
 WHERE kind = 'message.created' AND widget = TRUE
   AND message_id IN (SELECT id FROM messages WHERE sender_type = 'system' AND internal = TRUE);

UPDATE messages
   SET sender_name = CASE WHEN body LIKE '% closed the conversation'
                          THEN substr(body, 1, length(body) - length(' closed the conversation'))
                          ELSE substr(body, 1, length(body) - length(' reopened the conversation')) END,
       body = CASE WHEN body LIKE '% closed the conversation' THEN 'Conversation closed' ELSE 'Conversation reopened' END
 WHERE sender_type = 'system'
   AND (body LIKE '% closed the conversation' OR body LIKE '% reopened the conversation');
