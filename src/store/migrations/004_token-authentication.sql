-- Up Migration

-- Token-based authentication beside API keys: the method partners migrate to before the sunset.

-- Which methods a site may use: both while it migrates, tokens once it has moved (its keys then
-- get 105). tokens_not_before: tokens of the site issued (iat) before it are refused, for a leaked
-- token or client secret, without waiting for their exp.
ALTER TABLE sites
  ADD COLUMN auth_method text NOT NULL DEFAULT 'both' CHECK (auth_method IN ('both', 'tokens')),
  ADD COLUMN tokens_not_before timestamptz;

DROP TRIGGER sites_notify ON sites;
CREATE TRIGGER sites_notify AFTER INSERT OR DELETE OR UPDATE OF id, enabled, apikey_grace_until, auth_method, tokens_not_before ON sites
  FOR EACH ROW EXECUTE FUNCTION sitekey_notify_site('id');

-- The OAuth clients whose access tokens (client_id claim) authenticate as a site. A client belongs
-- to one site; the authorization server, not this table, holds its secret.
CREATE TABLE token_clients (
  client_id     text PRIMARY KEY CHECK (char_length(client_id) BETWEEN 1 AND 255),
  site_id       bigint NOT NULL REFERENCES sites (id),
  note          text NOT NULL DEFAULT '',
  created_at    timestamptz NOT NULL DEFAULT now(),
  last_used_at  timestamptz
);
CREATE INDEX token_clients_site_id ON token_clients (site_id);

-- Only the columns the snapshot holds: the batched last_used_at writes must not set off reloads.
CREATE TRIGGER token_clients_notify AFTER INSERT OR DELETE OR UPDATE OF client_id, site_id ON token_clients
  FOR EACH ROW EXECUTE FUNCTION sitekey_notify_site('site_id');
CREATE TRIGGER token_clients_truncate_notify AFTER TRUNCATE ON token_clients FOR EACH STATEMENT EXECUTE FUNCTION sitekey_notify_all();

-- Allowed requests by site, method and hour, counted in memory by each replica and added here in
-- batches: how much of a site's traffic has moved to tokens, for the migration report.
CREATE TABLE auth_usage (
  hour       timestamptz NOT NULL,
  site_id    bigint NOT NULL,
  method     text NOT NULL CHECK (method IN ('api_key', 'token')),
  count      bigint NOT NULL CHECK (count > 0),
  last_seen  timestamptz NOT NULL,
  PRIMARY KEY (hour, site_id, method)
);
CREATE INDEX auth_usage_site ON auth_usage (site_id, hour);

-- Down Migration
DROP TABLE auth_usage;
DROP TABLE token_clients;
DROP TRIGGER sites_notify ON sites;
CREATE TRIGGER sites_notify AFTER INSERT OR DELETE OR UPDATE OF id, enabled, apikey_grace_until ON sites
  FOR EACH ROW EXECUTE FUNCTION sitekey_notify_site('id');
ALTER TABLE sites DROP COLUMN tokens_not_before, DROP COLUMN auth_method;
