-- Up Migration

-- Refused access tokens (106, 107) by the hour, for the blocked-partner report: a token carries no
-- site, so a refusal is counted against the site its client is registered to (site_id 0: registered
-- to none, a 107), with the client id and the rule that refused it. `signed` says whether our issuer's
-- signature verified before a later rule (exp, aud, nbf) refused the token; otherwise the client id
-- is only what the token's sender wrote. Never the token itself. Kept DENIAL_STATS_RETENTION_DAYS;
-- past TOKEN_REFUSAL_ROWS_PER_SITE_HOUR rows per site and hour, new clients count under 'other'.
CREATE TABLE token_refusal_stats (
  hour        timestamptz NOT NULL,
  site_id     bigint NOT NULL CHECK (site_id >= 0),
  client_id   text NOT NULL,
  error_id    smallint NOT NULL CHECK (error_id IN (106, 107)),
  rule        text NOT NULL,
  signed      boolean NOT NULL,
  count       bigint NOT NULL CHECK (count > 0),
  first_seen  timestamptz NOT NULL,
  last_seen   timestamptz NOT NULL,
  PRIMARY KEY (hour, site_id, client_id, error_id, rule, signed)
);
CREATE INDEX token_refusal_stats_client ON token_refusal_stats (client_id, last_seen);
CREATE INDEX token_refusal_stats_seen ON token_refusal_stats (site_id, last_seen);

-- Down Migration
DROP TABLE token_refusal_stats;
