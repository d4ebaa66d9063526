import { SETTINGS } from '../config.js';
import { ISSUER_ENVIRONMENT, loadIssuerConfig } from '../issuer/issuer-config.js';
import { ALLOWLIST_ENTRY_FORM } from '../allowlist/allowlist-entry.js';
import { openDatabase } from '../store/database.js';
import { runningEmbeddedUrl } from '../embedded/embedded-postgres.js';
import { migrate } from '../store/migrate.js';
import { allowNetworks, revokeNetworks } from '../operations/allowlist-operations.js';
import type { IssuedKey } from '../store/credential-admin.js';
import { API_KEY_FORM, DATE_EXAMPLES, DATE_FORM, MAX_NAME, MAX_NOTE, siteIdOf, textOf } from '../operations/fields.js';
import {
  expiresOf, importKey, issueKey, revokeKey, ROLL_OVERLAP_DAYS, rollKey, SUNSET_WARNING_DAYS,
} from '../operations/key-operations.js';
import { addSite, setSiteEnabled } from '../operations/site-operations.js';
import { KEY_ID_FORM, shortText, SITE_ID_RULE } from './arguments.js';
import { shortTime, table } from './output.js';
import { EXIT_NO_VERDICT, flag, option, positional, withDefaults, type Command, type CommandSpec } from './command.js';
import { CHECK_SYNOPSIS, REQUEST_RULES, REQUEST_SYNOPSIS } from './request-options.js';
import { AUDIT_COMMANDS } from './audit-commands.js';
import { SUNSET_COMMANDS } from './sunset-commands.js';
import { TOKEN_COMMANDS } from './token-commands.js';

const SITE_RULE = { '<site>': SITE_ID_RULE };
const KEY_RULES = {
  '--expires ISO': `when the key stops being accepted (default: never): ${DATE_FORM}, in the future; a date alone is midnight UTC, e.g. ${DATE_EXAMPLES.join(' or ')}. Within ${SUNSET_WARNING_DAYS} days of the API-key sunset, a key that would outlive it is warned of`,
  '--note T': `shown in \`key list\`, e.g. who holds the key; ${shortText(MAX_NOTE)}`,
};
const ALLOWLIST_RULES = { ...SITE_RULE, '<cidr>...': ALLOWLIST_ENTRY_FORM };

const newKeyText = (key: IssuedKey): string =>
  `  ${key.apiKey}\n\n` +
  'This is the only time the key is shown: hand it to the partner over a secure channel.\n' +
  `The partner sends it as  Authorization: ${key.siteId}:<key>  with the same siteid and apikey in the JSON body.`;

function siteSwitch(enabled: boolean): CommandSpec {
  const verb = enabled ? 'enable' : 'disable';
  const refused = "refuse the site's requests (error 101); its keys and allowlist are kept";
  return {
    name: `site ${verb}`,
    synopsis: '<id>',
    summary: enabled ? "accept the site's requests again" : refused,
    rules: { '<id>': SITE_ID_RULE },
    example: `sitekey-authz site ${verb} 1001`,
    run: async ({ withOperations }, line) => {
      const request = { siteId: positional(line, 0), enabled };
      const { result, warnings } = await withOperations((context) => setSiteEnabled(context, request));
      const { site, changed } = result;
      const done = enabled
        ? `enabled site ${site.siteId}`
        : `disabled site ${site.siteId}: its requests are refused (101); its ${site.activeKeys} active key(s) are kept`;
      const text = changed ? done : `site ${site.siteId} was already ${verb}d`;
      return { text, json: { ...site, changed }, warnings };
    },
  };
}

const COMMAND_SPECS: readonly CommandSpec[] = [
  {
    name: 'serve',
    summary: 'run the ext_authz service, configured by the environment variables below (docs/configuration.md, "Configuration")',
    environment: SETTINGS.filter((setting) => !setting.name.startsWith('ISSUER_')),
    example: 'DATABASE_URL=postgres://authz@db.internal/authz sitekey-authz serve',
    run: async ({ config, logger }) => {
      // Loaded here so that the admin commands do not pay for the gRPC and proto start-up.
      const { runServer } = await import('../serve/run-server.js');
      await runServer(config, logger);
      return undefined;
    },
  },
  {
    name: 'issuer',
    summary:
      'run an OAuth 2.0 authorization server for the partner API: client credentials, RFC 9068 JWT access tokens for ISSUER_RESOURCE, ' +
      'client registration (RFC 7591/7592) with the initial access token, keys in the database (docs/tokens.md, "Running the issuer")',
    options: { 'show-registration-token': { type: 'boolean' } },
    rules: {
      '--show-registration-token':
        'print the registration token kept in the database again (trying out on loopback without ISSUER_REGISTRATION_TOKEN: it is printed at the first start only)',
    },
    environment: ISSUER_ENVIRONMENT,
    example:
      'DATABASE_URL=postgres://authz@db.internal/authz ISSUER_URL=https://auth.partner-api.example.com ' +
      'ISSUER_RESOURCE=https://partner-api.example.com ISSUER_REGISTRATION_TOKEN_FILE=/run/secrets/registration-token sitekey-authz issuer',
    run: async ({ config, env, logger }, line) => {
      const settings = loadIssuerConfig(env);
      // Loaded here so that the other commands do not pay for oidc-provider.
      const { runIssuer } = await import('../issuer/run-issuer.js');
      await runIssuer(config, settings, logger, { showRegistrationToken: flag(line, 'show-registration-token') });
      return undefined;
    },
  },
  {
    name: 'migrate',
    summary: 'apply pending database migrations',
    example: 'DATABASE_URL=postgres://authz@db.internal/authz sitekey-authz migrate',
    run: async ({ config, logger }) => {
      const database = await openDatabase(config, logger, 'command');
      try {
        const applied = await migrate(database.url);
        return {
          text: applied.length === 0 ? 'the database schema is up to date' : `applied ${applied.length} migration(s): ${applied.join(', ')}`,
          json: { applied },
        };
      } finally {
        await database.close();
      }
    },
  },
  {
    name: 'site add',
    synopsis: '<id> [--name N]',
    summary: 'register a partner site',
    rules: { '<id>': SITE_ID_RULE, '--name N': `the partner's name, shown in \`site list\`; ${shortText(MAX_NAME)}` },
    example: 'sitekey-authz site add 1001 --name "Acme Travel"',
    run: async ({ withOperations }, line) => {
      const site = await withOperations((context) => addSite(context, { id: positional(line, 0), name: option(line, 'name') }));
      const { siteId, name } = site;
      return {
        text:
          `added site ${siteId}${name ? ` "${name}"` : ''}, enabled.\n` +
          `Next: \`sitekey-authz key issue ${siteId}\` and \`sitekey-authz ip allow ${siteId} <cidr>\``,
        json: site,
      };
    },
  },
  siteSwitch(false),
  siteSwitch(true),
  {
    name: 'site list',
    changesNothing: true,
    summary: 'sites with their state, active keys and allowlist size (names shown with control characters escaped)',
    example: 'sitekey-authz site list --json',
    run: async ({ withOperations }) => {
      const sites = await withOperations(({ admin }) => admin.listSites());
      const rows = sites.map((site) => {
        const counts = [String(site.activeKeys), String(site.allowlistEntries)];
        return [site.siteId, site.enabled ? 'enabled' : 'disabled', ...counts, shortTime(site.createdAt), site.name];
      });
      const empty = 'no sites yet; add one with `sitekey-authz site add <id> --name <name>`';
      const text = table(['SITE ID', 'STATE', 'ACTIVE KEYS', 'ALLOWLIST', 'CREATED', 'NAME'], rows, empty);
      return { text, json: sites };
    },
  },
  {
    name: 'key issue',
    synopsis: '<site> [--expires ISO] [--note T]',
    summary: 'create a key and print it, once',
    rules: { ...SITE_RULE, ...KEY_RULES },
    example: 'sitekey-authz key issue 1001 --expires 2027-01-31 --note "production"',
    run: async ({ withOperations }, line) => {
      const { result: key, warnings } = await withOperations((context) =>
        issueKey(context, { siteId: positional(line, 0), expires: option(line, 'expires'), note: option(line, 'note') }),
      );
      const text = `issued key ${key.keyId} for site ${key.siteId} (expires ${key.expiresAt ?? 'never'}):`;
      return { text: `${text}\n\n${newKeyText(key)}`, json: key, warnings };
    },
  },
  {
    name: 'key import',
    synopsis: '<site> [--expires ISO] [--note T]  < key.txt',
    summary: 'register an existing key read from standard input (never from the command line)',
    rules: {
      ...SITE_RULE,
      ...KEY_RULES,
      '< key.txt': `the key on standard input, ${API_KEY_FORM}, not the nil or max UUID; never on the command line, where it would stay in shell history (at a terminal it is asked for)`,
    },
    example: 'sitekey-authz key import 1001 --note "from the old gateway" < key.txt',
    run: async ({ withOperations, readStdin, now }, line) => {
      const request = { siteId: positional(line, 0), expires: option(line, 'expires'), note: option(line, 'note') };
      // Checked before the key is asked for, so that a typo in them is not found after pasting it.
      siteIdOf(request.siteId);
      expiresOf(request.expires, now);
      textOf(request.note, 'note', MAX_NOTE);
      const key = await readStdin();
      const { result, warnings } = await withOperations((context) => importKey(context, { ...request, key }));
      return { text: `imported key ${result.keyId} (${result.maskedKey}) for site ${result.siteId}`, json: result, warnings };
    },
  },
  {
    name: 'key revoke',
    synopsis: '<site> <key-id>',
    summary: 'revoke a key; every replica refuses it within a second',
    rules: { ...SITE_RULE, '<key-id>': KEY_ID_FORM },
    example: 'sitekey-authz key revoke 1001 12',
    run: async ({ withOperations }, line) => {
      const { siteId, key, changed } = await withOperations((context) => revokeKey(context, { siteId: positional(line, 0), keyId: positional(line, 1) }));
      const named = `key ${key.keyId} (${key.maskedKey})`;
      const text = changed
        ? `revoked ${named} of site ${siteId}`
        : `${named} of site ${siteId} was already revoked at ${key.revokedAt}`;
      return { text, json: { ...key, changed } };
    },
  },
  {
    name: 'key roll',
    synopsis: '<site> <key-id> [--old-expires ISO] [--expires ISO] [--note T]',
    summary: `issue a new key and print it once; the old key keeps working until --old-expires (default ${ROLL_OVERLAP_DAYS} days)`,
    rules: {
      ...SITE_RULE,
      '<key-id>': `the active key to replace: ${KEY_ID_FORM}`,
      '--old-expires ISO': `when the old key stops being accepted (default: ${ROLL_OVERLAP_DAYS} days from now): ${DATE_FORM}, in the future; an old key that expires sooner keeps its sooner end`,
      ...KEY_RULES,
    },
    example: 'sitekey-authz key roll 1001 12 --old-expires 2027-01-31 --note "production, rolled"',
    run: async ({ withOperations }, line) => {
      const old = { siteId: positional(line, 0), keyId: positional(line, 1), oldExpires: option(line, 'old-expires') };
      const request = { ...old, expires: option(line, 'expires'), note: option(line, 'note') };
      const { result, warnings } = await withOperations((context) => rollKey(context, request));
      const { key, replaced } = result;
      return {
        text:
          `issued key ${key.keyId} for site ${key.siteId} (expires ${key.expiresAt ?? 'never'}), replacing key ${replaced.keyId} (${replaced.maskedKey}), ` +
          `which keeps working until ${replaced.expiresAt}:\n\n${newKeyText(key)}`,
        json: { ...key, replaced: { keyId: replaced.keyId, expiresAt: replaced.expiresAt } },
        warnings,
      };
    },
  },
  {
    name: 'key list',
    changesNothing: true,
    synopsis: '<site>',
    summary: 'the keys of a site, masked, with their state and when each was last used',
    rules: SITE_RULE,
    example: 'sitekey-authz key list 1001',
    run: async ({ withOperations }, line) => {
      const siteId = siteIdOf(positional(line, 0));
      const keys = await withOperations(({ admin }) => admin.listKeys(siteId));
      const rows = keys.map((key) => {
        const times = [shortTime(key.createdAt), shortTime(key.expiresAt, 'never'), shortTime(key.lastUsedAt, 'never')];
        return [key.keyId, key.maskedKey, key.status, ...times, key.note];
      });
      const empty = `site ${siteId} has no keys; issue one with \`sitekey-authz key issue ${siteId}\``;
      const text = table(['KEY ID', 'KEY', 'STATUS', 'CREATED', 'EXPIRES', 'LAST USED', 'NOTE'], rows, empty);
      return { text, json: keys };
    },
  },
  {
    name: 'ip allow',
    synopsis: '<site> <cidr>... [--allow-any-address]',
    summary: "add addresses or networks (IPv4 or IPv6) to the site's allowlist",
    rules: { ...ALLOWLIST_RULES, '--allow-any-address': 'the second step for 0.0.0.0/0 or ::/0, which admit every address on the internet: without it they are refused' },
    example: 'sitekey-authz ip allow 1001 203.0.113.0/24 198.51.100.7 2001:db8:42::/48',
    run: async ({ withOperations }, line) => {
      const { result, warnings } = await withOperations((context) =>
        allowNetworks(context, { siteId: positional(line, 0), entries: line.positionals.slice(1), allowAnyAddress: flag(line, 'allow-any-address') }),
      );
      const lines = [
        ...(result.added.length > 0 ? [`site ${result.siteId} now allows ${result.added.join(', ')}`] : []),
        ...(result.alreadyAllowed.length > 0 ? [`already allowed: ${result.alreadyAllowed.join(', ')}`] : []),
      ];
      return { text: lines.join('\n'), json: result, warnings };
    },
  },
  {
    name: 'ip revoke',
    synopsis: '<site> <cidr>...',
    summary: "remove entries from the site's allowlist (all of them, or none if one is not on it)",
    rules: ALLOWLIST_RULES,
    example: 'sitekey-authz ip revoke 1001 203.0.113.0/24',
    run: async ({ withOperations }, line) => {
      const { result, warnings } = await withOperations((context) => revokeNetworks(context, { siteId: positional(line, 0), entries: line.positionals.slice(1) }));
      const text = `removed from the allowlist of site ${result.siteId}: ${result.removed.join(', ')}`;
      return { text, json: result, warnings };
    },
  },
  {
    name: 'ip list',
    changesNothing: true,
    synopsis: '<site>',
    summary: "the site's allowlist",
    rules: SITE_RULE,
    example: 'sitekey-authz ip list 1001',
    run: async ({ withOperations }, line) => {
      const siteId = siteIdOf(positional(line, 0));
      const entries = await withOperations(({ admin }) => admin.listNetworks(siteId));
      const rows = entries.map((entry) => [entry.cidr, shortTime(entry.createdAt)]);
      const empty = `site ${siteId} has no allowlist entry: every request is refused (103). Add one with \`sitekey-authz ip allow ${siteId} <cidr>\``;
      return { text: table(['CIDR', 'ADDED'], rows, empty), json: entries };
    },
  },
  {
    name: 'check',
    synopsis: CHECK_SYNOPSIS,
    summary: 'send a Check to a running service, as Envoy would, and print its answer (exit 0 allowed, 1 denied, 2 no verdict)',
    failureExit: EXIT_NO_VERDICT,
    rules: {
      ...REQUEST_RULES,
      '--target HOST:PORT': 'where the service listens (default localhost:$GRPC_PORT: export a changed GRPC_PORT in this terminal too)',
      '--timeout-ms N': 'how long to wait for the answer, 1 to 3600000 (default 5000)',
    },
    example: 'sitekey-authz check --authorization 1001:6f1c3a52-8d0e-4b7a-9c21-5e3f4a6b7c8d --ip 203.0.113.7',
    // Loaded when used, as serve is: the other commands do not pay for gRPC and the protos.
    run: async (context, line) => (await import('./check-command.js')).runCheck(context, line),
  },
  {
    name: 'explain',
    synopsis: REQUEST_SYNOPSIS,
    summary: 'what the service would answer to a request, and why, worked out from the credential database',
    failureExit: EXIT_NO_VERDICT,
    rules: REQUEST_RULES,
    example: 'sitekey-authz explain --authorization 1001:6f1c3a52-8d0e-4b7a-9c21-5e3f4a6b7c8d --ip 198.51.100.9',
    run: async (context, line) => (await import('./explain-command.js')).runExplain(context, line),
  },
  {
    name: 'db url',
    summary: 'print the database\'s connection URL, e.g. for psql "$(sitekey-authz db url)" (the embedded one while serve runs)',
    example: 'psql "$(sitekey-authz db url)"',
    run: async ({ config }) => {
      const url = config.databaseUrl ?? (await runningEmbeddedUrl(config.dataDir));
      if (url === undefined) {
        throw new Error(`no embedded PostgreSQL is running in ${config.dataDir}; start \`sitekey-authz serve\` (make run) first, from the same directory or with the same DATA_DIR`);
      }
      return { text: url, json: { url } };
    },
  },
  ...SUNSET_COMMANDS,
  ...TOKEN_COMMANDS,
  ...AUDIT_COMMANDS,
];

export const COMMANDS: readonly Command[] = COMMAND_SPECS.map(withDefaults);
