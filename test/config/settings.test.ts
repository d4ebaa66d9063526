import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { loadConfig, SETTINGS, type Env, type Setting } from '../../src/config.js';
import { defaultText } from '../../src/config/settings.js';
import { loadIssuerConfig } from '../../src/issuer/issuer-config.js';

/** What a setting is read with: a TOKEN_ or ADMIN_ setting only with its issuer, XFF_TRUSTED_HOPS only with xff. */
function readWith(name: string): Env {
  if (name.startsWith('TOKEN_')) return { TOKEN_ISSUER: 'https://issuer.example.com', TOKEN_AUDIENCE: 'https://partner-api.example.com' };
  if (name.startsWith('ADMIN_')) return { ADMIN_ISSUER: 'https://login.example.com/realms/staff', ADMIN_AUDIENCE: 'https://authz-admin.example.com' };
  if (name === 'XFF_TRUSTED_HOPS') return { CLIENT_IP_SOURCE: 'xff' };
  return {};
}

/** The settings a name is read into; but for which sunset variables were set, which is the one thing a default written out changes. */
const load = (name: string, env: Env) => (name.startsWith('ISSUER_') ? { ...loadIssuerConfig(env) } : { ...loadConfig(env), sunsetVariablesSet: undefined });
const withValue = SETTINGS.filter((setting) => setting.default !== undefined);

/** Runs `check` with the row of `name` saying `value` as its default, then puts the row back. */
function withDefault(name: string, value: string, check: () => void): void {
  const row = SETTINGS.find((setting) => setting.name === name) as { default: string } | undefined;
  assert.ok(row !== undefined, name);
  const written = row.default;
  row.default = value;
  try {
    check();
  } finally {
    row.default = written;
  }
}

describe('the settings table: each default written once', () => {
  it('applies, for every setting whose default is a value, that value when the variable is unset', () => {
    assert.ok(withValue.length >= 30, `only ${withValue.length} settings with a default value`);
    for (const { name, default: value } of withValue) {
      const env = readWith(name);
      assert.deepEqual(load(name, { ...env, [name]: value ?? '' }), load(name, env), `${name}=${value} differs from unset`);
    }
  });

  it('is where loadConfig reads those defaults: a row changed, the default applied changes', () => {
    withDefault('GRPC_PORT', '9100', () => assert.equal(loadConfig({}).grpcPort, 9100));
    withDefault('SHADOW_MODE', 'true', () => assert.equal(loadConfig({}).shadowMode, true));
    withDefault('LOG_ALLOWED_SAMPLE_RATE', '0.5', () => assert.equal(loadConfig({}).logAllowedSampleRate, 0.5));
    withDefault('TOKEN_ALGORITHMS', 'ES256', () => {
      assert.deepEqual(loadConfig(readWith('TOKEN_ALGORITHMS')).tokens?.algorithms, ['ES256']);
      assert.deepEqual(loadConfig(readWith('ADMIN_PORT')).admin?.algorithms, ['ES256'], "the admin port's tokens follow the partner tokens' default algorithms");
    });
    withDefault('ISSUER_TOKEN_TTL_SECONDS', '300', () => assert.equal(loadIssuerConfig({}).tokenTtlSeconds, 300));
    withDefault('APIKEY_SUNSET_AT', '2027-06-30T00:00:00Z', () => {
      const config = loadConfig({});
      assert.equal(config.apiKeySunsetAt, Date.parse('2027-06-30T00:00:00Z'));
      assert.equal(config.apiKeyDeprecatedAt, config.apiKeySunsetAt, 'the deprecation follows the sunset');
    });
  });

  it('shows a default value as written, and otherwise what happens unset', () => {
    const row = (name: string): Setting => SETTINGS.find((setting) => setting.name === name)!;
    assert.equal(defaultText(row('GRPC_PORT')), '9001');
    assert.equal(defaultText(row('DATABASE_URL')), 'unset: embedded PostgreSQL in DATA_DIR');
    for (const setting of SETTINGS) assert.ok(defaultText(setting).length > 0, setting.name);
  });
});
