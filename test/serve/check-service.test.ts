import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Decision } from '../../src/decision/types.js';
import { checkEvent } from '../../src/observe/check-event.js';
import type { DecisionLog } from '../../src/observe/decision-log.js';
import type { ServiceMetrics } from '../../src/observe/metrics.js';
import { decisionObserver, type Recorders } from '../../src/serve/check-service.js';
import type { RefusedToken } from '../../src/store/token-refusal-recorder.js';

const ignored = { record: () => undefined };
const request = { requestId: 'r-1', input: { authorization: 'Bearer x', clientAddress: '203.0.113.7', body: { kind: 'empty' }, bodyPartial: false, bodyCredentials: 'required' } } as never;

function observed(decisions: readonly Decision[]): RefusedToken[] {
  const tokens: RefusedToken[] = [];
  const recorders = { usage: ignored, lastUsed: ignored, clientLastUsed: ignored, refusals: ignored, tokenRefusals: { record: (refusal: RefusedToken) => tokens.push(refusal) } } as unknown as Recorders;
  const observe = decisionObserver(recorders, { checks: { observeCheck: () => undefined } } as unknown as ServiceMetrics, ignored as unknown as DecisionLog, (clientId) =>
    clientId === 'acme-app' ? '1001' : undefined,
  );
  for (const decision of decisions) observe(checkEvent(request, decision, 0.001));
  return tokens;
}

const deny = (denial: object): Decision => ({ outcome: 'deny', denial }) as Decision;

describe('decisionObserver: refused tokens counted against their client’s site', () => {
  it('counts a signed refusal against the site the client is registered to, and a 107 under no site', () => {
    assert.deepEqual(observed([deny({ errorId: 106, rule: 'expired', claimant: { clientId: 'acme-app', signed: true } }), deny({ errorId: 107, clientId: 'stray-app' })]), [
      { siteId: '1001', clientId: 'acme-app', errorId: 106, rule: 'expired', signed: true },
      { siteId: '0', clientId: 'stray-app', errorId: 107, rule: '', signed: true },
    ]);
  });

  it('counts a client id only the sender wrote against a site that registered it, marked unsigned, and never under no site', () => {
    const forged = Array.from({ length: 1_000 }, (_, i) => deny({ errorId: 106, rule: 'signature', claimant: { clientId: `made-up-${i}`, signed: false } }));
    assert.deepEqual(observed([...forged, deny({ errorId: 106, rule: 'signature', claimant: { clientId: 'acme-app', signed: false } })]), [
      { siteId: '1001', clientId: 'acme-app', errorId: 106, rule: 'signature', signed: false },
    ]);
  });

  it('leaves a revoked token to the site’s own refusal counts, and a token that names no client uncounted here', () => {
    assert.deepEqual(observed([deny({ errorId: 106, rule: 'revoked', siteId: '1001', clientId: 'acme-app' }), deny({ errorId: 106, rule: 'malformed' })]), []);
  });
});
