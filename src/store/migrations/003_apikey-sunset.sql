-- Up Migration

-- Issue #11: the retirement of API-key authentication (spec, Versioning 1).

-- A site promised more time keeps using its keys through brownouts and the sunset until then.
ALTER TABLE sites ADD COLUMN apikey_grace_until timestamptz;

DROP TRIGGER sites_notify ON sites;
CREATE TRIGGER sites_notify AFTER INSERT OR DELETE OR UPDATE OF id, enabled, apikey_grace_until ON sites
  FOR EACH ROW EXECUTE FUNCTION sitekey_notify_site('id');

-- Scheduled refusals of API-key requests ahead of the sunset. site_ids NULL: every site.
CREATE TABLE brownouts (
  id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  starts_at     timestamptz NOT NULL,
  ends_at       timestamptz NOT NULL,
  site_ids      bigint[] CHECK (site_ids IS NULL OR cardinality(site_ids) > 0),
  dry_run       boolean NOT NULL DEFAULT false,
  note          text NOT NULL DEFAULT '',
  created_at    timestamptz NOT NULL DEFAULT now(),
  cancelled_at  timestamptz,
  CHECK (ends_at > starts_at)
);

-- Brownouts are few and rarely changed: any change asks every replica for a full resync.
CREATE TRIGGER brownouts_notify AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON brownouts
  FOR EACH STATEMENT EXECUTE FUNCTION sitekey_notify_all();

-- Refusals of known sites by error and client address, counted in memory by each replica and
-- added here in batches, one row an hour per group: what `report denials` reads. `rehearsal` rows
-- count the requests a dry-run brownout would have refused (error 105), which were let through.
CREATE TABLE denial_stats (
  hour        timestamptz NOT NULL,
  site_id     bigint NOT NULL,
  error_id    smallint NOT NULL,
  client_ip   text NOT NULL,
  rehearsal   boolean NOT NULL,
  count       bigint NOT NULL CHECK (count > 0),
  first_seen  timestamptz NOT NULL,
  last_seen   timestamptz NOT NULL,
  PRIMARY KEY (hour, site_id, error_id, client_ip, rehearsal)
);
CREATE INDEX denial_stats_site ON denial_stats (site_id, hour);

-- Down Migration
DROP TABLE denial_stats;
DROP TABLE brownouts;
DROP TRIGGER sites_notify ON sites;
CREATE TRIGGER sites_notify AFTER INSERT OR DELETE OR UPDATE OF id, enabled ON sites
  FOR EACH ROW EXECUTE FUNCTION sitekey_notify_site('id');
ALTER TABLE sites DROP COLUMN apikey_grace_until;
