import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { fieldFlag, refusalText } from '../../src/cli/refusal-text.js';
import { refuse } from '../../src/operations/fields.js';

describe('a refusal as the CLI says it', () => {
  it("names the field's option or argument, and writes the example as something to type", () => {
    const past = refuse('DATE_IN_PAST', 'expires', '2020-01-01 is in the past; give a date after today', '2027-01-31');
    assert.equal(past.message, 'the expiry date: 2020-01-01 is in the past; give a date after today, e.g. 2027-01-31');
    assert.equal(refusalText(past, { synopsis: '<site> [--expires ISO] [--note T]' }), '--expires: 2020-01-01 is in the past; give a date after today, e.g. --expires 2027-01-31');
    const bad = refuse('DATE_INVALID', 'until', '"x" is not a date', '2027-01-31 or 2027-01-31T12:00:00Z');
    assert.equal(refusalText(bad, undefined), '--until: "x" is not a date, e.g. --until 2027-01-31 or --until 2027-01-31T12:00:00Z');
  });

  it('names a positional argument as the synopsis writes it, with the example as it is', () => {
    const site = refuse('SITE_ID_INVALID', 'siteId', '"x" is not a site id', '1001');
    assert.equal(refusalText(site, { synopsis: '<site> <cidr>...' }), '<site>: "x" is not a site id, e.g. 1001');
    assert.equal(fieldFlag('siteId', { synopsis: '<site-id> <client-id> [--note TEXT]' }), '<site-id>');
    assert.equal(fieldFlag('siteId', { synopsis: '<id> --until ISO | --clear' }), '<id>');
    assert.equal(fieldFlag('dryRun', undefined), '--dry-run');
    assert.equal(fieldFlag('sites', undefined), '--site');
  });

  it('keeps a refusal of no field as it is', () => {
    const none = refuse('NOTHING_TO_CHANGE', undefined, 'nothing to change');
    assert.equal(refusalText(none, undefined), 'nothing to change');
  });
});
