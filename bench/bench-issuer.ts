import { JwksServer, signedToken, signingKey, type SigningKey } from '../test/support/jwks-server.js';

/** What the bench's tokens say they are for; `serve` is started with these as TOKEN_ISSUER and TOKEN_AUDIENCE. */
export const BENCH_TOKEN_ISSUER = 'https://login.bench.example/realms/partners';
export const BENCH_TOKEN_AUDIENCE = 'https://partner-api.example.com';
/** Longer than any bench or soak run: the repeated token must not expire under load. */
const TOKEN_LIFETIME_SECONDS = 6 * 3_600;

/**
 * The bench's token issuer: a JWKS on loopback (test/support/jwks-server.ts) with one RS256 key, and
 * access tokens signed with it as RFC 9068 profiles them. `serve` fetches the JWKS once at start; the
 * bench's tokens are minted here, in the bench process, before any load.
 */
export class BenchIssuer {
  private constructor(
    private readonly jwks: JwksServer,
    private readonly key: SigningKey,
  ) {}

  static async start(): Promise<BenchIssuer> {
    const key = await signingKey('bench-rsa-1');
    const jwks = await JwksServer.start();
    jwks.publish([key]);
    return new BenchIssuer(jwks, key);
  }

  /** The TOKEN_* settings that make `serve` accept this issuer's tokens. */
  get env(): Record<string, string> {
    return { TOKEN_ISSUER: BENCH_TOKEN_ISSUER, TOKEN_AUDIENCE: BENCH_TOKEN_AUDIENCE, TOKEN_JWKS_URL: this.jwks.url };
  }

  /** The kid the issuer publishes and signs with. */
  get kid(): string {
    return this.key.kid;
  }

  /** An access token of the client, as a client-credentials grant returns it. */
  async mint(clientId: string): Promise<string> {
    const now = Math.floor(Date.now() / 1000);
    return signedToken(this.key, {
      iss: BENCH_TOKEN_ISSUER,
      aud: BENCH_TOKEN_AUDIENCE,
      sub: clientId,
      client_id: clientId,
      iat: now,
      exp: now + TOKEN_LIFETIME_SECONDS,
      jti: `bench-${now}`,
    });
  }

  close(): Promise<void> {
    return this.jwks.close();
  }
}
