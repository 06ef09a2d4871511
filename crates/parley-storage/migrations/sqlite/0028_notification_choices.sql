-- What an operator chooses to be pushed about (its account page):
-- conversations nobody has taken yet (new ones, and visitor messages in
-- unassigned ones), and its own (visitor messages in conversations
-- assigned to it, assignments and transfers to it).
ALTER TABLE operators ADD COLUMN notify_unassigned INTEGER NOT NULL DEFAULT 1;
ALTER TABLE operators ADD COLUMN notify_mine INTEGER NOT NULL DEFAULT 1;
