-- The widget as a platform: signed visitor identity.
--
-- An installation's identity secret signs its site's users (user_hash,
-- or an HS256 token). It is needed to check them, so it is kept, never
-- logged; a rotated-out secret still checks until its expiry, so pages
-- rendered before the rotation keep working.
ALTER TABLE installations ADD COLUMN identity_secret TEXT;
ALTER TABLE installations ADD COLUMN previous_identity_secret TEXT;
ALTER TABLE installations ADD COLUMN previous_identity_secret_expires_at BIGINT;
ALTER TABLE installations ADD COLUMN identity_required BOOLEAN NOT NULL DEFAULT FALSE;

-- The site's own user id of an identified visitor (one visitor per user
-- and site, on every device), the email address the site vouched for in
-- a signed token, and the attributes the page set, as a JSON object.
ALTER TABLE visitors ADD COLUMN user_id TEXT;
ALTER TABLE visitors ADD COLUMN site_email TEXT;
ALTER TABLE visitors ADD COLUMN attributes TEXT;
CREATE UNIQUE INDEX IF NOT EXISTS visitors_site_user ON visitors (site_id, user_id) WHERE user_id IS NOT NULL;
