-- Up Migration

-- Who made a change, each part in its own column (src/store/audit-actor.ts): for the admin port the
-- token's sub and, only when the provider verified it (email_verified), its e-mail; for the CLI the
-- name --actor or SITEKEY_ACTOR gives, else the OS user. `actor` keeps the one text entries always
-- had, for the readers of it; rows written before this migration have only that text, and null parts.
-- The check is added NOT VALID and validated after: validating takes a lock that lets the log be read
-- and written meanwhile, where adding it valid would hold every writer while the whole table is scanned.
ALTER TABLE audit_log
  ADD COLUMN actor_kind text,
  ADD COLUMN actor_subject text,
  ADD COLUMN actor_email text,
  ADD CONSTRAINT audit_log_actor_parts CHECK (
    (actor_kind IS NULL AND actor_subject IS NULL AND actor_email IS NULL)
    OR (actor_kind = 'admin-token' AND actor_subject IS NOT NULL)
    OR (actor_kind = 'cli' AND actor_subject IS NOT NULL AND actor_email IS NULL)
  ) NOT VALID;
ALTER TABLE audit_log VALIDATE CONSTRAINT audit_log_actor_parts;

-- Down Migration
ALTER TABLE audit_log DROP CONSTRAINT audit_log_actor_parts, DROP COLUMN actor_kind, DROP COLUMN actor_subject, DROP COLUMN actor_email;
