import { authMethodArgument, CLIENT_ID_FORM, clientIdArgument, MAX_NOTE, siteIdArgument, SITE_ID_FORM, textOption } from './arguments.js';
import { option, positional, type Command } from './command.js';
import { shortTime, table } from './output.js';

/** Token-based authentication: the OAuth clients of each site, a site's methods, revoking its tokens. */
export const TOKEN_COMMANDS: readonly Command[] = [
  {
    name: 'token-client add',
    synopsis: '<site-id> <client-id> [--note TEXT]',
    summary: "register an OAuth client: its access tokens authenticate as the site (the issuer holds the client's secret)",
    options: { note: { type: 'string' } },
    arity: [2, 2],
    rules: {
      '<site-id>': `the site id: ${SITE_ID_FORM}`,
      '<client-id>': CLIENT_ID_FORM,
      '--note TEXT': `shown in \`token-client list\`; at most ${MAX_NOTE} characters, no control characters`,
    },
    example: 'sitekey-authz token-client add 1001 partner-1001 --note "Acme production"',
    run: async ({ withAdmin }, line) => {
      const siteId = siteIdArgument(positional(line, 0));
      const clientId = clientIdArgument(positional(line, 1));
      const note = textOption('note', option(line, 'note'), MAX_NOTE);
      const client = await withAdmin((admin) => admin.tokens.addClient(siteId, clientId, note));
      return {
        text:
          `registered token client ${clientId} for site ${siteId}.\n` +
          `The partner requests an access token from the issuer with the client-credentials grant and sends it as  Authorization: Bearer <token>`,
        json: client,
      };
    },
  },
  {
    name: 'token-client list',
    synopsis: '[<site-id>]',
    summary: 'the registered token clients, of every site or of one, with when each was last used',
    options: {},
    arity: [0, 1],
    rules: { '<site-id>': `the site id: ${SITE_ID_FORM}` },
    example: 'sitekey-authz token-client list 1001 --json',
    run: async ({ withAdmin }, line) => {
      const siteId = line.positionals.length > 0 ? siteIdArgument(positional(line, 0)) : undefined;
      const clients = await withAdmin((admin) => admin.tokens.listClients(siteId));
      const rows = clients.map((client) => [client.siteId, client.clientId, shortTime(client.createdAt), shortTime(client.lastUsedAt, 'never'), client.note]);
      return {
        text:
          clients.length === 0
            ? `no token clients${siteId === undefined ? '' : ` for site ${siteId}`}; register one with \`sitekey-authz token-client add <site-id> <client-id>\``
            : table(['SITE ID', 'CLIENT ID', 'ADDED', 'LAST USED', 'NOTE'], rows),
        json: clients,
      };
    },
  },
  {
    name: 'token-client remove',
    synopsis: '<client-id>',
    summary: "unregister a client: its tokens are refused (107) on every replica within a second, even before they expire",
    options: {},
    arity: [1, 1],
    rules: { '<client-id>': CLIENT_ID_FORM },
    example: 'sitekey-authz token-client remove partner-1001',
    run: async ({ withAdmin }, line) => {
      const clientId = clientIdArgument(positional(line, 0));
      const client = await withAdmin((admin) => admin.tokens.removeClient(clientId));
      return { text: `removed token client ${clientId} of site ${client.siteId}: its tokens are refused from now on`, json: client };
    },
  },
  {
    name: 'site auth',
    synopsis: '<site-id> both|tokens',
    summary: 'which methods the site accepts: both (API keys and tokens, the default) or tokens only (its keys get 105)',
    options: {},
    arity: [2, 2],
    rules: {
      '<site-id>': `the site id: ${SITE_ID_FORM}`,
      'both|tokens': 'both: API keys and access tokens; tokens: access tokens only, a valid API key is refused with 105',
    },
    example: 'sitekey-authz site auth 1001 tokens',
    run: async ({ withAdmin }, line) => {
      const siteId = siteIdArgument(positional(line, 0));
      const method = authMethodArgument(positional(line, 1));
      const { policy, previous } = await withAdmin((admin) => admin.tokens.setAuthMethod(siteId, method));
      const what = method === 'tokens' ? 'access tokens only: its API keys are refused with 105' : 'API keys and access tokens';
      return {
        text: previous === method ? `site ${siteId} already accepts ${what}` : `site ${siteId} now accepts ${what}`,
        json: { ...policy, changed: previous !== method },
      };
    },
  },
  {
    name: 'site revoke-tokens',
    synopsis: '<site-id>',
    summary: "refuse every token of the site issued before now (a leaked token or client secret), without waiting for their exp",
    options: {},
    arity: [1, 1],
    rules: { '<site-id>': `the site id: ${SITE_ID_FORM}` },
    example: 'sitekey-authz site revoke-tokens 1001',
    run: async ({ withAdmin }, line) => {
      const siteId = siteIdArgument(positional(line, 0));
      const policy = await withAdmin((admin) => admin.tokens.revokeTokens(siteId));
      return {
        text:
          `site ${siteId}: tokens issued before ${policy.tokensNotBefore} are refused (106) on every replica within a second.\n` +
          'If a client secret leaked, rotate it at the issuer too: the partner then requests new tokens with the new secret.',
        json: policy,
      };
    },
  },
];
