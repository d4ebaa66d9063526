import { SETTINGS } from '../config.js';
import { ALLOWLIST_ENTRY_FORM } from '../allowlist/allowlist-entry.js';
import { openDatabase } from '../store/database.js';
import { runningEmbeddedUrl } from '../embedded/embedded-postgres.js';
import { migrate } from '../store/migrate.js';
import { allowNetworks, revokeNetworks } from '../operations/allowlist-operations.js';
import { API_KEY_FORM, DATE_EXAMPLES, DATE_FORM, MAX_NAME, MAX_NOTE, SITE_ID_FORM, siteIdOf, textOf } from '../operations/fields.js';
import { expiresOf, importKey, issueKey, revokeKey, SUNSET_WARNING_DAYS } from '../operations/key-operations.js';
import { addSite, setSiteEnabled } from '../operations/site-operations.js';
import { KEY_ID_FORM } from './arguments.js';
import { shortTime, table } from './output.js';
import { flag, option, positional, withDefaults, type Command, type CommandSpec } from './command.js';
import { EXIT_NO_VERDICT } from './exit-codes.js';
import { CHECK_OPTIONS, CHECK_SYNOPSIS, REQUEST_OPTIONS, REQUEST_RULES, REQUEST_SYNOPSIS } from './request-options.js';
import { AUDIT_COMMANDS } from './audit-commands.js';
import { SUNSET_COMMANDS } from './sunset-commands.js';
import { TOKEN_COMMANDS } from './token-commands.js';
import { ISSUER_COMMAND } from './issuer-command.js';
import { keyRollCommand, newKeyText } from './key-roll-command.js';

const string = { type: 'string' } as const;

// The rules several commands share, for `--help`; the forms come from the code that checks them.
const shortText = (maxLength: number) => `at most ${maxLength} characters, no control characters`;
const SITE_ID_RULE = `the site id: ${SITE_ID_FORM}`;
const SITE_RULE = { '<site>': SITE_ID_RULE };
const KEY_RULES = {
  '--expires ISO': `when the key stops being accepted (default: never): ${DATE_FORM}, in the future; a date alone is midnight UTC, e.g. ${DATE_EXAMPLES.join(' or ')}. Within ${SUNSET_WARNING_DAYS} days of the API-key sunset, a key that would outlive it is warned of`,
  '--note T': `shown in \`key list\`, e.g. who holds the key; ${shortText(MAX_NOTE)}`,
};
const ALLOWLIST_RULES = { ...SITE_RULE, '<cidr>...': ALLOWLIST_ENTRY_FORM };

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
  ISSUER_COMMAND,
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
    options: { name: string },
    arity: [1, 1],
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
  {
    name: 'site disable',
    synopsis: '<id>',
    summary: "refuse the site's requests (error 101); its keys and allowlist are kept",
    arity: [1, 1],
    rules: { '<id>': SITE_ID_RULE },
    example: 'sitekey-authz site disable 1001',
    run: async ({ withOperations }, line) => {
      const { result } = await withOperations((context) => setSiteEnabled(context, { siteId: positional(line, 0), enabled: false }));
      const { site, changed } = result;
      const siteId = site.siteId;
      return {
        text: changed
          ? `disabled site ${siteId}: its requests are refused (101); its ${site.activeKeys} active key(s) are kept`
          : `site ${siteId} was already disabled`,
        json: { ...site, changed },
      };
    },
  },
  {
    name: 'site enable',
    synopsis: '<id>',
    summary: "accept the site's requests again",
    arity: [1, 1],
    rules: { '<id>': SITE_ID_RULE },
    example: 'sitekey-authz site enable 1001',
    run: async ({ withOperations }, line) => {
      const { result, warnings } = await withOperations((context) => setSiteEnabled(context, { siteId: positional(line, 0), enabled: true }));
      const { site, changed } = result;
      const text = changed ? `enabled site ${site.siteId}` : `site ${site.siteId} was already enabled`;
      return { text, json: { ...site, changed }, warnings };
    },
  },
  {
    name: 'site list',
    changesNothing: true,
    summary: 'sites with their state, active keys and allowlist size (names shown with control characters escaped)',
    example: 'sitekey-authz site list --json',
    run: async ({ withAdmin }) => {
      const sites = await withAdmin((admin) => admin.listSites());
      const rows = sites.map((site) => {
        const counts = [String(site.activeKeys), String(site.allowlistEntries)];
        return [site.siteId, site.enabled ? 'enabled' : 'disabled', ...counts, shortTime(site.createdAt), site.name];
      });
      return {
        text: sites.length === 0 ? 'no sites yet; add one with `sitekey-authz site add <id> --name <name>`' : table(['SITE ID', 'STATE', 'ACTIVE KEYS', 'ALLOWLIST', 'CREATED', 'NAME'], rows),
        json: sites,
      };
    },
  },
  {
    name: 'key issue',
    synopsis: '<site> [--expires ISO] [--note T]',
    summary: 'create a key and print it, once',
    options: { expires: string, note: string },
    arity: [1, 1],
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
    options: { expires: string, note: string },
    arity: [1, 1],
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
    arity: [2, 2],
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
  keyRollCommand({ ...SITE_RULE, ...KEY_RULES }),
  {
    name: 'key list',
    changesNothing: true,
    synopsis: '<site>',
    summary: 'the keys of a site, masked, with their state and when each was last used',
    arity: [1, 1],
    rules: SITE_RULE,
    example: 'sitekey-authz key list 1001',
    run: async ({ withAdmin }, line) => {
      const siteId = siteIdOf(positional(line, 0));
      const keys = await withAdmin((admin) => admin.listKeys(siteId));
      const rows = keys.map((key) => {
        const times = [shortTime(key.createdAt), shortTime(key.expiresAt, 'never'), shortTime(key.lastUsedAt, 'never')];
        return [key.keyId, key.maskedKey, key.status, ...times, key.note];
      });
      return {
        text:
          keys.length === 0
            ? `site ${siteId} has no keys; issue one with \`sitekey-authz key issue ${siteId}\``
            : table(['KEY ID', 'KEY', 'STATUS', 'CREATED', 'EXPIRES', 'LAST USED', 'NOTE'], rows),
        json: keys,
      };
    },
  },
  {
    name: 'ip allow',
    synopsis: '<site> <cidr>... [--allow-any-address]',
    summary: "add addresses or networks (IPv4 or IPv6) to the site's allowlist",
    options: { 'allow-any-address': { type: 'boolean' } },
    arity: [2, Infinity],
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
    arity: [2, Infinity],
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
    arity: [1, 1],
    rules: SITE_RULE,
    example: 'sitekey-authz ip list 1001',
    run: async ({ withAdmin }, line) => {
      const siteId = siteIdOf(positional(line, 0));
      const entries = await withAdmin((admin) => admin.listNetworks(siteId));
      return {
        text:
          entries.length === 0
            ? `site ${siteId} has no allowlist entry: every request is refused (103). Add one with \`sitekey-authz ip allow ${siteId} <cidr>\``
            : table(['CIDR', 'ADDED'], entries.map((entry) => [entry.cidr, shortTime(entry.createdAt)])),
        json: entries,
      };
    },
  },
  {
    name: 'check',
    synopsis: CHECK_SYNOPSIS,
    summary: 'send a Check to a running service, as Envoy would, and print its answer (exit 0 allowed, 1 denied, 2 no verdict)',
    options: CHECK_OPTIONS,
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
    options: REQUEST_OPTIONS,
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

/** Every command of `sitekey-authz`, in the order `--help` lists them. */
export const COMMANDS: readonly Command[] = COMMAND_SPECS.map(withDefaults);
