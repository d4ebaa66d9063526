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

DROP TABLE admin_console_sign_ins;

-- Down Migration
CREATE TABLE admin_console_sign_ins (
  id_sha256 bytea PRIMARY KEY CHECK (octet_length(id_sha256) = 32),
  state text NOT NULL,
  nonce text NOT NULL,
  code_verifier text NOT NULL,
  return_to text NOT NULL,
  expires_at timestamptz NOT NULL
);
CREATE INDEX admin_console_sign_ins_expires_at ON admin_console_sign_ins (expires_at);
DROP TABLE admin_console_sign_in_key;
