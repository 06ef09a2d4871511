-- Operators are found by lower(email) on both databases; this index
-- serves that lookup as the column's NOCASE index served `email = ?`.
CREATE INDEX operators_email_lower ON operators (lower(email));
