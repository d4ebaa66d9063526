import { record, type ObjectSchema, type Schema } from './route-table.js';

/** What the admin API answers: the OpenAPI document publishes it, and the API tests hold every answer to it. */

const text: Schema = { type: 'string' };
const time: Schema = { type: 'string', format: 'date-time' };
const optionalTime: Schema = { type: 'string', format: 'date-time', nullable: true };
const count: Schema = { type: 'integer', minimum: 0 };
const flag: Schema = { type: 'boolean' };
const texts: Schema = { type: 'array', items: text };
const authMethod: Schema = { type: 'string', enum: ['both', 'tokens'] };
const warnings: Schema = { type: 'array', items: text, description: 'what the change warns of, in words, though it was made' };

const withFields = (schema: ObjectSchema, properties: Readonly<Record<string, Schema>>): ObjectSchema => record({ ...schema.properties, ...properties }, schema.description);

export const ME = record({ subject: text, email: { type: 'string', nullable: true }, name: { type: 'string', nullable: true }, roles: texts });

export const SITE = record(
  {
    id: text,
    name: text,
    enabled: flag,
    createdAt: time,
    activeKeys: count,
    allowlistSize: count,
    authMethod,
    graceUntil: optionalTime,
    tokensNotBefore: optionalTime,
  },
  'a site as `site list` shows it, with its method, grace and token cut-off',
);

export const ALLOWLIST_ENTRY = record({ cidr: text, createdAt: time });

export const TOKEN_CLIENT = record({
  clientId: text,
  siteId: text,
  note: text,
  authMethod: { type: 'string', enum: ['client_secret_basic', 'private_key_jwt'], nullable: true, description: 'how the client authenticates, when this service created it at the issuer; null: added for an existing client' },
  createdAt: time,
  lastUsedAt: optionalTime,
});

export const TOKEN_CLIENT_REMOVED = withFields(TOKEN_CLIENT, { deletedAtIssuer: { type: 'boolean', description: 'the client was deleted at the issuer too' } });

/** The names of `token-client create --json`. */
export const HANDOVER: ObjectSchema = {
  type: 'object',
  description: "the partner's hand-over, answered once: the secret is stored nowhere",
  properties: {
    client_id: text,
    client_secret: { type: 'string', description: 'only for a client that authenticates with a secret' },
    token_endpoint: text,
    resource: { type: 'string', description: 'the resource (RFC 8707) to request tokens for: TOKEN_AUDIENCE' },
    guide_url: { type: 'string', nullable: true },
  },
  required: ['client_id', 'token_endpoint', 'resource', 'guide_url'],
};

export const SITE_DETAIL = withFields(SITE, { allowlist: { type: 'array', items: ALLOWLIST_ENTRY }, tokenClients: { type: 'array', items: TOKEN_CLIENT } });

export const SITE_CHANGE = withFields(SITE, { changed: flag, warnings });

export const KEY = record(
  {
    keyId: text,
    siteId: text,
    maskedKey: text,
    status: { type: 'string', enum: ['active', 'expired', 'revoked'] },
    createdAt: time,
    expiresAt: optionalTime,
    revokedAt: optionalTime,
    lastUsedAt: optionalTime,
    note: text,
  },
  'a key, masked',
);

export const ISSUED_KEY = withFields(KEY, { key: { type: 'string', description: 'the key itself: shown in this answer only' }, warnings });

export const IMPORTED_KEY = withFields(KEY, { warnings });
export const ROLLED_KEY = withFields(ISSUED_KEY, { replaced: record({ keyId: text, expiresAt: time }, 'the old key: it keeps working until expiresAt') });

export const KEY_CHANGE = withFields(KEY, { changed: flag });

export const ALLOWED = record({ siteId: text, added: texts, alreadyAllowed: texts, warnings });

export const REMOVED = record({ siteId: text, removed: texts, warnings });

export const TOKEN_POLICY = record({ siteId: text, authMethod, tokensNotBefore: optionalTime });

export const TOKEN_POLICY_CHANGE = withFields(TOKEN_POLICY, { changed: flag });

export const GRACE = record({ siteId: text, graceUntil: optionalTime, previous: optionalTime });

const impactDays: Schema = { type: 'integer', minimum: 1, description: 'the window the request counts cover, in days back from now' };
const countsBegin: Schema = { ...optionalTime, description: 'the oldest hour of request counts held (null: none); the counts begin there when it is inside the window' };

export const SITE_IMPACT = record(
  {
    siteId: text,
    days: impactDays,
    keyRequests: { ...count, description: 'allowed API-key requests in the window' },
    tokenRequests: { ...count, description: 'allowed access-token requests in the window' },
    allowlistSize: count,
    activeKeys: count,
    tokenClients: count,
    enabled: flag,
    authMethod,
    countsBegin,
  },
  'what the site did in the window and holds now: what a change that refuses it would refuse',
);

export const BROWNOUT_IMPACT = record(
  {
    days: impactDays,
    sites: { ...count, description: 'sites covered that accept API keys, enabled and without grace when it starts' },
    sitesUsingKeys: { ...count, description: 'of those, the sites that sent API-key requests in the window' },
    keyRequests: { ...count, description: 'their API-key requests in the window' },
    countsBegin,
  },
  'whom a brownout would refuse (105)',
);

export const BROWNOUT = record({
  brownoutId: text,
  from: time,
  until: time,
  siteIds: { type: 'array', items: text, nullable: true, description: 'null: every site' },
  dryRun: flag,
  note: text,
  createdAt: time,
  cancelledAt: optionalTime,
  state: { type: 'string', enum: ['scheduled', 'running', 'over', 'cancelled'] },
});

export const BROWNOUT_CHANGE = withFields(BROWNOUT, { changed: flag });

export const SUNSET_POLICY = record({
  sunsetAt: time,
  enforce: flag,
  guideUrl: { type: 'string', format: 'uri', nullable: true },
  source: { type: 'string', enum: ['database', 'environment'] },
  updatedAt: optionalTime,
});

export const SUNSET_POLICY_CHANGE = withFields(SUNSET_POLICY, { warnings });

const daysLeft: Schema = { type: 'integer', nullable: true };

const MIGRATION_KEY_ROW = record({
  siteId: text,
  siteName: text,
  keyId: text,
  maskedKey: text,
  lastUsedAt: time,
  graceUntil: optionalTime,
  cutoffAt: time,
  daysLeft,
});

const MIGRATION_SITE_ROW = record({
  siteId: text,
  siteName: text,
  authMethod,
  tokenRequests: count,
  keyRequests: count,
  tokenShare: { type: 'number', nullable: true, minimum: 0, maximum: 1 },
  lastTokenUseAt: optionalTime,
  lastKeyUseAt: optionalTime,
  tokenClients: count,
  wouldRefuseOnTokens: flag,
  cutoffAt: time,
  daysLeft,
});

export const MIGRATION_ROW: Schema = { type: 'any', description: `per key: ${Object.keys(MIGRATION_KEY_ROW.properties).join(', ')}; with sites=true, per site: ${Object.keys(MIGRATION_SITE_ROW.properties).join(', ')}` };
export const MIGRATION_ROWS = { perKey: MIGRATION_KEY_ROW, perSite: MIGRATION_SITE_ROW } as const;
export const MIGRATION_ENVELOPE: Readonly<Record<string, Schema>> = {
  countsBegin: { ...optionalTime, description: 'sites=true: the oldest hour of request counts held (null: none); tokenRequests, keyRequests and tokenShare count from it' },
  warnings: { ...warnings, description: 'sites=true: what the report warns of, e.g. counts that begin inside the window' },
};

const nullableText: Schema = { type: 'string', nullable: true };

const AUDIT_POINTER: ObjectSchema = {
  ...record(
    { action: { type: 'string', description: 'an action or group of them, as ?action= of GET /api/v1/audit takes it' }, siteId: nullableText },
    'the audit entries behind a refusal: GET /api/v1/audit?action=…&site=…',
  ),
  nullable: true,
};

const EXPLANATION = record({
  reason: { type: 'string', description: 'why, in words' },
  nextStep: { type: 'string', description: 'what to do about it' },
  audit: AUDIT_POINTER,
});

const DENIAL_ROW = record({
  siteId: nullableText,
  errorId: { type: 'integer' },
  code: { type: 'string', description: "the error's stable code, e.g. IP_NOT_WHITELISTED" },
  clientIp: { type: 'string', nullable: true, description: 'the client address; null for a refused token, counted by client' },
  clientId: { type: 'string', nullable: true, description: "a refused token's client (106, 107)" },
  rule: { type: 'string', nullable: true, description: 'the rule that refused a token (106), e.g. expired, audience' },
  signed: {
    type: 'boolean',
    nullable: true,
    description: "a refused token's: true when our issuer signed it, false when its client id is only what the sender wrote; null for an API key",
  },
  rehearsal: flag,
  shadow: flag,
  count,
  firstSeen: time,
  lastSeen: time,
  moreAddresses: count,
  reason: { type: 'string', nullable: true, description: 'why, in words (null only past the first 50 sites of a report of every site)' },
  nextStep: { type: 'string', nullable: true, description: 'what to do about it' },
  audit: AUDIT_POINTER,
});

export const DENIAL_REPORT = record({
  items: { type: 'array', items: DENIAL_ROW },
  omittedRows: count,
  next: nullableText,
  site: {
    ...record({ siteId: text, name: text, enabled: flag, authMethod }, 'the site asked for, or the one the client asked for is registered to'),
    nullable: true,
  },
  client: { ...record({ clientId: text, siteId: nullableText }, 'the token client asked for, and the site it is registered to'), nullable: true },
  notes: { type: 'array', items: EXPLANATION, description: 'what refuses the partner whatever they send: a disabled site, tokens only, an empty allowlist, an unregistered client' },
});

export const AUDIT_ENTRY = record({
  id: text,
  at: time,
  actor: { type: 'string', description: 'who, as one text (kept for its readers): `email (sub …)`, `sub …`, or the CLI\'s name; read actorSubject and actorEmail instead' },
  actorKind: {
    type: 'string',
    enum: ['admin-token', 'cli'],
    nullable: true,
    description: 'admin-token: a person on the admin port (the console or the API); cli: a name given to the CLI, which nobody vouches for; null: an entry from before the parts were kept apart, whose actor text is all there is',
  },
  actorSubject: { type: 'string', nullable: true, description: "the admin token's sub, or the CLI's --actor, SITEKEY_ACTOR or OS user" },
  actorEmail: { type: 'string', nullable: true, description: 'the e-mail address the provider verified (email_verified); null when it did not, and for the CLI' },
  action: text,
  siteId: nullableText,
  siteName: { type: 'string', nullable: true, description: "the site's name now; null for a change of no site" },
  details: { type: 'any', description: 'as the change recorded them; newer entries hold before and after' },
  summary: { type: 'string', description: 'the entry as a sentence: who (the verified e-mail and sub, the sub alone, `CLI user …`, or an older entry\'s text in quotes) did what to which site, before and after, when' },
});

export const DOCUMENT: Schema = { type: 'any', description: 'an OpenAPI 3.1 document' };
