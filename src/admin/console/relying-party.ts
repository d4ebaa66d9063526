import * as oidc from 'openid-client';
import type { SessionTokens } from './session-store.js';
import type { PendingSignIn } from './sign-in-cookie.js';

interface RelyingPartyOptions {
  readonly issuer: URL;
  readonly clientId: string;
  /** Absent: a public client, protected by PKCE alone. */
  readonly clientSecret: string | undefined;
  readonly redirectUri: string;
  readonly postLogoutRedirectUri: string;
  /** ADMIN_AUDIENCE, asked for as the resource indicator so the access token is meant for the admin API. */
  readonly audience: string;
  readonly timeoutSeconds: number;
}

const SCOPE = 'openid email profile';

/**
 * Authorization code with PKCE S256, state and nonce (openid-client). The provider's metadata is discovered
 * on first use and again after a failure, so a provider that is down at start does not stop the API.
 */
export class RelyingParty {
  private configuration: Promise<oidc.Configuration> | undefined;

  constructor(private readonly options: RelyingPartyOptions) {}

  private discovered(): Promise<oidc.Configuration> {
    if (this.configuration === undefined) {
      const { issuer, clientId, clientSecret, timeoutSeconds } = this.options;
      const authentication = clientSecret === undefined ? oidc.None() : oidc.ClientSecretBasic(clientSecret);
      // http on a loopback address only (loadConfig).
      const insecure = issuer.protocol === 'http:' ? [oidc.allowInsecureRequests] : [];
      const discovering = oidc.discovery(issuer, clientId, clientSecret, authentication, { execute: insecure, timeout: timeoutSeconds });
      discovering.catch(() => (this.configuration = undefined));
      this.configuration = discovering;
    }
    return this.configuration;
  }

  async startSignIn(returnTo: string): Promise<{ readonly url: URL; readonly pending: PendingSignIn }> {
    const configuration = await this.discovered();
    const pending: PendingSignIn = { state: oidc.randomState(), nonce: oidc.randomNonce(), codeVerifier: oidc.randomPKCECodeVerifier(), returnTo };
    const url = oidc.buildAuthorizationUrl(configuration, {
      redirect_uri: this.options.redirectUri,
      response_type: 'code',
      scope: SCOPE,
      resource: this.options.audience,
      state: pending.state,
      nonce: pending.nonce,
      code_challenge: await oidc.calculatePKCECodeChallenge(pending.codeVerifier),
      code_challenge_method: 'S256',
    });
    return { url, pending };
  }

  async finishSignIn(callbackUrl: URL, pending: PendingSignIn): Promise<SessionTokens & { readonly subject: string }> {
    const configuration = await this.discovered();
    const tokens = await oidc.authorizationCodeGrant(
      configuration,
      callbackUrl,
      { pkceCodeVerifier: pending.codeVerifier, expectedState: pending.state, expectedNonce: pending.nonce, idTokenExpected: true },
      { resource: this.options.audience },
    );
    const claims = tokens.claims();
    if (claims === undefined) throw new Error('the provider sent no ID token');
    return { subject: claims.sub, accessToken: tokens.access_token, refreshToken: tokens.refresh_token, idToken: tokens.id_token };
  }

  async refresh(refreshToken: string): Promise<SessionTokens> {
    const configuration = await this.discovered();
    const tokens = await oidc.refreshTokenGrant(configuration, refreshToken, { resource: this.options.audience });
    return { accessToken: tokens.access_token, refreshToken: tokens.refresh_token, idToken: tokens.id_token };
  }

  async signOutUrl(idToken: string | undefined): Promise<URL | undefined> {
    const configuration = await this.discovered();
    if (configuration.serverMetadata().end_session_endpoint === undefined) return undefined;
    return oidc.buildEndSessionUrl(configuration, {
      post_logout_redirect_uri: this.options.postLogoutRedirectUri,
      client_id: this.options.clientId,
      ...(idToken === undefined ? {} : { id_token_hint: idToken }),
    });
  }
}
