import { randomUUID } from 'node:crypto';
import { maskApiKeysIn } from '../decision/api-key.js';
import { parseClientIp } from '../allowlist/client-ip.js';
import { bearerToken, canonicalSiteId } from '../decision/parse-authorization.js';
import type { CheckRequestMessage, HeaderValueMessage } from '../envoy/messages.js';
import { readOptionFile, UsageError } from './arguments.js';
import { flag, option, options, optionsOf, type CommandLine } from './command.js';

/** The options that describe one request, the same for `check` (which sends it) and `explain`. */
export const REQUEST_SYNOPSIS =
  '[--authorization SITE:KEY] [--ip ADDRESS] [--body JSON | --no-body] [--header NAME=VALUE]... ' +
  '[--context NAME=VALUE]... [--path PATH] [--raw-headers] [--raw-body] [--request FILE (instead of all these)]';

const DEFAULT_IP = '127.0.0.1';

export const REQUEST_RULES: Readonly<Record<string, string>> = {
  '--authorization SITE:KEY': 'the Authorization header as the partner sends it; a value that starts with a dash goes after an equals sign: --authorization=-5:…',
  '--ip ADDRESS': `the client's IPv4 or IPv6 address (default ${DEFAULT_IP}); for an address that is no IP, write the request with --request`,
  '--body JSON | --no-body': 'the request body (default: {"siteid":…,"apikey":…} made up from --authorization), or none',
  '--header NAME=VALUE': 'a further request header, repeatable; NAME:VALUE as curl writes it works too',
  '--context NAME=VALUE': "Envoy's per-route context_extensions, e.g. body_credentials=optional",
  '--path PATH': 'the request path (default /)',
  '--raw-headers, --raw-body': "send headers and body as Envoy's encode_raw_headers and pack_as_bytes do",
  '--request FILE': 'a whole CheckRequest in JSON (as Envoy logs it), or - for standard input, instead of the options above',
};

export const CHECK_SYNOPSIS = `${REQUEST_SYNOPSIS} [--target HOST:PORT] [--timeout-ms N]`;

const HOST = 'localhost';
// Far above Envoy's usual max_request_bytes, base64 included; read no further than this.
const MAX_REQUEST_FILE_BYTES = 16 * 1024 * 1024;

// Neither = nor : can be in a header name, so the first after its first character (:authority's) ends it;
// NAME:VALUE is as curl writes it, spaces after the colon dropped.
export function headerOption(option: string): [string, string] {
  const at = option.slice(1).search(/[=:]/) + 1;
  const name = option.slice(0, at).toLowerCase();
  if (at === 0 || /\s/.test(name)) {
    throw new UsageError(`--header "${option}" is not NAME=VALUE or NAME:VALUE; try --header x-request-id=abc`);
  }
  const value = option.slice(at + 1);
  return [name, option[at] === ':' ? value.replace(/^[ \t]+/, '') : value];
}

/** `--context NAME=VALUE`: Envoy's per-route context_extensions, whose keys keep their case. */
function contextOption(option: string): [string, string] {
  const at = option.indexOf('=');
  if (at <= 0) throw new UsageError(`--context "${option}" is not NAME=VALUE; try --context body_credentials=optional`);
  return [option.slice(0, at), option.slice(at + 1)];
}

/** {"siteid":1001,"apikey":"<key>"} from '1001:<key>'; a site id not in canonical form goes in as a string. */
export function bodyFromAuthorization(authorization: string | undefined): string | undefined {
  if (authorization === undefined) return undefined;
  const at = authorization.indexOf(':');
  if (at < 0) return undefined;
  const siteText = authorization.slice(0, at);
  const siteid = canonicalSiteId(siteText) === undefined ? JSON.stringify(siteText) : siteText;
  return `{"siteid":${siteid},"apikey":${JSON.stringify(authorization.slice(at + 1))}}`;
}

/** The CheckRequest Envoy's ext_authz filter sends for a partner's POST (use_remote_address on, with_request_body on). */
function envoyCheckRequest(line: CommandLine, authorization: string | undefined, body: string | undefined): CheckRequestMessage {
  const ip = ipOption(option(line, 'ip'));
  const path = option(line, 'path') ?? '/';
  const given = options(line, 'header').map(headerOption);
  const context = Object.fromEntries(options(line, 'context').map(contextOption));
  const raw = { headers: flag(line, 'raw-headers'), body: flag(line, 'raw-body') };
  const headers: Array<readonly [string, string]> = [
    [':authority', HOST],
    [':method', 'POST'],
    [':path', path],
    [':scheme', 'http'],
    ['x-request-id', randomUUID()],
    ['x-forwarded-for', ip],
    ['x-envoy-external-address', ip],
  ];
  if (authorization !== undefined) headers.push(['authorization', authorization]);
  if (body !== undefined) {
    headers.push(['content-type', 'application/json'], ['content-length', String(Buffer.byteLength(body))]);
  }
  // An explicit --header replaces the default of that name; repeats of it are joined as Envoy joins.
  const overridden = new Set(given.map(([name]) => name));
  const joined = new Map<string, string>();
  for (const [name, value] of [...headers.filter(([name]) => !overridden.has(name)), ...given]) {
    const earlier = joined.get(name);
    joined.set(name, earlier === undefined ? value : `${earlier},${value}`);
  }
  const headerMap: HeaderValueMessage[] = [...joined].map(([key, value]) => ({ key, raw_value: Buffer.from(value, 'utf8') }));
  const sent = body ?? '';
  return {
    attributes: {
      source: { address: { socket_address: { address: ip } } },
      request: {
        http: {
          id: String(Date.now()),
          method: 'POST',
          path,
          host: HOST,
          size: String(Buffer.byteLength(sent)),
          // Envoy's encode_raw_headers and pack_as_bytes move headers and body into these fields.
          ...(raw.headers ? { header_map: { headers: headerMap } } : { headers: Object.fromEntries(joined) }),
          ...(raw.body ? { raw_body: Buffer.from(sent, 'utf8') } : { body: sent }),
        },
      },
      context_extensions: context,
    },
  };
}

function chosenBody(line: CommandLine, authorization: string | undefined): { body: string | undefined; note?: string } {
  const given = option(line, 'body');
  if (flag(line, 'no-body')) {
    if (given !== undefined) throw new UsageError('--body and --no-body exclude each other; pick one');
    return { body: undefined };
  }
  if (given !== undefined) return { body: given };
  // A token request needs no credentials in its body: the token names the site.
  if (bearerToken(authorization) !== undefined) return { body: undefined };
  const madeUp = bodyFromAuthorization(authorization);
  if (madeUp === undefined) {
    return { body: undefined, note: 'no --body given and no --authorization SITE:KEY to make one up from: the request has no body' };
  }
  return {
    body: madeUp,
    note: `no --body given: the body is made up from --authorization, ${maskApiKeysIn(madeUp)}; give --body JSON or --no-body to choose`,
  };
}

async function readRequestFile(path: string, readStdin: () => Promise<string>): Promise<string> {
  if (path === '-') {
    // At a terminal the CLI's reader prompts for a key, one line: a request must be piped in.
    if (process.stdin.isTTY) throw new UsageError('--request - reads a CheckRequest piped to standard input, e.g. sitekey-authz explain --request - < request.json');
    return readStdin();
  }
  const give = 'give a file holding a CheckRequest as JSON, or - for standard input';
  const tooLarge = `${MAX_REQUEST_FILE_BYTES} bytes; that is no CheckRequest Envoy would send`;
  return readOptionFile('--request', path, MAX_REQUEST_FILE_BYTES, give, tooLarge);
}

/** `--request FILE`: a CheckRequest in Envoy's JSON form (the proto3 JSON mapping), decoded with our protos. */
async function requestFromFile(line: CommandLine, path: string, readStdin: () => Promise<string>) {
  const given = (name: string) => line.options[name] !== undefined && line.options[name] !== false;
  const others = Object.keys(optionsOf(REQUEST_SYNOPSIS)).filter((name) => name !== 'request' && given(name));
  if (others.length > 0) {
    throw new UsageError(`--request holds the whole request; drop ${others.map((name) => `--${name}`).join(', ')}, or drop --request`);
  }
  const json = await readRequestFile(path, readStdin);
  let parsed: unknown;
  try {
    parsed = JSON.parse(json);
  } catch (error) {
    throw new UsageError(`--request ${path} is not JSON (${(error as Error).message}); it must hold a CheckRequest such as {"attributes":{"request":{"http":{"headers":{...}}}}}`);
  }
  const { checkRequestFromJson } = await import('../envoy/check-request-json.js');
  const decoded = checkRequestFromJson(parsed);
  if (!decoded.ok) throw new UsageError(`--request ${path}: ${decoded.reason}`);
  const notes = decoded.ignoredFields.length === 0 ? [] : [`--request ${path}: ignored what the service does not read: ${decoded.ignoredFields.join(', ')}`];
  return { request: decoded.request, notes };
}

/** `--ip`: an address Envoy could report; a typo such as 999.1.1.1 is said to be one, not explained as a 103. */
function ipOption(given: string | undefined): string {
  if (given === undefined) return DEFAULT_IP;
  if (parseClientIp(given) === undefined) {
    throw new UsageError(
      `--ip "${given}" is not a valid IPv4 or IPv6 address; try --ip 203.0.113.7 or --ip 2001:db8::7 (a request whose address is no IP can be written with --request FILE)`,
    );
  }
  return given;
}

export async function requestFromOptions(line: CommandLine, readStdin: () => Promise<string>) {
  const file = option(line, 'request');
  if (file !== undefined) return requestFromFile(line, file, readStdin);
  const authorization = option(line, 'authorization');
  const { body, note } = chosenBody(line, authorization);
  return { request: envoyCheckRequest(line, authorization, body), notes: note === undefined ? [] : [note] };
}
