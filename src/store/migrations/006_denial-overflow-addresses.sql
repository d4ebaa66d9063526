-- Up Migration

-- Refusal counts are bounded per site and hour: past the cap, a refusal from a new client address is
-- added to the site's row with client_ip 'other', which also counts the addresses it stands for
-- (`report denials`: "and N more addresses"). Zero on every other row.
ALTER TABLE denial_stats ADD COLUMN overflow_addresses bigint NOT NULL DEFAULT 0 CHECK (overflow_addresses >= 0);

-- Down Migration
ALTER TABLE denial_stats DROP COLUMN overflow_addresses;
