-- Up Migration

-- A partner's site. Disabling a site refuses all its keys (error 101) without losing them.
CREATE TABLE sites (
  id          bigint PRIMARY KEY CHECK (id > 0),
  name        text NOT NULL DEFAULT '',
  enabled     boolean NOT NULL DEFAULT true,
  created_at  timestamptz NOT NULL DEFAULT now(),
  updated_at  timestamptz NOT NULL DEFAULT now()
);

-- API keys are stored only as SHA-256 of the canonical (lower-case) UUID, plus the last five
-- characters that the spec lets us show. A site may hold several active keys so keys rotate with overlap.
CREATE TABLE api_keys (
  id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  site_id       bigint NOT NULL REFERENCES sites (id),
  key_sha256    bytea NOT NULL UNIQUE CHECK (octet_length(key_sha256) = 32),
  last_five     text NOT NULL CHECK (char_length(last_five) = 5),
  created_at    timestamptz NOT NULL DEFAULT now(),
  expires_at    timestamptz,
  revoked_at    timestamptz,
  note          text NOT NULL DEFAULT '',
  last_used_at  timestamptz
);
CREATE INDEX api_keys_site_id ON api_keys (site_id);

-- IP allowlist (spec, Authentication 6): a site without entries admits no address.
CREATE TABLE allowlist_entries (
  site_id     bigint NOT NULL REFERENCES sites (id),
  cidr        cidr NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (site_id, cidr)
);

-- Every administrative change: what, when, and who (the OS user or --actor).
CREATE TABLE audit_log (
  id       bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  at       timestamptz NOT NULL DEFAULT now(),
  actor    text NOT NULL,
  action   text NOT NULL,
  site_id  bigint,
  details  jsonb NOT NULL DEFAULT '{}'::jsonb
);
CREATE INDEX audit_log_site_id ON audit_log (site_id, at);

-- Down Migration
DROP TABLE audit_log;
DROP TABLE allowlist_entries;
DROP TABLE api_keys;
DROP TABLE sites;
