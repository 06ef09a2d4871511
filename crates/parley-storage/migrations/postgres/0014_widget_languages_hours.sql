-- The widget as a platform, continued: the visitor's language, a
-- site's language, texts per language and business hours, and the
-- automatic reply outside them.

-- The language the visitor's widget speaks (for what the server writes
-- to it, such as the automatic reply outside business hours).
ALTER TABLE visitors ADD COLUMN locale TEXT;

-- A site's language (null: each visitor's browser chooses), its widget
-- texts per language, and its business hours, each as JSON.
ALTER TABLE sites ADD COLUMN locale TEXT;
ALTER TABLE sites ADD COLUMN texts TEXT;
ALTER TABLE sites ADD COLUMN business_hours TEXT;

-- When the conversation got its automatic reply outside business hours:
-- another is due only after an operator's answer.
ALTER TABLE conversations ADD COLUMN away_replied_at BIGINT;
