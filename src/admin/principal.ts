import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AuditActor } from '../store/audit-actor.js';

export type AdminRole = 'viewer' | 'account-manager' | 'admin';

/** Lowest first: admin ⊇ account-manager ⊇ viewer. */
export const ADMIN_ROLES: readonly AdminRole[] = ['viewer', 'account-manager', 'admin'];

export interface AdminPrincipal {
  readonly subject: string;
  /** Only an address the provider verified (email_verified: true): anyone can write an unverified one. */
  readonly email?: string;
  readonly name?: string;
  readonly roles: ReadonlySet<AdminRole>;
  /** ADMIN_ROLES_CLAIM, when the token lacks it: the provider maps no roles, none to this person, or another name. */
  readonly rolesClaimMissing?: string;
}

export type AuthOutcome =
  | { readonly ok: true; readonly principal: AdminPrincipal }
  | { readonly ok: false; readonly status: 401 | 403 | 429; readonly error: string; readonly description: string };

/** The Bearer header, or the console's session cookie; undefined when the request does not use this way. */
export interface RequestAuthenticator {
  authenticate(request: IncomingMessage): Promise<AuthOutcome | undefined>;
}

/** The console: every path outside /api/; true when it answered. */
export interface ConsoleHandler {
  handle(request: IncomingMessage, response: ServerResponse): Promise<boolean>;
}

export function hasRole(principal: AdminPrincipal, needed: AdminRole): boolean {
  const rank = ADMIN_ROLES.indexOf(needed);
  return ADMIN_ROLES.some((role, index) => index >= rank && principal.roles.has(role));
}

/** Ignoring the roles that are not ours (a provider sends many). */
export function rolesOf(claim: unknown): ReadonlySet<AdminRole> {
  const values = Array.isArray(claim) ? claim : typeof claim === 'string' ? claim.split(' ') : [];
  return new Set(ADMIN_ROLES.filter((role) => values.includes(role)));
}

export function auditActor(principal: AdminPrincipal): AuditActor {
  return { kind: 'admin-token', subject: principal.subject, ...(principal.email === undefined ? {} : { email: principal.email }) };
}

export function rolesHeld(principal: AdminPrincipal): string {
  if (principal.rolesClaimMissing !== undefined) {
    return `your token carries no ${principal.rolesClaimMissing} claim (ADMIN_ROLES_CLAIM), so it has no role: the provider must put viewer, account-manager or admin in it`;
  }
  const held = [...principal.roles];
  return `your token has ${held.length === 0 ? 'none of viewer, account-manager, admin' : held.join(', ')}`;
}
