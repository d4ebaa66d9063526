-- Up Migration

-- The registration token `sitekey-authz issuer` makes for trying out on loopback when
-- ISSUER_REGISTRATION_TOKEN is unset (src/issuer/trial-registration-token.ts). It is kept so that it
-- stays the same across restarts: serve seals each client's registration access token with a key
-- derived from it (TOKEN_REGISTRATION_TOKEN), and a token that changed would leave every client
-- created before beyond rotation and removal. One row at most; never read off loopback.
CREATE TABLE issuer_trial_registration_token (
  only_row    boolean PRIMARY KEY DEFAULT true CHECK (only_row),
  token       text NOT NULL CHECK (char_length(token) BETWEEN 32 AND 1024),
  created_at  timestamptz NOT NULL DEFAULT now()
);

-- Down Migration
DROP TABLE issuer_trial_registration_token;
