-- Up Migration

-- Token clients the service registered itself at the issuer (OAuth 2.0 Dynamic Client Registration,
-- RFC 7591), with what it needs to manage them later (RFC 7592): where the client's configuration is,
-- and the registration access token that authorizes reading, changing and deleting it. A client added
-- by hand (`token-client add`) has none of these.
--   auth_method: how the client authenticates at the token endpoint (a secret, or its own keys).
--   registration_token_sealed: the registration access token sealed with AES-256-GCM (never the plain
--     token); registration_key_id names the key that sealed it, so a changed key is told apart from a
--     damaged value.
-- No trigger change: token_clients_notify fires on client_id and site_id only, and none of these
-- columns is in the credential snapshot.
ALTER TABLE token_clients
  ADD COLUMN auth_method text CHECK (auth_method IN ('client_secret_basic', 'private_key_jwt')),
  ADD COLUMN registration_client_uri text CHECK (char_length(registration_client_uri) BETWEEN 1 AND 2048),
  ADD COLUMN registration_token_sealed bytea CHECK (octet_length(registration_token_sealed) BETWEEN 1 AND 16384),
  ADD COLUMN registration_key_id text CHECK (char_length(registration_key_id) BETWEEN 1 AND 64),
  ADD CONSTRAINT token_clients_registration_complete CHECK (
    (auth_method IS NULL AND registration_client_uri IS NULL AND registration_token_sealed IS NULL AND registration_key_id IS NULL)
    OR (auth_method IS NOT NULL AND registration_client_uri IS NOT NULL AND registration_token_sealed IS NOT NULL AND registration_key_id IS NOT NULL)
  );

-- Down Migration
ALTER TABLE token_clients
  DROP CONSTRAINT token_clients_registration_complete,
  DROP COLUMN registration_key_id,
  DROP COLUMN registration_token_sealed,
  DROP COLUMN registration_client_uri,
  DROP COLUMN auth_method;
