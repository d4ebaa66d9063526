import { Client, credentials, Metadata, status as GrpcStatus, type ServiceError } from '@grpc/grpc-js';
import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import { HeaderAppendAction, type CheckRequestMessage, type HeaderValueMessage } from '../envoy/messages.js';
import { AUTHORIZATION_SERVICE } from '../envoy/proto.js';

/**
 * Sends one ext_authz Check, shaped the way Envoy would send it for a partner's POST, and prints
 * the verdict. Exit 0 allowed, 1 denied, 2 no verdict (bad arguments, no connection, RPC error).
 */

const USAGE = `Usage: node dist/src/client/send-check.js [options]

  --target HOST:PORT         the service (default localhost:9001)
  --authorization VALUE      the Authorization header, e.g. '1001:<key>' (omit to send none)
  --ip ADDRESS               the client address: the peer Envoy reports, also appended to
                             x-forwarded-for and set as x-envoy-external-address (default 127.0.0.1)
  --body JSON                the request body (default {"siteid":<id>,"apikey":"<key>"} from --authorization)
  --no-body                  send no body
  --header NAME=VALUE        an extra request header; repeat for more (a repeated name is joined by ",")
  --context NAME=VALUE       a per-route context extension, e.g. body_credentials=optional; repeatable
  --path PATH                the request path (default /)
  --raw-headers              send headers in header_map raw_value, as Envoy's encode_raw_headers does
  --raw-body                 send the body in raw_body, as Envoy's pack_as_bytes does
  --timeout-ms N             give up after N milliseconds (default 5000)

Example:
  node dist/src/client/send-check.js --authorization '1001:0f0e0d0c-0b0a-4908-8706-050403020100' --ip 203.0.113.7`;

const EXIT_ALLOWED = 0;
const EXIT_DENIED = 1;
const EXIT_NO_VERDICT = 2;

class UsageError extends Error {}

interface SendCheckOptions {
  readonly target: string;
  readonly authorization: string | undefined;
  readonly ip: string;
  readonly body: string | undefined;
  readonly headers: ReadonlyArray<readonly [string, string]>;
  readonly context: Readonly<Record<string, string>>;
  readonly path: string;
  readonly rawHeaders: boolean;
  readonly rawBody: boolean;
  readonly timeoutMs: number;
}

function pairs(values: readonly string[] | undefined, option: string): Array<[string, string]> {
  return (values ?? []).map((value) => {
    const at = value.indexOf('=');
    if (at <= 0) throw new UsageError(`--${option} "${value}" is not NAME=VALUE; try --${option} x-request-id=abc`);
    return [value.slice(0, at).toLowerCase(), value.slice(at + 1)];
  });
}

/** {"siteid":1001,"apikey":"<key>"} from '1001:<key>', so a valid call needs no --body. */
function defaultBody(authorization: string | undefined): string | undefined {
  if (authorization === undefined) return undefined;
  const at = authorization.indexOf(':');
  if (at < 0) return undefined;
  const siteId = authorization.slice(0, at);
  const siteIdJson = /^[1-9]\d*$/.test(siteId) ? siteId : JSON.stringify(siteId);
  return `{"siteid":${siteIdJson},"apikey":${JSON.stringify(authorization.slice(at + 1))}}`;
}

function parseOptions(argv: readonly string[]): SendCheckOptions {
  let parsed;
  try {
    parsed = parseArgs({
      args: [...argv],
      strict: true,
      allowPositionals: false,
      options: {
        target: { type: 'string', default: 'localhost:9001' },
        authorization: { type: 'string' },
        ip: { type: 'string', default: '127.0.0.1' },
        body: { type: 'string' },
        'no-body': { type: 'boolean', default: false },
        header: { type: 'string', multiple: true },
        context: { type: 'string', multiple: true },
        path: { type: 'string', default: '/' },
        'raw-headers': { type: 'boolean', default: false },
        'raw-body': { type: 'boolean', default: false },
        'timeout-ms': { type: 'string', default: '5000' },
        help: { type: 'boolean', default: false },
      },
    });
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message : String(error));
  }
  const { values } = parsed;
  if (values.help) throw new UsageError('');
  if (values['no-body'] && values.body !== undefined) throw new UsageError('--body and --no-body exclude each other; pick one');
  const timeoutMs = Number(values['timeout-ms']);
  if (!/^\d+$/.test(values['timeout-ms']) || timeoutMs <= 0) {
    throw new UsageError(`--timeout-ms "${values['timeout-ms']}" is not a positive whole number; try --timeout-ms 5000`);
  }
  return {
    target: values.target,
    authorization: values.authorization,
    ip: values.ip,
    body: values['no-body'] ? undefined : (values.body ?? defaultBody(values.authorization)),
    headers: pairs(values.header, 'header'),
    context: Object.fromEntries(pairs(values.context, 'context')),
    path: values.path,
    rawHeaders: values['raw-headers'],
    rawBody: values['raw-body'],
    timeoutMs,
  };
}

/** The CheckRequest Envoy's ext_authz filter would send (use_remote_address on, with_request_body on). */
function checkRequest(options: SendCheckOptions): CheckRequestMessage {
  const host = 'localhost';
  const headers: Array<readonly [string, string]> = [
    [':authority', host],
    [':method', 'POST'],
    [':path', options.path],
    [':scheme', 'http'],
    ['x-request-id', randomUUID()],
    ['x-forwarded-for', options.ip],
    ['x-envoy-external-address', options.ip],
  ];
  if (options.authorization !== undefined) headers.push(['authorization', options.authorization]);
  if (options.body !== undefined) {
    headers.push(['content-type', 'application/json'], ['content-length', String(Buffer.byteLength(options.body))]);
  }
  // An explicit --header replaces the default of that name; repeats of it are joined as Envoy joins.
  const overridden = new Set(options.headers.map(([name]) => name));
  const all = [...headers.filter(([name]) => !overridden.has(name)), ...options.headers];
  const joined = new Map<string, string>();
  for (const [name, value] of all) joined.set(name, joined.has(name) ? `${joined.get(name)},${value}` : value);

  const headerMap: HeaderValueMessage[] = [...joined].map(([key, value]) => ({ key, raw_value: Buffer.from(value, 'utf8') }));
  const body = options.body ?? '';
  return {
    attributes: {
      source: { address: { socket_address: { address: options.ip } } },
      request: {
        http: {
          id: String(Date.now()),
          method: 'POST',
          path: options.path,
          host,
          size: String(Buffer.byteLength(body)),
          ...(options.rawHeaders ? { header_map: { headers: headerMap } } : { headers: Object.fromEntries(joined) }),
          ...(options.rawBody ? { raw_body: Buffer.from(body, 'utf8') } : { body }),
        },
      },
      context_extensions: options.context,
    },
  };
}

/** The parts of a decoded CheckResponse this script prints; read defensively, a server may send anything. */
interface PrintedResponse {
  readonly status?: { readonly code?: number; readonly message?: string } | null;
  readonly ok_response?: {
    readonly headers?: ReadonlyArray<{ readonly header?: { readonly key?: string; readonly value?: string } | null; readonly append_action?: number }> | null;
  } | null;
  readonly denied_response?: {
    readonly status?: { readonly code?: number } | null;
    readonly headers?: ReadonlyArray<{ readonly header?: { readonly key?: string; readonly value?: string } | null }> | null;
    readonly body?: string;
  } | null;
  readonly dynamic_metadata?: { readonly fields?: Readonly<Record<string, { readonly stringValue?: string }>> } | null;
}

function appendActionName(action: number | undefined): string {
  return Object.entries(HeaderAppendAction).find(([, value]) => value === action)?.[0] ?? String(action);
}

function printVerdict(response: PrintedResponse): number {
  const code = response.status?.code ?? GrpcStatus.OK;
  const codeName = GrpcStatus[code] ?? String(code);
  if (code === GrpcStatus.OK && !response.denied_response) {
    console.log(`ALLOW  (gRPC status ${code} ${codeName})`);
    for (const option of response.ok_response?.headers ?? []) {
      console.log(`  upstream header   ${option.header?.key}: ${option.header?.value}  [${appendActionName(option.append_action)}]`);
    }
    for (const [name, value] of Object.entries(response.dynamic_metadata?.fields ?? {})) {
      console.log(`  dynamic metadata  ${name} = ${value.stringValue ?? JSON.stringify(value)}`);
    }
    return EXIT_ALLOWED;
  }
  const denied = response.denied_response;
  console.log(`DENY  HTTP ${denied?.status?.code ?? '(none)'}  (gRPC status ${code} ${codeName}${response.status?.message ? `, ${response.status.message}` : ''})`);
  for (const option of denied?.headers ?? []) console.log(`  ${option.header?.key}: ${option.header?.value}`);
  console.log(denied?.body ?? '');
  return EXIT_DENIED;
}

function sendCheck(options: SendCheckOptions): Promise<PrintedResponse> {
  const method = AUTHORIZATION_SERVICE.Check;
  const client = new Client(options.target, credentials.createInsecure());
  return new Promise<PrintedResponse>((resolveResponse, reject) => {
    client.makeUnaryRequest(
      method.path,
      method.requestSerialize,
      (bytes: Buffer) => method.responseDeserialize(bytes) as PrintedResponse,
      checkRequest(options),
      new Metadata(),
      { deadline: Date.now() + options.timeoutMs },
      (error: ServiceError | null, response?: PrintedResponse) => (error || !response ? reject(error) : resolveResponse(response)),
    );
  }).finally(() => client.close());
}

async function main(argv: readonly string[]): Promise<number> {
  let options: SendCheckOptions;
  try {
    options = parseOptions(argv);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    if (error.message) console.error(`send-check: ${error.message}\n`);
    console.error(USAGE);
    return error.message ? EXIT_NO_VERDICT : EXIT_ALLOWED;
  }
  try {
    return printVerdict(await sendCheck(options));
  } catch (error) {
    const rpc = error as Partial<ServiceError> | null;
    const name = rpc?.code === undefined ? 'error' : `gRPC ${GrpcStatus[rpc.code] ?? rpc.code}`;
    console.error(`ERROR  ${name}: ${rpc?.details ?? rpc?.message ?? String(error)} (target ${options.target})`);
    return EXIT_NO_VERDICT;
  }
}

process.exitCode = await main(process.argv.slice(2));
