import { createHash, randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair } from 'jose';
import type { Configuration, KoaContextWithOIDC, Provider as ProviderType } from 'oidc-provider';
import { loadProviderModule, withoutProviderNotices } from './oidc-provider-module.js';

/**
 * The organisation's OpenID provider for the admin port's tests: a real `oidc-provider` on loopback
 * with three people, a client for the console (authorization code with PKCE), and access tokens in the
 * JWT profile of RFC 9068 for the admin API (`aud` = its audience, by resource indicator) carrying the
 * person's roles and e-mail. Sign-in is the provider's interaction served here: a form with e-mail and
 * password; tokenFor() fills it in over HTTP as a browser would. No token is minted by hand.
 */

export interface AdminPerson {
  /** What the sign-in form takes as login. */
  readonly email: string;
  readonly password: string;
  readonly subject: string;
  readonly name: string;
  readonly roles: readonly string[];
  /** The provider's email_verified for this person: true unless said otherwise. */
  readonly emailVerified?: boolean;
}

export const ADMIN_PEOPLE = {
  viewer: { email: 'viewer@example.test', password: 'viewer-password', subject: '248289761001', name: 'Vera Viewer', roles: ['viewer'] },
  manager: { email: 'manager@example.test', password: 'manager-password', subject: '248289761002', name: 'Max Manager', roles: ['account-manager'] },
  admin: { email: 'admin@example.test', password: 'admin-password', subject: '248289761003', name: 'Ada Admin', roles: ['admin'] },
  /** Signs in, but holds none of the admin port's roles: every route but the public one refuses them. */
  outsider: { email: 'outsider@example.test', password: 'outsider-password', subject: '248289761004', name: 'Otto Outsider', roles: ['some-other-application'] },
} as const satisfies Record<string, AdminPerson>;

export type AdminPersonName = keyof typeof ADMIN_PEOPLE;

export interface AdminIssuerOptions {
  /** The admin API's audience, the resource every access token is for (default https://authz-admin.test). */
  readonly audience?: string;
  /** Another resource the provider also mints tokens for: a token that is not the admin API's. */
  readonly otherAudience?: string;
  /** The console client's redirect URIs (default http://127.0.0.1/auth/callback). */
  readonly redirectUris?: readonly string[];
  readonly postLogoutRedirectUris?: readonly string[];
  /** Makes the console a confidential client (client_secret_basic); default a public client with PKCE. */
  readonly clientSecret?: string;
  readonly accessTokenTtlSeconds?: number;
  /** The claim the roles go in (default roles), as ADMIN_ROLES_CLAIM names it. */
  readonly rolesClaim?: string;
  /**
   * The typ header of its access tokens: at+jwt by default (RFC 9068), another such as JWT, or null
   * for none, as the providers that write no RFC 9068 type do (ADMIN_TOKEN_TYPES).
   */
  readonly accessTokenType?: string | null;
  /** 0 (the default) lets the system pick a free port; the local provider for trying it fixes one. */
  readonly port?: number;
  /** People besides ADMIN_PEOPLE who may sign in (tokenFor takes them as they are), e.g. one whose e-mail is not verified. */
  readonly people?: readonly AdminPerson[];
}

export interface AdminIssuer {
  /** e.g. http://127.0.0.1:41234: ADMIN_ISSUER. */
  readonly issuer: string;
  /** ADMIN_AUDIENCE. */
  readonly audience: string;
  readonly otherAudience: string;
  /** ADMIN_OIDC_CLIENT_ID. */
  readonly clientId: string;
  readonly clientSecret: string | undefined;
  readonly redirectUris: readonly string[];
  readonly authorizationEndpoint: string;
  readonly tokenEndpoint: string;
  /** The environment that points the service at this provider (without ADMIN_PORT). */
  env(): Record<string, string>;
  /**
   * A real access token for the person, through sign-in, code and PKCE; `resource` picks another
   * audience; `idToken` gives the ID token of the same sign-in instead.
   */
  tokenFor(person: AdminPersonName | AdminPerson | string, options?: { readonly resource?: string; readonly idToken?: boolean }): Promise<string>;
  close(): Promise<void>;
}

const LOOPBACK = '127.0.0.1';
/** The kid of the provider's one signing key. */
export const ADMIN_ISSUER_KID = 'admin-issuer-1';
const CLIENT_ID = 'sitekey-authz-console';
const SCOPE = 'openid email profile roles';
const INTERACTION_PATH = /^\/interaction\/([A-Za-z0-9_-]+)$/;

function personNamed(person: AdminPersonName | AdminPerson | string): AdminPerson {
  if (typeof person !== 'string') return person;
  const found = Object.values(ADMIN_PEOPLE).find((known) => known.email === person) ?? (ADMIN_PEOPLE as Record<string, AdminPerson>)[person];
  if (found === undefined) throw new TypeError(`no test person ${person}: use viewer, manager, admin or their e-mail`);
  return found;
}

const escapeHtml = (text: string): string => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

function signInPage(uid: string, problem: string | undefined): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Sign in to Example Corp</title></head><body>
<main><h1>Sign in to Example Corp</h1>${problem === undefined ? '' : `<p role="alert">${escapeHtml(problem)}</p>`}
<form method="post" action="/interaction/${escapeHtml(uid)}">
<label for="login">E-mail</label> <input id="login" name="login" type="email" autocomplete="username" required>
<label for="password">Password</label> <input id="password" name="password" type="password" autocomplete="current-password" required>
<button type="submit">Sign in</button></form></main></body></html>`;
}

async function formOf(request: IncomingMessage): Promise<URLSearchParams> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request) {
    size += (chunk as Buffer).length;
    if (size > 16_384) throw new Error('sign-in form too large');
    chunks.push(chunk as Buffer);
  }
  return new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
}

export async function startAdminIssuer(options: AdminIssuerOptions = {}): Promise<AdminIssuer> {
  const { Provider, errors } = await loadProviderModule();
  const audience = options.audience ?? 'https://authz-admin.test';
  const otherAudience = options.otherAudience ?? 'https://some-other-api.test';
  const redirectUris = options.redirectUris ?? [`http://${LOOPBACK}/auth/callback`];
  const rolesClaim = options.rolesClaim ?? 'roles';

  let provider: ProviderType | undefined;
  const server: Server = createServer((request, response) => {
    void route(request, response).catch((error: unknown) => {
      if (!response.headersSent) response.writeHead(500, { 'content-type': 'text/plain' });
      response.end(String(error));
    });
  });
  await new Promise<void>((resolveListen, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, LOOPBACK, () => resolveListen());
  });
  const issuer = `http://${LOOPBACK}:${(server.address() as AddressInfo).port}`;

  const people: readonly AdminPerson[] = [...Object.values(ADMIN_PEOPLE), ...(options.people ?? [])];
  const byAccountId = new Map<string, AdminPerson>(people.map((person) => [person.subject, person]));
  const { privateKey } = await generateKeyPair('RS256', { extractable: true });
  const signingKey = { ...(await exportJWK(privateKey)), kid: ADMIN_ISSUER_KID, alg: 'RS256', use: 'sig' };

  const configuration: Configuration = {
    clients: [
      {
        client_id: CLIENT_ID,
        ...(options.clientSecret === undefined
          ? { token_endpoint_auth_method: 'none' as const }
          : { client_secret: options.clientSecret, token_endpoint_auth_method: 'client_secret_basic' as const }),
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
        redirect_uris: [...redirectUris],
        post_logout_redirect_uris: [...(options.postLogoutRedirectUris ?? [])],
      },
    ],
    jwks: { keys: [signingKey] } as Configuration['jwks'],
    cookies: { keys: [randomBytes(32).toString('base64url')] },
    scopes: ['openid', 'offline_access', 'email', 'profile', 'roles'],
    claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'], roles: [rolesClaim] },
    // The ID token carries the person's claims too, for the console's page header.
    conformIdTokenClaims: false,
    pkce: { required: () => true },
    ttl: { AccessToken: options.accessTokenTtlSeconds ?? 600, IdToken: 600, Session: 3600, Interaction: 600, Grant: 3600 },
    findAccount: (_ctx, id) => {
      const person = byAccountId.get(id);
      if (person === undefined) return undefined;
      return {
        accountId: id,
        claims: () => ({ sub: id, email: person.email, email_verified: person.emailVerified ?? true, name: person.name, [rolesClaim]: [...person.roles] }),
      };
    },
    extraTokenClaims: (_ctx, token) => {
      const person = 'accountId' in token && typeof token.accountId === 'string' ? byAccountId.get(token.accountId) : undefined;
      return person === undefined ? undefined : { email: person.email, email_verified: person.emailVerified ?? true, name: person.name, [rolesClaim]: [...person.roles] };
    },
    // The console is the organisation's own application: no consent screen, every scope granted.
    loadExistingGrant: async (ctx: KoaContextWithOIDC) => {
      const clientId = ctx.oidc.client?.clientId ?? '';
      const accountId = ctx.oidc.session?.accountId ?? '';
      const existing = ctx.oidc.session?.grantIdFor(clientId);
      if (existing !== undefined) {
        const grant = await ctx.oidc.provider.Grant.find(existing);
        if (grant !== undefined) return grant;
      }
      const grant = new ctx.oidc.provider.Grant({ clientId, accountId });
      grant.addOIDCScope(SCOPE + ' offline_access');
      grant.addOIDCClaims(['email', 'email_verified', 'name', rolesClaim]);
      grant.addResourceScope(audience, 'admin-api');
      grant.addResourceScope(otherAudience, 'admin-api');
      await grant.save();
      return grant;
    },
    features: {
      devInteractions: { enabled: false },
      rpInitiatedLogout: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => audience,
        useGrantedResource: () => true,
        getResourceServerInfo: (_ctx, indicator) => {
          if (indicator !== audience && indicator !== otherAudience) throw new errors.InvalidTarget();
          return { scope: 'admin-api', audience: indicator, accessTokenFormat: 'jwt', jwt: { sign: { alg: 'RS256' } } };
        },
      },
    },
    interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
    ...(options.accessTokenType === undefined
      ? {}
      : {
          formats: {
            customizers: {
              jwt: (_ctx, _token, parts) => {
                parts.header = { typ: options.accessTokenType ?? undefined };
              },
            },
          },
        }),
  };
  provider = withoutProviderNotices(() => new Provider(issuer, configuration));
  provider.silent = true;
  const callback = provider.callback();

  async function route(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const path = new URL(request.url ?? '/', issuer).pathname;
    const uid = INTERACTION_PATH.exec(path)?.[1];
    if (uid === undefined || provider === undefined) return callback(request, response);
    await provider.interactionDetails(request, response);
    if (request.method === 'GET') {
      response.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' }).end(signInPage(uid, undefined));
      return;
    }
    const form = await formOf(request);
    const person = people.find((known) => known.email === form.get('login') && known.password === form.get('password'));
    if (person === undefined) {
      response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(signInPage(uid, 'Wrong e-mail or password.'));
      return;
    }
    await provider.interactionFinished(request, response, { login: { accountId: person.subject } }, { mergeWithLastSubmission: false });
  }

  const discovery = (await (await fetch(`${issuer}/.well-known/openid-configuration`)).json()) as Record<string, string>;
  const authorizationEndpoint = discovery['authorization_endpoint'] ?? '';
  const tokenEndpoint = discovery['token_endpoint'] ?? '';

  const tokenFor = async (who: AdminPersonName | AdminPerson | string, tokenOptions: { readonly resource?: string; readonly idToken?: boolean } = {}): Promise<string> => {
    const person = personNamed(who);
    const jar = new Map<string, string>();
    const send = async (url: string, init: RequestInit = {}): Promise<Response> => {
      const cookie = [...jar].map(([name, value]) => `${name}=${value}`).join('; ');
      const answer = await fetch(new URL(url, issuer), { ...init, redirect: 'manual', headers: { ...(init.headers as Record<string, string>), cookie } });
      for (const line of answer.headers.getSetCookie()) {
        const [pair = ''] = line.split(';');
        const at = pair.indexOf('=');
        jar.set(pair.slice(0, at), pair.slice(at + 1));
      }
      return answer;
    };
    const follow = (answer: Response, step: string): string => {
      const location = answer.headers.get('location');
      if (answer.status < 300 || answer.status > 399 || location === null) throw new Error(`${step}: expected a redirect, got ${answer.status}`);
      return location;
    };
    const verifier = randomBytes(32).toString('base64url');
    const state = randomBytes(16).toString('base64url');
    const authorize = new URL(authorizationEndpoint);
    const redirectUri = redirectUris[0] ?? '';
    authorize.search = new URLSearchParams({
      client_id: CLIENT_ID,
      response_type: 'code',
      redirect_uri: redirectUri,
      scope: SCOPE,
      state,
      code_challenge: createHash('sha256').update(verifier).digest('base64url'),
      code_challenge_method: 'S256',
      ...(tokenOptions.resource === undefined ? {} : { resource: tokenOptions.resource }),
    }).toString();
    const signIn = follow(await send(authorize.href), 'authorization request');
    const page = await send(signIn);
    if (page.status !== 200) throw new Error(`the sign-in page answered ${page.status}`);
    await page.text();
    const submitted = await send(signIn, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ login: person.email, password: person.password }).toString(),
    });
    const resumed = await send(follow(submitted, 'sign-in'));
    const back = new URL(follow(resumed, 'resumed authorization'), issuer);
    const code = back.searchParams.get('code');
    if (code === null || back.searchParams.get('state') !== state) throw new Error(`no code in the redirect: ${back.searchParams.get('error_description') ?? back.search}`);
    const form = new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: redirectUri, code_verifier: verifier });
    const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded' };
    if (options.clientSecret === undefined) form.set('client_id', CLIENT_ID);
    else headers['authorization'] = `Basic ${Buffer.from(`${CLIENT_ID}:${options.clientSecret}`).toString('base64')}`;
    if (tokenOptions.resource !== undefined) form.set('resource', tokenOptions.resource);
    const answer = await fetch(tokenEndpoint, { method: 'POST', headers, body: form });
    const body = (await answer.json()) as { access_token?: unknown; id_token?: unknown; error?: unknown; error_description?: unknown };
    const token = tokenOptions.idToken === true ? body.id_token : body.access_token;
    if (typeof token !== 'string') throw new Error(`the token endpoint answered ${answer.status} ${String(body.error)}: ${String(body.error_description)}`);
    return token;
  };

  return {
    issuer,
    audience,
    otherAudience,
    clientId: CLIENT_ID,
    clientSecret: options.clientSecret,
    redirectUris,
    authorizationEndpoint,
    tokenEndpoint,
    env: () => ({ ADMIN_ISSUER: issuer, ADMIN_AUDIENCE: audience, ...(options.rolesClaim === undefined ? {} : { ADMIN_ROLES_CLAIM: options.rolesClaim }) }),
    tokenFor,
    close: () =>
      new Promise<void>((resolveClose, reject) => {
        provider = undefined;
        server.close((error) => (error ? reject(error) : resolveClose()));
        server.closeAllConnections();
      }),
  };
}
