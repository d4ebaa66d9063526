-- Up Migration

-- Every running replica LISTENs on sitekey_credentials and reloads the site named in the payload.
-- NOTIFY is sent at commit, and identical payloads in one transaction are sent once.
-- TG_ARGV[0] names the column holding the site id: `id` on sites, `site_id` on the others.
-- An UPDATE that moves a row between sites changes both.
CREATE FUNCTION sitekey_notify_site() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP <> 'INSERT' THEN
    PERFORM pg_notify('sitekey_credentials', to_jsonb(OLD) ->> TG_ARGV[0]);
  END IF;
  IF TG_OP <> 'DELETE' THEN
    PERFORM pg_notify('sitekey_credentials', to_jsonb(NEW) ->> TG_ARGV[0]);
  END IF;
  RETURN NULL;
END
$$;

-- TRUNCATE names no rows: '*' asks for a full resync.
CREATE FUNCTION sitekey_notify_all() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('sitekey_credentials', '*');
  RETURN NULL;
END
$$;

CREATE TRIGGER sites_notify AFTER INSERT OR DELETE OR UPDATE OF id, enabled ON sites
  FOR EACH ROW EXECUTE FUNCTION sitekey_notify_site('id');

CREATE TRIGGER allowlist_entries_notify AFTER INSERT OR DELETE OR UPDATE ON allowlist_entries
  FOR EACH ROW EXECUTE FUNCTION sitekey_notify_site('site_id');

-- Only columns the snapshot holds: the batched last_used_at writes must not set off reloads.
CREATE TRIGGER api_keys_notify AFTER INSERT OR DELETE OR UPDATE OF site_id, key_sha256, expires_at, revoked_at ON api_keys
  FOR EACH ROW EXECUTE FUNCTION sitekey_notify_site('site_id');

CREATE TRIGGER sites_truncate_notify AFTER TRUNCATE ON sites FOR EACH STATEMENT EXECUTE FUNCTION sitekey_notify_all();
CREATE TRIGGER api_keys_truncate_notify AFTER TRUNCATE ON api_keys FOR EACH STATEMENT EXECUTE FUNCTION sitekey_notify_all();
CREATE TRIGGER allowlist_entries_truncate_notify AFTER TRUNCATE ON allowlist_entries FOR EACH STATEMENT EXECUTE FUNCTION sitekey_notify_all();

-- Down Migration
DROP TRIGGER allowlist_entries_truncate_notify ON allowlist_entries;
DROP TRIGGER api_keys_truncate_notify ON api_keys;
DROP TRIGGER sites_truncate_notify ON sites;
DROP TRIGGER api_keys_notify ON api_keys;
DROP TRIGGER allowlist_entries_notify ON allowlist_entries;
DROP TRIGGER sites_notify ON sites;
DROP FUNCTION sitekey_notify_all();
DROP FUNCTION sitekey_notify_site();
