import { SETTINGS } from '../config.js';
import type { Handover } from '../token/client-onboarding.js';
import { CLIENT_ID_FORM, MAX_NOTE, siteIdOf } from '../operations/fields.js';
import { revokeTokens, setAuthMethod } from '../operations/site-operations.js';
import {
  addTokenClient,
  createTokenClient,
  MAX_PARTNER_JWKS_BYTES,
  removeTokenClient,
  rotateTokenClientSecret,
} from '../operations/token-client-operations.js';
import { readOptionFile, shortText, SITE_ID_RULE, UsageError } from './arguments.js';
import { flag, option, positional, type CommandLine, type CommandSpec } from './command.js';
import { oneLine, shortTime, table } from './output.js';

async function partnerKeysOptions(line: CommandLine): Promise<{ jwks: string | undefined; jwksUri: string | undefined }> {
  const file = option(line, 'jwks-file');
  const uri = option(line, 'jwks-uri');
  if (file !== undefined && uri !== undefined) throw new UsageError('give the partner\'s keys once: --jwks-file FILE or --jwks-uri URL, not both');
  if (file === undefined) return { jwks: undefined, jwksUri: uri };
  const give = "give the file holding the partner's public keys as a JWKS";
  const tooLarge = `${MAX_PARTNER_JWKS_BYTES / 1024} KiB; a JWKS of public keys is a few KiB`;
  const jwks = await readOptionFile('--jwks-file', file, MAX_PARTNER_JWKS_BYTES, give, tooLarge);
  return { jwks, jwksUri: undefined };
}

function handoverText(handover: Handover): string {
  const rows: Array<[string, string]> = [
    ['client_id', handover.client_id],
    ...(handover.client_secret === undefined ? [] : [['client_secret', handover.client_secret] as [string, string]]),
    ['token_endpoint', handover.token_endpoint],
    ['resource', handover.resource],
    ['guide_url', handover.guide_url ?? '(none set: `sitekey-authz sunset set --guide URL`)'],
  ];
  return rows.map(([name, value]) => `  ${name.padEnd(15)} ${oneLine(value)}`).join('\n');
}

const REGISTRATION_SETTINGS = SETTINGS.filter((setting) => ['TOKEN_ISSUER', 'TOKEN_AUDIENCE', 'TOKEN_REGISTRATION_TOKEN', 'TOKEN_REGISTRATION_TOKEN_FILE'].includes(setting.name));

const SECRET_ONCE = 'Send it to the partner over a channel you would trust with a password: the secret is shown only now and is stored nowhere here.';

export const TOKEN_COMMANDS: readonly CommandSpec[] = [
  {
    name: 'token-client add',
    synopsis: '<site-id> <client-id> [--note TEXT]',
    summary: "register an OAuth client that exists at the issuer (one without dynamic registration): its access tokens authenticate as the site",
    rules: {
      '<site-id>': SITE_ID_RULE,
      '<client-id>': CLIENT_ID_FORM,
      '--note TEXT': `shown in \`token-client list\`; ${shortText(MAX_NOTE)}`,
    },
    example: 'sitekey-authz token-client add 1001 partner-1001 --note "Acme production"',
    run: async ({ withOperations }, line) => {
      const client = await withOperations((context) => addTokenClient(context, { siteId: positional(line, 0), clientId: positional(line, 1), note: option(line, 'note') }));
      const { siteId, clientId } = client;
      return {
        text:
          `registered token client ${clientId} for site ${siteId}.\n` +
          `The partner requests an access token from the issuer with the client-credentials grant and sends it as  Authorization: Bearer <token>`,
        json: client,
      };
    },
  },
  {
    name: 'token-client create',
    synopsis: '<site-id> [--note TEXT] [--jwks-file FILE | --jwks-uri URL]',
    summary: "create the partner's OAuth client at the issuer (dynamic registration) and register it for the site; prints the hand-over",
    rules: {
      '<site-id>': SITE_ID_RULE,
      '--note TEXT': `shown in \`token-client list\` and in the client's name at the issuer; ${shortText(MAX_NOTE)}`,
      '--jwks-file FILE': "the partner's public keys as a JWKS: the client then signs assertions (private_key_jwt) and has no secret; private keys are refused",
      '--jwks-uri URL': "where the partner publishes those keys instead: https:// (http:// only on loopback); without either, a secret (client_secret_basic), printed once",
    },
    environment: REGISTRATION_SETTINGS,
    example: 'sitekey-authz token-client create 1001 --note "Acme production" --json',
    run: async ({ withOperations }, line) => {
      const keys = await partnerKeysOptions(line);
      const { handover, client } = await withOperations((context) => createTokenClient(context, { siteId: positional(line, 0), note: option(line, 'note'), ...keys }));
      const { siteId } = client;
      const how = client.authMethod === 'private_key_jwt' ? "signs its token requests with the partner's own key (private_key_jwt); no secret exists" : `authenticates with the secret below (client_secret_basic). ${SECRET_ONCE}`;
      return {
        text: `created token client ${oneLine(handover.client_id)} at the issuer for site ${siteId}; it ${how}\n${handoverText(handover)}`,
        json: handover,
      };
    },
  },
  {
    name: 'token-client rotate-secret',
    synopsis: '<client-id>',
    summary: 'a new secret at the issuer for a client created here, printed once; the old one stops working',
    rules: { '<client-id>': `${CLIENT_ID_FORM}; a client that \`token-client create\` made with a secret` },
    environment: REGISTRATION_SETTINGS,
    example: 'sitekey-authz token-client rotate-secret 0d3c5d1e-partner --json',
    run: async ({ withOperations }, line) => {
      const { handover, client } = await withOperations((context) => rotateTokenClientSecret(context, { clientId: positional(line, 0) }));
      const text = `token client ${client.clientId} has a new secret; the old one is refused by the issuer from now on. ${SECRET_ONCE}`;
      return { text: `${text}\n${handoverText(handover)}`, json: handover };
    },
  },
  {
    name: 'token-client list',
    changesNothing: true,
    synopsis: '[<site-id>]',
    summary: 'the registered token clients, of every site or of one, with when each was last used',
    rules: { '<site-id>': SITE_ID_RULE },
    example: 'sitekey-authz token-client list 1001 --json',
    run: async ({ withOperations }, line) => {
      const siteId = line.positionals.length > 0 ? siteIdOf(positional(line, 0)) : undefined;
      const clients = await withOperations(({ admin }) => admin.tokens.listClients(siteId));
      const rows = clients.map((client) => [client.siteId, client.clientId, client.authMethod ?? 'added by id', shortTime(client.createdAt), shortTime(client.lastUsedAt, 'never'), client.note]);
      const empty =
        `no token clients${siteId === undefined ? '' : ` for site ${siteId}`}; create one at the issuer with \`sitekey-authz token-client create <site-id>\`, ` +
        'or register an existing one with `sitekey-authz token-client add <site-id> <client-id>`';
      const text = table(['SITE ID', 'CLIENT ID', 'AUTH METHOD', 'ADDED', 'LAST USED', 'NOTE'], rows, empty);
      return { text, json: clients };
    },
  },
  {
    name: 'token-client remove',
    synopsis: '<client-id> [--local-only]',
    summary: "unregister a client: its tokens are refused (107) on every replica within a second, even before they expire; one created here is deleted at the issuer too",
    rules: {
      '<client-id>': CLIENT_ID_FORM,
      '--local-only': 'remove it here only, leaving the client at the issuer (for an issuer that cannot be reached, or has deleted it already): delete it there by hand',
    },
    example: 'sitekey-authz token-client remove partner-1001',
    run: async ({ withOperations }, line) => {
      const { client, deletedAtIssuer } = await withOperations((context) => removeTokenClient(context, { clientId: positional(line, 0), localOnly: flag(line, 'local-only') }));
      const { clientId } = client;
      const there = deletedAtIssuer ? ' and deleted it at the issuer' : client.authMethod === null ? '' : '; it still exists at the issuer: delete it there';
      return { text: `removed token client ${clientId} of site ${client.siteId}${there}: its tokens are refused from now on`, json: { ...client, deletedAtIssuer } };
    },
  },
  {
    name: 'site auth',
    synopsis: '<site-id> both|tokens',
    summary: 'which methods the site accepts: both (API keys and tokens, the default) or tokens only (its keys get 105)',
    rules: {
      '<site-id>': SITE_ID_RULE,
      'both|tokens': 'both: API keys and access tokens; tokens: access tokens only, a valid API key is refused with 105',
    },
    example: 'sitekey-authz site auth 1001 tokens',
    run: async ({ withOperations }, line) => {
      const { policy, changed } = await withOperations((context) => setAuthMethod(context, { siteId: positional(line, 0), method: positional(line, 1) }));
      const { siteId, authMethod } = policy;
      const what = authMethod === 'tokens' ? 'access tokens only: its API keys are refused with 105' : 'API keys and access tokens';
      return {
        text: changed ? `site ${siteId} now accepts ${what}` : `site ${siteId} already accepts ${what}`,
        json: { ...policy, changed },
      };
    },
  },
  {
    name: 'site revoke-tokens',
    synopsis: '<site-id>',
    summary: "refuse every token of the site issued before now (a leaked token or client secret), without waiting for their exp",
    rules: { '<site-id>': SITE_ID_RULE },
    example: 'sitekey-authz site revoke-tokens 1001',
    run: async ({ withOperations }, line) => {
      const policy = await withOperations((context) => revokeTokens(context, { siteId: positional(line, 0) }));
      const { siteId } = policy;
      return {
        text:
          `site ${siteId}: tokens issued before ${policy.tokensNotBefore} are refused (106) on every replica within a second.\n` +
          'If a client secret leaked, rotate it at the issuer too: the partner then requests new tokens with the new secret.',
        json: policy,
      };
    },
  },
];
