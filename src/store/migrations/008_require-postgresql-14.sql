-- Up Migration

-- The periodic resync folds each bucket's rows with hash_record_extended and bit_xor, both new in
-- PostgreSQL 14 (13 reached its end of life in November 2025). Stopping here names the cause, where the
-- first resync would fail with "function hash_record_extended(record, integer) does not exist".
DO $$
BEGIN
  IF current_setting('server_version_num')::int < 140000 THEN
    RAISE EXCEPTION 'sitekey-authz needs PostgreSQL 14 or newer; this server is %', current_setting('server_version');
  END IF;
END
$$;

-- Down Migration
