/** Checks `serve` counted in /metrics, by verdict ('allow' or an error id), and those it could not decide. */
export interface CheckCounts {
  readonly byVerdict: ReadonlyMap<string, number>;
  readonly undecided: number;
}

function labels(text: string): Map<string, string> {
  return new Map([...text.matchAll(/(\w+)="([^"]*)"/g)].map((match) => [match[1]!, match[2]!]));
}

/** sitekey_authz_checks_total summed over sites, and sitekey_authz_checks_undecided_total, from /metrics. */
export async function checkCounts(metricsUrl: string): Promise<CheckCounts> {
  const response = await fetch(metricsUrl);
  if (response.status !== 200) throw new Error(`${metricsUrl} answered ${response.status}`);
  const byVerdict = new Map<string, number>();
  let undecided = 0;
  for (const line of (await response.text()).split('\n')) {
    const sample = /^(sitekey_authz_checks(?:_undecided)?_total)\{([^}]*)\} (\S+)$/.exec(line);
    if (sample === null) continue;
    const [, name, labelText, value] = sample;
    if (name === 'sitekey_authz_checks_undecided_total') {
      undecided += Number(value);
      continue;
    }
    const found = labels(labelText!);
    const verdict = found.get('outcome') === 'allowed' ? 'allow' : (found.get('error_id') ?? '?');
    byVerdict.set(verdict, (byVerdict.get(verdict) ?? 0) + Number(value));
  }
  return { byVerdict, undecided };
}

/** Counts between two readings. */
export function countsBetween(before: CheckCounts, after: CheckCounts): CheckCounts {
  const byVerdict = new Map<string, number>();
  for (const [verdict, count] of after.byVerdict) {
    const delta = count - (before.byVerdict.get(verdict) ?? 0);
    if (delta !== 0) byVerdict.set(verdict, delta);
  }
  return { byVerdict, undecided: after.undecided - before.undecided };
}

