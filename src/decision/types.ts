import type { Allowlist } from '../allowlist/allowlist.js';

/** A site identifier in canonical form: positive decimal, no sign, no leading zero, within bigint. */
export type SiteId = string;
/** An API key in canonical form: a lower-case 8-4-4-4-12 hex UUID. */
export type ApiKey = string;
/** SHA-256 of the canonical key, hex. The only form in which a key is stored or held in memory. */
export type KeyHash = string;
/** The database id of an API key row; safe to log and to hand to Envoy. */
export type KeyId = string;

/** An OAuth client id (the access token's client_id claim, RFC 9068 §2.2) registered to a site. */
export type ClientId = string;

/** How a request authenticated: the partner API's key, or an access token (what partners migrate to). */
export type AuthMethod = 'api_key' | 'token';

/** Which methods a site accepts: both while it migrates, tokens once it has moved. */
export type SiteAuthMethod = 'both' | 'tokens';

export interface KeyCredential {
  readonly keyId: KeyId;
  /** Epoch milliseconds after which the key is refused; null when it never expires. */
  readonly expiresAt: number | null;
}

/** A site's active keys, found by the hex SHA-256 of a key: a Map does, and so does the snapshot's smaller form. */
export interface KeysByHash {
  readonly size: number;
  get(hash: KeyHash): KeyCredential | undefined;
  keys(): IterableIterator<KeyHash>;
}

export interface SiteCredentials {
  readonly siteId: SiteId;
  readonly enabled: boolean;
  /** Epoch ms until which the site may keep using API keys through brownouts and the sunset; null: no grace. */
  readonly graceUntil: number | null;
  /** Active (not revoked) keys of the site, by hash. Expiry is checked at decision time. */
  readonly keysByHash: KeysByHash;
  /** The site's allowlist. Empty admits nobody: whitelisting is mandatory (spec, Authentication 6). */
  readonly allowlist: Allowlist;
  readonly authMethod: SiteAuthMethod;
  /** Epoch ms: the site's tokens issued (iat) before it are refused; null: none revoked. */
  readonly tokensNotBefore: number | null;
  /**
   * The OAuth clients whose tokens authenticate as this site, each with the epoch ms of its
   * registration here: the client's tokens issued (iat) before it are refused as revoked.
   */
  readonly tokenClients: ReadonlyMap<ClientId, number>;
}

/** A scheduled refusal of API-key requests ahead of the sunset, as GitHub ran them. */
export interface Brownout {
  readonly id: string;
  /** Epoch ms; refused from `from` (inclusive) until `until` (exclusive). */
  readonly from: number;
  readonly until: number;
  /** The sites it covers; null: every site. */
  readonly siteIds: ReadonlySet<SiteId> | null;
  /** Refuses nobody: only counts and logs who would have been refused. */
  readonly dryRun: boolean;
}

/** Everything the decision needs to know about stored credentials: plain, immutable data. */
export interface CredentialSnapshot {
  site(siteId: SiteId): SiteCredentials | undefined;
  /** The site the token client is registered to. */
  siteOfTokenClient(clientId: ClientId): SiteCredentials | undefined;
  /** Brownouts not cancelled, in any order. */
  readonly brownouts: readonly Brownout[];
}

/** When API-key authentication ends, from configuration. */
export interface SunsetPolicy {
  /** Epoch ms of the retirement (APIKEY_SUNSET_AT). */
  readonly sunsetAt: number;
  /** Refuse valid credentials once sunsetAt has passed (APIKEY_SUNSET_ENFORCE). */
  readonly enforce: boolean;
  /** Where partners learn to migrate (MIGRATION_GUIDE_URL). */
  readonly guideUrl: string | undefined;
}

/** Why valid credentials were refused with 105: the site moved to tokens, a brownout, or the sunset. */
export type SunsetReason = 'tokens-only' | 'brownout' | 'retired';

/** The request body as the proxy delivered it. */
export type BodyView =
  | { readonly kind: 'empty'; readonly lengthDeclared: boolean }
  | { readonly kind: 'text'; readonly text: string }
  | { readonly kind: 'not-utf8' }
  /** Larger than MAX_BODY_BYTES: neither decoded nor parsed. */
  | { readonly kind: 'too-large'; readonly bytes: number; readonly maxBytes: number };

/** Whether a route requires body credentials, from Envoy's per-route context_extensions. */
export type BodyCredentialsPolicy = 'required' | 'optional';

/** The plain facts of one request that the decision reads; built from a CheckRequest by the transport. */
export interface CheckInput {
  /** The Authorization header value; repeated headers arrive joined by commas. */
  readonly authorization: string | undefined;
  /**
   * For a Bearer header, what verifying the token found (verification is asynchronous, so the
   * transport does it before the decision); undefined when the token method is off.
   */
  readonly bearer?: TokenVerdict;
  /** The client address text chosen by CLIENT_IP_SOURCE; undefined when there is none. */
  readonly clientAddress: string | undefined;
  readonly body: BodyView;
  /** Envoy's x-envoy-auth-partial-body: the body was cut at max_request_bytes. */
  readonly bodyPartial: boolean;
  readonly bodyCredentials: BodyCredentialsPolicy;
}

/** Why the Authorization header was refused (error 108). */
export type HeaderRule =
  | 'header-missing'
  | 'header-malformed'
  | 'site-id-invalid'
  | 'api-key-invalid';

/**
 * Why an access token was refused (error 106). Bounded, for metric labels: each names what the
 * partner must fix, never anything of the token itself.
 */
export type TokenRule =
  | 'tokens-disabled'
  | 'keys-unavailable'
  | 'malformed'
  | 'algorithm'
  | 'type'
  | 'unknown-key'
  | 'signature'
  | 'issuer'
  | 'audience'
  | 'expired'
  | 'not-yet-valid'
  | 'too-old'
  | 'claims'
  | 'revoked';

/** The claims the decision reads from a token whose signature, issuer, audience and times were verified. */
export interface AccessTokenClaims {
  readonly clientId: ClientId;
  /** Epoch ms (the iat claim). */
  readonly issuedAt: number;
  /** Epoch ms (the exp claim). */
  readonly expiresAt: number;
}

/**
 * A refused token's rule, and for the rules a partner fixes by asking the issuer for a token for
 * this API (no JWT at all: an issuer that was not told the resource hands out an opaque token; the
 * wrong aud), the resource to ask for (TOKEN_AUDIENCE, RFC 8707).
 */
export interface TokenRefusal {
  readonly rule: TokenRule;
  readonly resource?: string;
}

/**
 * The client a refused token names, for the refusal counts only (never for the decision): `signed`
 * when our issuer's signature verified and a later rule (exp, aud, nbf) refused it; otherwise the
 * claim is whatever the sender wrote, and is counted as such.
 */
export interface TokenClaimant {
  readonly clientId: ClientId;
  readonly signed: boolean;
}

/**
 * Why a check gets no decision for now, though the data to decide on is there: Envoy answers its
 * retryable 503 (gRPC UNAVAILABLE), and the same request a moment later is decided.
 *   unknown-kid-pending  the token names a kid the key set held lacks, and no fetch of the issuer's
 *                        keys made since the token arrived has said yet whether the issuer publishes it
 *   verification-budget  the token was never seen before, and its source address (or the process) has
 *                        spent the signature checks it may start for now
 */
export const UNDECIDED_REASONS = ['unknown-kid-pending', 'verification-budget'] as const;
export type UndecidedReason = (typeof UNDECIDED_REASONS)[number];

/** A check left undecided for a reason of its own (UndecidedReason). */
export interface Undecided {
  readonly undecided: UndecidedReason;
}

/** What a check comes to: a decision, undecided for a reason of its own, or undefined (no snapshot fresh enough to decide on). */
export type Decided = Decision | Undecided | undefined;

/** The outcome of verifying a Bearer token; `revoked` is decided against the site, so the verifier never says it. */
export type TokenVerdict =
  | { readonly valid: true; readonly claims: AccessTokenClaims }
  | ({ readonly valid: false; readonly rule: Exclude<TokenRule, 'revoked'>; readonly claimant?: TokenClaimant } & Pick<TokenRefusal, 'resource'>);

/** Why the body credentials were refused (error 104). */
export type BodyRule =
  | 'body-missing'
  | 'body-not-forwarded'
  | 'body-partial'
  | 'body-too-large'
  | 'body-not-utf8'
  | 'body-not-json'
  | 'body-not-object'
  | 'siteid-missing'
  | 'siteid-duplicate'
  | 'siteid-mismatch'
  | 'apikey-missing'
  | 'apikey-duplicate'
  | 'apikey-mismatch';

/** A broken body rule with what its message needs: the limit, for a body that is too large. */
export type BodyRefusal =
  | { readonly rule: Exclude<BodyRule, 'body-too-large'> }
  | { readonly rule: 'body-too-large'; readonly maxBodyBytes: number };

/**
 * Who a denial past the header and token checks was about: the masked key, or the token's client.
 * Exactly one of maskedKey and clientId is set.
 */
interface Presented {
  /** `*****` and the last five characters of the submitted key (spec, Errors 102); undefined for a token. */
  readonly maskedKey?: string;
  /** The token's client; undefined for a key. */
  readonly clientId?: ClientId;
}

export type Denial =
  | { readonly errorId: 108; readonly rule: HeaderRule }
  | ({ readonly errorId: 106; readonly siteId?: SiteId; readonly clientId?: ClientId; readonly claimant?: TokenClaimant } & TokenRefusal)
  | { readonly errorId: 107; readonly clientId: ClientId }
  | ({ readonly errorId: 101; readonly siteId: SiteId } & Presented)
  | ({ readonly errorId: 103; readonly siteId: SiteId; readonly clientIp: string } & Presented)
  | { readonly errorId: 102; readonly siteId: SiteId; readonly maskedKey: string }
  | ({ readonly errorId: 104; readonly siteId: SiteId; readonly keyId?: KeyId } & Presented & BodyRefusal)
  | {
      readonly errorId: 105;
      readonly siteId: SiteId;
      readonly keyId: KeyId;
      readonly maskedKey: string;
      readonly reason: SunsetReason;
      /** The brownout's id and end (epoch ms), for a brownout. */
      readonly brownout?: { readonly id: string; readonly until: number };
      readonly sunsetAt: number;
      readonly guideUrl: string | undefined;
    };

export type ErrorId = Denial['errorId'];

export type Allowed =
  | {
      readonly outcome: 'allow';
      readonly method: 'api_key';
      readonly siteId: SiteId;
      readonly keyId: KeyId;
      /** A dry-run brownout would have refused this request: counted and logged, not refused. */
      readonly rehearsal?: { readonly brownoutId: string };
    }
  | { readonly outcome: 'allow'; readonly method: 'token'; readonly siteId: SiteId; readonly clientId: ClientId };

export type Decision = Allowed | { readonly outcome: 'deny'; readonly denial: Denial };
