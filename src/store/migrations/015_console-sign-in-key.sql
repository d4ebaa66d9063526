-- Up Migration

-- A sign-in in progress now travels sealed in a short-lived cookie of the browser that started it
-- (src/admin/console/sign-in-cookie.ts), so that a page load from someone not signed in writes
-- nothing here. What every replica needs for that is one key: its material is this one row, made by
-- the first console that starts on the database. Deleting the row (and restarting) makes a new key;
-- sign-ins in progress then ask the person to sign in again, sessions are not touched.
CREATE TABLE admin_console_sign_in_key (
  only_row      boolean PRIMARY KEY DEFAULT true CHECK (only_row),
  key_material  bytea NOT NULL CHECK (octet_length(key_material) = 32),
  created_at    timestamptz NOT NULL DEFAULT now()
);

-- admin_console_sign_ins is no longer written, but stays until a later migration: during a rolling
-- update, pods of the release before still write a row for each page load and would fail without it.

-- Down Migration
DROP TABLE admin_console_sign_in_key;
