import { decide } from '../decision/decide.js';
import { bearerToken } from '../decision/parse-authorization.js';
import type { CheckInput, CredentialSnapshot, Decided, SunsetPolicy, TokenVerdict, Undecided } from '../decision/types.js';
import type { TokenVerifier } from './token-verifier.js';

/** What a check is decided on besides the request: the same for serve and explain. */
export interface CheckAuthority {
  readonly snapshot: (now: number) => CredentialSnapshot | undefined;
  readonly sunset: SunsetPolicy;
  readonly tokens: TokenVerifier | undefined;
  readonly now?: () => number;
}

/** decide() is pure, so a Bearer token is verified first; one refused as revoked or unregistered is forgotten. */
export function authorizeCheck(input: CheckInput, authority: CheckAuthority): Decided | Promise<Decided> {
  const now = (authority.now ?? Date.now)();
  const token = authority.tokens === undefined ? undefined : bearerToken(input.authorization);
  if (token === undefined || authority.tokens === undefined) {
    const snapshot = authority.snapshot(now);
    return snapshot && decide(input, snapshot, now, authority.sunset);
  }
  const tokens = authority.tokens;
  const decideWith = (verdict: TokenVerdict | Undecided, at: number): Decided => {
    if ('undecided' in verdict) return verdict;
    const snapshot = authority.snapshot(at);
    if (snapshot === undefined) return undefined;
    const decision = decide({ ...input, bearer: verdict }, snapshot, at, authority.sunset);
    if (decision.outcome === 'deny' && (decision.denial.errorId === 107 || (decision.denial.errorId === 106 && decision.denial.rule === 'revoked'))) {
      tokens.forget(token);
    }
    return decision;
  };
  const verdict = tokens.verify(token, now, input.clientAddress);
  if (verdict instanceof Promise) return verdict.then((settled) => decideWith(settled, (authority.now ?? Date.now)()));
  return decideWith(verdict, now);
}
