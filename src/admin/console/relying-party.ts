import * as oidc from 'openid-client';
import type { AdminSettings } from '../../config.js';
import type { SessionTokens } from './session-store.js';
import type { PendingSignIn } from './sign-in-cookie.js';

const SCOPE = 'openid email profile';
const PROVIDER_TIMEOUT_SECONDS = 10;

// Authorization code with PKCE S256, state and nonce. The provider is discovered on first use and again after a
// failure, so a provider that is down at start does not stop the API.
export class RelyingParty {
  private configuration: Promise<oidc.Configuration> | undefined;

  constructor(
    /** ADMIN_AUDIENCE is the resource asked for, so that the access token is meant for the admin API. */
    private readonly settings: AdminSettings,
    private readonly clientId: string,
    /** ADMIN_PUBLIC_URL without a trailing slash. */
    private readonly publicUrl: string,
  ) {}

  private discovered(): Promise<oidc.Configuration> {
    if (this.configuration === undefined) {
      const issuer = new URL(this.settings.issuer);
      const secret = this.settings.oidcClientSecret;
      // Without a secret, a public client protected by PKCE alone; http on a loopback address only (loadConfig).
      const authentication = secret === undefined ? oidc.None() : oidc.ClientSecretBasic(secret);
      const insecure = issuer.protocol === 'http:' ? [oidc.allowInsecureRequests] : [];
      const discovering = oidc.discovery(issuer, this.clientId, secret, authentication, { execute: insecure, timeout: PROVIDER_TIMEOUT_SECONDS });
      discovering.catch(() => (this.configuration = undefined));
      this.configuration = discovering;
    }
    return this.configuration;
  }

  async startSignIn(returnTo: string): Promise<{ readonly url: URL; readonly pending: PendingSignIn }> {
    const configuration = await this.discovered();
    const pending: PendingSignIn = { state: oidc.randomState(), nonce: oidc.randomNonce(), codeVerifier: oidc.randomPKCECodeVerifier(), returnTo };
    const url = oidc.buildAuthorizationUrl(configuration, {
      redirect_uri: `${this.publicUrl}/auth/callback`,
      response_type: 'code',
      scope: SCOPE,
      resource: this.settings.audience,
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
      { resource: this.settings.audience },
    );
    const claims = tokens.claims();
    if (claims === undefined) throw new Error('the provider sent no ID token');
    return { subject: claims.sub, accessToken: tokens.access_token, refreshToken: tokens.refresh_token, idToken: tokens.id_token };
  }

  async refresh(refreshToken: string): Promise<SessionTokens> {
    const configuration = await this.discovered();
    const tokens = await oidc.refreshTokenGrant(configuration, refreshToken, { resource: this.settings.audience });
    return { accessToken: tokens.access_token, refreshToken: tokens.refresh_token, idToken: tokens.id_token };
  }

  async signOutUrl(idToken: string | undefined): Promise<URL | undefined> {
    const configuration = await this.discovered();
    if (configuration.serverMetadata().end_session_endpoint === undefined) return undefined;
    return oidc.buildEndSessionUrl(configuration, {
      post_logout_redirect_uri: `${this.publicUrl}/auth/signed-out`,
      client_id: this.clientId,
      ...(idToken === undefined ? {} : { id_token_hint: idToken }),
    });
  }
}
