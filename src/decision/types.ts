import type { Allowlist } from '../allowlist/allowlist.js';

/** A site identifier in canonical form: positive decimal, no sign, no leading zero, within bigint. */
export type SiteId = string;
/** An API key in canonical form: a lower-case 8-4-4-4-12 hex UUID. */
export type ApiKey = string;
/** SHA-256 of the canonical key, hex. The only form in which a key is stored or held in memory. */
export type KeyHash = string;
/** The database id of an API key row; safe to log and to hand to Envoy. */
export type KeyId = string;
/** The access token's client_id claim (RFC 9068 §2.2). */
export type ClientId = string;

export type AuthMethod = 'api_key' | 'token';

/** Both while a site migrates, tokens once it has moved. */
export type SiteAuthMethod = 'both' | 'tokens';

export interface KeyCredential {
  readonly keyId: KeyId;
  /** Epoch ms; null: never expires. */
  readonly expiresAt: number | null;
}

/** A Map does, and so does the snapshot's smaller form. */
export interface KeysByHash {
  readonly size: number;
  get(hash: KeyHash): KeyCredential | undefined;
  keys(): IterableIterator<KeyHash>;
}

export interface SiteCredentials {
  readonly siteId: SiteId;
  readonly enabled: boolean;
  /** Epoch ms until which the site may keep using API keys through brownouts and the sunset. */
  readonly graceUntil: number | null;
  /** Not revoked; expiry is checked at decision time. */
  readonly keysByHash: KeysByHash;
  /** Empty admits nobody: whitelisting is mandatory (spec, Authentication 6). */
  readonly allowlist: Allowlist;
  readonly authMethod: SiteAuthMethod;
  /** Epoch ms: the site's tokens issued (iat) before it are refused. */
  readonly tokensNotBefore: number | null;
  /** Each client's registration here, epoch ms: its tokens issued (iat) before it are refused as revoked. */
  readonly tokenClients: ReadonlyMap<ClientId, number>;
}

/** A scheduled refusal of API-key requests ahead of the sunset, as GitHub ran them. */
export interface Brownout {
  readonly id: string;
  /** Epoch ms; from inclusive, until exclusive. */
  readonly from: number;
  readonly until: number;
  /** null: every site. */
  readonly siteIds: ReadonlySet<SiteId> | null;
  /** Refuses nobody: only counts and logs who would have been refused. */
  readonly dryRun: boolean;
}

/** Everything the decision needs to know about stored credentials: plain, immutable data. */
export interface CredentialSnapshot {
  site(siteId: SiteId): SiteCredentials | undefined;
  siteOfTokenClient(clientId: ClientId): SiteCredentials | undefined;
  /** Not cancelled, in any order. */
  readonly brownouts: readonly Brownout[];
}

export interface SunsetPolicy {
  /** APIKEY_SUNSET_AT, epoch ms */
  readonly sunsetAt: number;
  /** APIKEY_SUNSET_ENFORCE */
  readonly enforce: boolean;
  /** MIGRATION_GUIDE_URL */
  readonly guideUrl: string | undefined;
}

/** Why valid credentials were refused with 105. */
export type SunsetReason = 'tokens-only' | 'brownout' | 'retired';

export type BodyView =
  | { readonly kind: 'empty'; readonly lengthDeclared: boolean }
  | { readonly kind: 'text'; readonly text: string }
  | { readonly kind: 'not-utf8' }
  /** Larger than MAX_BODY_BYTES: neither decoded nor parsed. */
  | { readonly kind: 'too-large'; readonly bytes: number; readonly maxBytes: number };

/** From Envoy's per-route context_extensions. */
export type BodyCredentialsPolicy = 'required' | 'optional';

/** The plain facts of one request that the decision reads; built from a CheckRequest by the transport. */
export interface CheckInput {
  /** The Authorization header value; repeated headers arrive joined by commas. */
  readonly authorization: string | undefined;
  /** Verification is asynchronous, so the transport does it before the decision; undefined when tokens are off. */
  readonly bearer?: TokenVerdict;
  /** As CLIENT_IP_SOURCE reads it. */
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

/** Why an access token was refused (error 106); bounded, for metric labels, never anything of the token itself. */
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

/** The claims of a verified token, epoch ms. */
export interface AccessTokenClaims {
  readonly clientId: ClientId;
  readonly issuedAt: number;
  readonly expiresAt: number;
}

export interface TokenRefusal {
  readonly rule: TokenRule;
  /** TOKEN_AUDIENCE (RFC 8707), for the rules a partner fixes by asking for a token for this API. */
  readonly resource?: string;
}

/** For the refusal counts only: `signed` when our issuer's signature verified and a later rule refused it. */
export interface TokenClaimant {
  readonly clientId: ClientId;
  readonly signed: boolean;
}

/**
 * No decision for now (Envoy's retryable 503): unknown-kid-pending, no fetch since the token came has said
 * whether its kid exists; verification-budget, its address or the process spent its signature checks for now.
 */
export const UNDECIDED_REASONS = ['unknown-kid-pending', 'verification-budget'] as const;
export type UndecidedReason = (typeof UNDECIDED_REASONS)[number];

export interface Undecided {
  readonly undecided: UndecidedReason;
}

/** undefined: no snapshot fresh enough to decide on. */
export type Decided = Decision | Undecided | undefined;

/** `revoked` is decided against the site, so the verifier never says it. */
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

export type BodyRefusal =
  | { readonly rule: Exclude<BodyRule, 'body-too-large'> }
  | { readonly rule: 'body-too-large'; readonly maxBodyBytes: number };

/** Who a denial was about: exactly one of the masked key (spec, Errors 102) and the token's client is set. */
interface Presented {
  readonly maskedKey?: string;
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
      /** A dry-run brownout would have refused it. */
      readonly rehearsal?: { readonly brownoutId: string };
    }
  | { readonly outcome: 'allow'; readonly method: 'token'; readonly siteId: SiteId; readonly clientId: ClientId };

export type Decision = Allowed | { readonly outcome: 'deny'; readonly denial: Denial };
