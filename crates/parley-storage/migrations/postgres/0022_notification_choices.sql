-- What an operator chooses to be pushed about (its account page):
-- conversations nobody has taken yet (new ones, and visitor messages in
-- unassigned ones), and its own (visitor messages in conversations
-- assigned to it, assignments and transfers to it).
ALTER TABLE operators ADD COLUMN notify_unassigned BOOLEAN NOT NULL DEFAULT TRUE;
ALTER TABLE operators ADD COLUMN notify_mine BOOLEAN NOT NULL DEFAULT TRUE;
