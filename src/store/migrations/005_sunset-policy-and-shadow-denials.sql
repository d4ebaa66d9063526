-- Up Migration

-- The API-key sunset as every process applies it: one row, so that `check`, `explain`, the reports,
-- the metrics and every replica agree whatever their environment. The environment
-- (APIKEY_SUNSET_AT, APIKEY_SUNSET_ENFORCE, MIGRATION_GUIDE_URL) only seeds it when it is empty.
-- The checks keep out what no process could use: an endless date, a guide that is not https or not
-- printable ASCII (it goes into the Link header).
CREATE TABLE sunset_policy (
  singleton   boolean PRIMARY KEY DEFAULT true CHECK (singleton),
  sunset_at   timestamptz NOT NULL CHECK (isfinite(sunset_at)),
  enforce     boolean NOT NULL,
  guide_url   text CHECK (guide_url IS NULL OR guide_url ~ '^https://[!#-;=?-~]+$'),
  updated_at  timestamptz NOT NULL DEFAULT now()
);

-- Changed rarely, read by every replica: a change asks for a full resync, as brownouts do. Row
-- triggers, not statement ones: every replica that starts tries to seed the policy with an INSERT
-- that usually inserts nothing, and that must not make every replica reload.
CREATE TRIGGER sunset_policy_notify AFTER INSERT OR UPDATE OR DELETE ON sunset_policy
  FOR EACH ROW EXECUTE FUNCTION sitekey_notify_all();
CREATE TRIGGER sunset_policy_truncate_notify AFTER TRUNCATE ON sunset_policy
  FOR EACH STATEMENT EXECUTE FUNCTION sitekey_notify_all();

-- SHADOW_MODE lets every check through and counts what it would have refused: `report denials`
-- shows those apart from real refusals.
ALTER TABLE denial_stats ADD COLUMN shadow boolean NOT NULL DEFAULT false;
ALTER TABLE denial_stats DROP CONSTRAINT denial_stats_pkey;
ALTER TABLE denial_stats ADD PRIMARY KEY (hour, site_id, error_id, client_ip, rehearsal, shadow);

-- Down Migration
DELETE FROM denial_stats WHERE shadow;
ALTER TABLE denial_stats DROP CONSTRAINT denial_stats_pkey;
ALTER TABLE denial_stats ADD PRIMARY KEY (hour, site_id, error_id, client_ip, rehearsal);
ALTER TABLE denial_stats DROP COLUMN shadow;
DROP TABLE sunset_policy;
