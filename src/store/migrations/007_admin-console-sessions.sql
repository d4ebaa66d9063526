-- Up Migration

-- The admin console's sign-ins in progress and its sessions, in the database so that a session
-- survives a restart and works on every replica. Both ids are kept only as SHA-256: whoever reads
-- these tables cannot present a cookie. The tokens are the person's own, held here so that the
-- browser never sees them, sealed (AES-256-GCM) with a key derived from the cookie's id: whoever reads
-- these tables cannot present them either (src/admin/console/session-store.ts).
CREATE TABLE admin_console_sign_ins (
  id_sha256 bytea PRIMARY KEY CHECK (octet_length(id_sha256) = 32),
  state text NOT NULL,
  nonce text NOT NULL,
  code_verifier text NOT NULL,
  return_to text NOT NULL,
  expires_at timestamptz NOT NULL
);
CREATE INDEX admin_console_sign_ins_expires_at ON admin_console_sign_ins (expires_at);

CREATE TABLE admin_console_sessions (
  id_sha256 bytea PRIMARY KEY CHECK (octet_length(id_sha256) = 32),
  subject text NOT NULL,
  csrf_token text NOT NULL,
  access_token text NOT NULL,
  refresh_token text,
  id_token text,
  created_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz NOT NULL
);
CREATE INDEX admin_console_sessions_expires_at ON admin_console_sessions (expires_at);

-- Down Migration
DROP TABLE admin_console_sessions;
DROP TABLE admin_console_sign_ins;
