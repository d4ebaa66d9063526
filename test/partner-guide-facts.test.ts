import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { SETTINGS } from '../src/config.js';
import { denialChallenge, denialMessage, ERROR_CATALOGUE } from '../src/decision/error-catalogue.js';
import { TOKEN_RULE_DESCRIPTIONS, tokenRuleDescription } from '../src/decision/rule-words.js';
import type { TokenRule } from '../src/decision/types.js';
import { PACKAGE_ROOT } from '../src/paths.js';

const GUIDE = readFileSync(join(PACKAGE_ROOT, 'docs', 'partner-migration-guide.md'), 'utf8');

/**
 * Where the guide's "106, by situation" table covers each token rule: words of its row, which are the
 * words of the message the partner sees, so that a partner finds the row by the message. A rule the
 * service gains, or a message reworded, fails here until the guide follows.
 */
const SITUATION_OF_RULE: Readonly<Record<string, string>> = {
  'tokens-disabled': 'token-based authentication is not enabled on this service',
  malformed: 'the token is not a signed JWT',
  algorithm: 'signed with an algorithm this service does not accept',
  type: 'the token is not a JWT access token: its typ header must be at+jwt',
  'unknown-key': 'the token names a signing key (kid) that the issuer does not publish',
  signature: 'the token signature does not verify',
  issuer: 'the token was issued by another issuer (iss) than the one this API trusts',
  audience: 'the token audience (aud) does not include this API; request the token with resource=',
  expired: 'the token has expired',
  'not-yet-valid': 'the token is not valid yet',
  'too-old': 'the token was issued too long ago, or is valid for longer than this API accepts',
  claims: 'the token lacks a required claim',
  revoked: "the token was issued before the site's tokens were revoked",
  'keys-unavailable': "the issuer's signing keys are unavailable to this service right now",
};

/** The section of the guide under this heading, up to the next one of any level. */
function section(heading: string): string {
  const start = GUIDE.indexOf(heading);
  assert.ok(start >= 0, `the guide has no "${heading}"`);
  const end = GUIDE.slice(start + heading.length).search(/\n#{2,3} |\n\*\*/);
  return end < 0 ? GUIDE.slice(start) : GUIDE.slice(start, start + heading.length + end);
}

describe('the partner guide says what the service does', () => {
  it('names the default retirement date, and the Deprecation and Sunset headers an API-key response carries by default', () => {
    const sunset = SETTINGS.find((setting) => setting.name === 'APIKEY_SUNSET_AT')?.default;
    assert.ok(sunset, 'SETTINGS has APIKEY_SUNSET_AT');
    const at = new Date(sunset);
    const day = new Intl.DateTimeFormat('en-GB', { day: 'numeric', month: 'long', year: 'numeric', timeZone: 'UTC' }).format(at);
    assert.ok(GUIDE.includes(`${day} at ${at.toISOString().slice(11, 19)} UTC`), `the guide names ${day}, ${at.toISOString()}`);
    // APIKEY_DEPRECATED_AT defaults to the sunset.
    assert.ok(GUIDE.includes(`Deprecation: @${Math.floor(at.getTime() / 1000)}\n`));
    assert.ok(GUIDE.includes(`Sunset: ${at.toUTCString()}\n`));
  });

  it('has a row for every error id, with the HTTP status the partner gets', () => {
    const table = section('## Errors and their fixes');
    for (const [id, entry] of Object.entries(ERROR_CATALOGUE)) {
      assert.match(table, new RegExp(`^\\| ${id} \\| ${entry.httpStatus} \\|`, 'm'), `error ${id} (HTTP ${entry.httpStatus})`);
    }
  });

  it('shows the WWW-Authenticate challenge of a 106 as the service writes it', () => {
    const challenge = denialChallenge({ errorId: 106, rule: 'expired' });
    const shown = 'WWW-Authenticate: Bearer error="invalid_token", error_description="';
    assert.ok(GUIDE.includes(shown));
    assert.ok(challenge?.startsWith(shown.slice('WWW-Authenticate: '.length)), challenge);
  });

  it('tells the partner what to do about every token rule, in the words of its message', () => {
    const situations = section('**106, by situation:**');
    for (const rule of Object.keys(TOKEN_RULE_DESCRIPTIONS) as TokenRule[]) {
      const words = SITUATION_OF_RULE[rule];
      assert.ok(words, `the guide's 106 table has no row for the token rule "${rule}": add one, and its words here`);
      const message = tokenRuleDescription({ rule, resource: 'https://partner-api.example.com' });
      assert.ok(message.includes(words), `the message of rule ${rule} no longer says "${words}": ${message}`);
      assert.ok(situations.includes(words), `the 106 table has no row saying "${words}" (rule ${rule})`);
    }
  });

  it("quotes 107's message, which tells the partner what to ask for", () => {
    const message = denialMessage({ errorId: 107, clientId: '<client_id>' });
    assert.ok(section('## Errors and their fixes').includes(`\`${message}\``), message);
  });
});
