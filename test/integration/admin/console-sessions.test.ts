import assert from 'node:assert/strict';
import type { IncomingMessage } from 'node:http';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { ConsoleSessions, SessionAuthenticator } from '../../../src/admin/console/console-sessions.js';
import type { RelyingParty } from '../../../src/admin/console/relying-party.js';
import { newSecretId, SessionStore, type ConsoleSession } from '../../../src/admin/console/session-store.js';
import type { AuthOutcome } from '../../../src/admin/principal.js';
import { freshDatabase, type TestDatabase } from '../../support/database.js';

const PRINCIPAL = { subject: '248289761002', email: 'manager@example.test', roles: new Set(['account-manager'] as const) };
const expired: AuthOutcome = { ok: false, status: 401, error: 'invalid_token', description: 'the access token has expired; sign in again' };
/** The API's verifier as the session sees it: only `fresh` is still good. */
const verify = async (token: string): Promise<AuthOutcome> => (token === 'fresh' ? { ok: true, principal: PRINCIPAL } : expired);
const request = (id: string, method = 'GET', csrf?: string) =>
  ({ method, headers: { cookie: `sitekey-console=${id}`, ...(csrf === undefined ? {} : { 'x-csrf-token': csrf }) } }) as unknown as IncomingMessage;
const session = (overrides: Partial<ConsoleSession> = {}): ConsoleSession => ({
  subject: PRINCIPAL.subject,
  csrfToken: newSecretId(),
  accessToken: 'stale',
  refreshToken: 'refresh-1',
  idToken: undefined,
  expiresAt: new Date(Date.now() + 3_600_000),
  ...overrides,
});

/** The console's sessions on a real database: a held token that expired is refreshed, an ended session is gone. */
describe('console sessions in PostgreSQL', () => {
  let database: TestDatabase;
  let pool: pg.Pool;
  let store: SessionStore;
  let refreshes: string[];
  let refuseRefresh: boolean;

  const relyingParty = {
    refresh: async (refreshToken: string) => {
      refreshes.push(refreshToken);
      if (refuseRefresh) throw new Error('invalid_grant');
      return { accessToken: 'fresh', refreshToken: undefined, idToken: undefined };
    },
  } as unknown as RelyingParty;

  before(async () => {
    database = await freshDatabase();
    pool = new pg.Pool({ connectionString: database.url, max: 2 });
    store = new SessionStore(pool);
  });

  after(async () => {
    await pool?.end();
    await database?.drop();
  });

  it('refreshes an expired access token with the refresh token, keeps the refresh token the provider did not replace', async () => {
    refreshes = [];
    refuseRefresh = false;
    const id = newSecretId();
    await store.createSession(id, session());
    const sessions = new ConsoleSessions(store, relyingParty, verify, { secure: false });
    const current = await sessions.current(request(id));
    assert.equal(current?.outcome.ok, true);
    assert.deepEqual(refreshes, ['refresh-1']);
    const held = await store.findSession(id);
    assert.equal(held?.accessToken, 'fresh');
    assert.equal(held?.refreshToken, 'refresh-1');
    await sessions.current(request(id));
    assert.deepEqual(refreshes, ['refresh-1'], 'a good token is not refreshed again');
  });

  it('answers 401 when the provider refuses the refresh, and when there is no refresh token', async () => {
    refreshes = [];
    refuseRefresh = true;
    const sessions = new ConsoleSessions(store, relyingParty, verify, { secure: false });
    const refused = newSecretId();
    await store.createSession(refused, session());
    assert.deepEqual((await sessions.current(request(refused)))?.outcome, expired);
    const noRefresh = newSecretId();
    await store.createSession(noRefresh, session({ refreshToken: undefined }));
    assert.deepEqual((await sessions.current(request(noRefresh)))?.outcome, expired);
    assert.deepEqual(refreshes, ['refresh-1']);
  });

  it('does not find an expired session or an unknown id; the authenticator answers 401 for them and leaves cookie-less requests to others', async () => {
    const old = newSecretId();
    await store.createSession(old, session({ accessToken: 'fresh', expiresAt: new Date(Date.now() - 1_000) }));
    assert.equal(await store.findSession(old), undefined);
    const authenticator = new SessionAuthenticator(new ConsoleSessions(store, relyingParty, verify, { secure: false }));
    assert.equal((await authenticator.authenticate(request(old)))?.ok, false);
    assert.equal((await authenticator.authenticate(request(newSecretId())))?.ok, false);
    assert.equal(await authenticator.authenticate({ method: 'GET', headers: {} } as IncomingMessage), undefined);
  });

  it('asks for the CSRF token on every method but GET and HEAD', async () => {
    const id = newSecretId();
    const held = session({ accessToken: 'fresh' });
    await store.createSession(id, held);
    const authenticator = new SessionAuthenticator(new ConsoleSessions(store, relyingParty, verify, { secure: false }));
    for (const method of ['GET', 'HEAD']) assert.equal((await authenticator.authenticate(request(id, method)))?.ok, true, method);
    for (const method of ['POST', 'PUT', 'DELETE', 'PATCH']) {
      const outcome = await authenticator.authenticate(request(id, method));
      assert.equal(outcome?.ok === false && outcome.status, 403, method);
      assert.equal((await authenticator.authenticate(request(id, method, held.csrfToken)))?.ok, true, method);
    }
  });

  it('makes the sign-in key material once per database: every replica seals with the same', async () => {
    const [first, second] = await Promise.all([store.signInKeyMaterial(), new SessionStore(pool).signInKeyMaterial()]);
    assert.equal(first.length, 32);
    assert.ok(first.equals(second));
    assert.ok((await store.signInKeyMaterial()).equals(first));
  });
});
