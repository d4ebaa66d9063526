import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { loadIssuerConfig } from '../../src/issuer/issuer-config.js';
import type { RunningIssuer } from '../../src/issuer/issuer.js';
import { startBanner } from '../../src/issuer/run-issuer.js';

const TRIAL = 'a-trial-registration-token-kept-in-the-database-0123';
const issuer = {
  url: 'http://127.0.0.1:9470',
  tokenEndpoint: 'http://127.0.0.1:9470/token',
  registrationEndpoint: 'http://127.0.0.1:9470/reg',
} as RunningIssuer;
const serveLine = (banner: string) => banner.split('\n').find((line) => line.includes('TOKEN_REGISTRATION_TOKEN='));

describe("the issuer's start banner", () => {
  it('prints a trial registration token when this start made it, and when asked for it again', () => {
    for (const token of [{ kind: 'trial', token: TRIAL, madeNow: true, show: false }, { kind: 'trial', token: TRIAL, madeNow: false, show: true }] as const) {
      const banner = startBanner(issuer, loadIssuerConfig({}), token);
      assert.equal(serveLine(banner), `  TOKEN_ISSUER=http://127.0.0.1:9470 TOKEN_AUDIENCE=https://partner-api.test TOKEN_REGISTRATION_TOKEN=${TRIAL}`);
      assert.match(banner, /FOR TRYING OUT ONLY: .* kept in it: every start on the same database takes the same one/s);
    }
  });

  it('never prints a kept trial token unasked after the first start, and never one that was set', () => {
    const later = startBanner(issuer, loadIssuerConfig({}), { kind: 'trial', token: TRIAL, madeNow: false, show: false });
    assert.equal(later.includes(TRIAL), false);
    assert.match(serveLine(later) ?? '', /TOKEN_REGISTRATION_TOKEN=<the one printed at the first start on this database>$/);
    assert.match(later, /sitekey-authz issuer --show-registration-token/);
    const set = startBanner(issuer, loadIssuerConfig({ ISSUER_REGISTRATION_TOKEN: TRIAL }), { kind: 'set' });
    assert.equal(set.includes(TRIAL), false);
    assert.doesNotMatch(set, /FOR TRYING OUT ONLY/);
  });
});
