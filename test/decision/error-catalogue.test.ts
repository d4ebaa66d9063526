import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Registry } from 'prom-client';
import {
  denialBody,
  ERROR_CATALOGUE,
  ERROR_IDS,
  errorIdsOf,
  errorMetricLabel,
  explainDenial,
  GrpcCode,
  loggedReason,
  reasonIsMessage,
  thePartnersMessage,
  type ErrorCatalogue,
  type ExplainFacts,
  type LoggedDenial,
} from '../../src/decision/error-catalogue.js';
import type { Denial, ErrorId } from '../../src/decision/types.js';
import type { DeniedCheckEvent } from '../../src/observe/check-event.js';
import { CheckMetrics } from '../../src/observe/check-metrics.js';

/** An error that does not exist: a site over its quota, as a new row would add it. */
interface QuotaDenial {
  readonly errorId: 109;
  readonly siteId: string;
}

const QUOTA_ROW = {
  code: 'SITE_OVER_QUOTA',
  httpStatus: 429,
  grpcStatus: GrpcCode.PERMISSION_DENIED,
  message: (denial: QuotaDenial) => `Site ID ${denial.siteId} is over its quota`,
  logReason: (denied: LoggedDenial) => `site ${denied.siteId} has spent its quota`,
  explain: (denial: QuotaDenial, facts: ExplainFacts) => `site ${denial.siteId}${facts.site === undefined ? '' : ` (${facts.site.name})`} has spent its quota`,
};
const WITH_QUOTA: ErrorCatalogue = { ...ERROR_CATALOGUE, 109: QUOTA_ROW as unknown as ErrorCatalogue[number] };
const QUOTA_DENIAL = { errorId: 109, siteId: '1001' } as unknown as Denial;
const FACTS: ExplainFacts = { site: { name: 'Shop', enabled: true, allowlist: [] }, key: undefined, clientAddress: '203.0.113.9', clientIpSource: 'CLIENT_IP_SOURCE=peer' };

function logged(errorId: number, errorMessage = 'the message'): LoggedDenial & { readonly errorId: number } {
  return { errorId, siteId: '1001', clientIp: '203.0.113.9', maskedKey: '*****d4e5f', rule: undefined, errorMessage };
}

function deniedEvent(errorId: ErrorId, shadow: boolean): DeniedCheckEvent {
  return {
    outcome: 'denied', shadow, errorId, siteId: '1001', siteKnown: errorId !== 101, keyId: undefined, authMethod: 'api_key', clientId: undefined,
    maskedKey: '*****d4e5f', clientIp: '203.0.113.9', requestId: undefined, bodyBytes: undefined, durationSeconds: 0.00003,
    rehearsalBrownoutId: undefined, sunsetReason: undefined, rule: undefined, errorMessage: 'refused', claimant: undefined,
  };
}

describe('the error catalogue: one row per error id', () => {
  it('lists its ids from its rows: 101 to 108 today, each its own metric label', () => {
    assert.deepEqual(ERROR_IDS, [101, 102, 103, 104, 105, 106, 107, 108]);
    assert.deepEqual(ERROR_IDS.map(errorMetricLabel), ['101', '102', '103', '104', '105', '106', '107', '108']);
  });

  it('a new id is one row: its id, metric label, partner body, log reason and explain words follow from it', () => {
    assert.deepEqual(errorIdsOf(WITH_QUOTA), [...ERROR_IDS, 109]);
    assert.equal(errorMetricLabel(109), '109');
    assert.equal(denialBody(QUOTA_DENIAL, WITH_QUOTA), '{"error":{"id":109,"message":"Site ID 1001 is over its quota"}}');
    assert.equal(loggedReason(logged(109), WITH_QUOTA), 'site 1001 has spent its quota');
    assert.equal(reasonIsMessage(109, WITH_QUOTA), false);
    assert.equal(explainDenial(QUOTA_DENIAL, FACTS, WITH_QUOTA), 'site 1001 (Shop) has spent its quota');
  });

  it("a row whose log reason is the partner's message tells repeated denials apart by it", () => {
    const withMessage: ErrorCatalogue = { ...WITH_QUOTA, 109: { ...QUOTA_ROW, logReason: thePartnersMessage } as unknown as ErrorCatalogue[number] };
    assert.equal(reasonIsMessage(109, withMessage), true);
    assert.equal(loggedReason(logged(109, 'Site ID 1001 is over its quota'), withMessage), 'Site ID 1001 is over its quota');
    assert.deepEqual(ERROR_IDS.filter((id) => reasonIsMessage(id)), [104, 105, 106, 107]);
  });

  it('every row gives the log a reason', () => {
    for (const id of ERROR_IDS) {
      const reason = loggedReason({ ...logged(id), rule: id === 108 ? 'header-missing' : undefined });
      assert.ok(reason.length > 0, `${id} has no reason`);
    }
  });

  it("counts a denial of every id of the table under the id's label, denied and shadow_denied apart", async () => {
    const registry = new Registry();
    const metrics = new CheckMetrics(registry, { siteLabelsMax: 10, apiKeySunsetAt: 0 });
    for (const id of ERROR_IDS) {
      metrics.observeCheck(deniedEvent(id, false));
      metrics.observeCheck(deniedEvent(id, true));
      metrics.observeCheck(deniedEvent(id, true));
    }
    const { values } = await registry.getSingleMetric('sitekey_authz_checks_total')!.get();
    const counted = values.map(({ labels, value }) => `${labels.outcome} ${labels.error_id} ${value}`).sort();
    const expected = ERROR_IDS.flatMap((id) => [`denied ${errorMetricLabel(id)} 1`, `shadow_denied ${errorMetricLabel(id)} 2`]).sort();
    assert.deepEqual(counted, expected);
  });
});
