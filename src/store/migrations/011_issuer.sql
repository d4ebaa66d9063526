-- Up Migration

-- `sitekey-authz issuer`, the OAuth 2.0 authorization server for platforms that have none
-- (src/issuer/). Its tables are its own: `serve` never reads them.

-- What oidc-provider keeps (src/issuer/postgres-adapter.ts): registered clients, registration access
-- tokens, client-assertion jti seen (replay detection). A model's row is found by its id, a token's
-- by the SHA-256 of its value (id_sha256), so that whoever reads this table cannot present a token
-- it holds. A row past expires_at is gone for oidc-provider, and deleted in batches by the issuer.
CREATE TABLE issuer_oidc_objects (
  model        text NOT NULL CHECK (char_length(model) BETWEEN 1 AND 64),
  id           text NOT NULL CHECK (char_length(id) BETWEEN 1 AND 255),
  payload      jsonb NOT NULL,
  grant_id     text,
  expires_at   timestamptz,
  consumed_at  timestamptz,
  PRIMARY KEY (model, id)
);
CREATE INDEX issuer_oidc_objects_grant_id ON issuer_oidc_objects (grant_id) WHERE grant_id IS NOT NULL;
CREATE INDEX issuer_oidc_objects_expires_at ON issuer_oidc_objects (expires_at) WHERE expires_at IS NOT NULL;

-- The issuer's signing keys (src/issuer/signing-keys.ts): private JWKs, made by the issuer itself
-- and never shown. A key is published in the JWKS from created_at, signs from signs_from (later than
-- created_at, except for the very first key), and stays published after a newer key has begun to sign
-- for longer than any token it signed lives.
CREATE TABLE issuer_signing_keys (
  kid          text PRIMARY KEY CHECK (char_length(kid) BETWEEN 1 AND 128),
  private_jwk  jsonb NOT NULL,
  created_at   timestamptz NOT NULL,
  signs_from   timestamptz NOT NULL CHECK (signs_from >= created_at)
);

-- Down Migration
DROP TABLE issuer_signing_keys;
DROP TABLE issuer_oidc_objects;
