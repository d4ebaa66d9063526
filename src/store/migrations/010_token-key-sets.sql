-- Up Migration

-- The token issuer's last good key set (its JWKS, public keys only), so that a process that starts
-- while the issuer is unreachable still verifies tokens. One row per place the keys come from: the
-- configured JWKS URL, or the issuer whose discovery document names it. Written by serve after a
-- fetch that changed the set; read at start and held to the same rules as a fetched set.
CREATE TABLE token_key_sets (
  source_kind  text NOT NULL CHECK (source_kind IN ('jwks_url', 'issuer')),
  source       text NOT NULL CHECK (char_length(source) BETWEEN 1 AND 2048),
  jwks         jsonb NOT NULL CHECK (jsonb_typeof(jwks) = 'object' AND octet_length(jwks::text) <= 262144),
  fetched_at   timestamptz NOT NULL,
  stored_at    timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (source_kind, source)
);

-- Down Migration
DROP TABLE token_key_sets;
