-- Up Migration

-- A client's tokens start at its registration here: tokens_not_before is set when the client is
-- added or created (and again whenever its site or id changes), and tokens issued (iat) before it are
-- refused as revoked, as the site's tokens_not_before refuses them. Removing a client and adding it to
-- another site so never lets a token from before the removal authenticate as the new site. It is
-- kept to the whole second, as iat counts seconds: a token issued in the second of the registration
-- counts. Rows there already start at their created_at.
ALTER TABLE token_clients ADD COLUMN tokens_not_before timestamptz;
UPDATE token_clients SET tokens_not_before = date_trunc('second', created_at);
ALTER TABLE token_clients ALTER COLUMN tokens_not_before SET NOT NULL, ALTER COLUMN tokens_not_before SET DEFAULT date_trunc('second', now());

-- A row moved by hand to another site (or renamed) is a new registration too.
CREATE FUNCTION sitekey_token_client_registered() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.tokens_not_before := greatest(date_trunc('second', now()), NEW.tokens_not_before);
  RETURN NEW;
END;
$$;
CREATE TRIGGER token_clients_registered BEFORE UPDATE OF client_id, site_id ON token_clients
  FOR EACH ROW WHEN (OLD.client_id IS DISTINCT FROM NEW.client_id OR OLD.site_id IS DISTINCT FROM NEW.site_id)
  EXECUTE FUNCTION sitekey_token_client_registered();

-- The snapshot holds the cut-off: a change of it reloads the client's site on every replica.
DROP TRIGGER token_clients_notify ON token_clients;
CREATE TRIGGER token_clients_notify AFTER INSERT OR DELETE OR UPDATE OF client_id, site_id, tokens_not_before ON token_clients
  FOR EACH ROW EXECUTE FUNCTION sitekey_notify_site('site_id');

-- Down Migration
DROP TRIGGER token_clients_notify ON token_clients;
CREATE TRIGGER token_clients_notify AFTER INSERT OR DELETE OR UPDATE OF client_id, site_id ON token_clients
  FOR EACH ROW EXECUTE FUNCTION sitekey_notify_site('site_id');
DROP TRIGGER token_clients_registered ON token_clients;
DROP FUNCTION sitekey_token_client_registered();
ALTER TABLE token_clients DROP COLUMN tokens_not_before;
