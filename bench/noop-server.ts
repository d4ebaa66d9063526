import { Server, ServerCredentials } from '@grpc/grpc-js';
import { createServer, type AddressInfo } from 'node:net';
import pg from 'pg';
import { checkPolicies } from '../src/envoy/check-policies.js';
import { loadConfig } from '../src/config.js';
import { toCheckResponse } from '../src/envoy/check-response.js';
import { GRPC_LIMITS, grpcServerOptions } from '../src/envoy/grpc-server.js';
import { AUTHORIZATION_SERVICE, EncodedCheckResponse, encodeCheckResponse } from '../src/envoy/proto.js';
import type { Decision } from '../src/decision/types.js';
import { loadAllSites, type LoadedSites } from '../src/store/snapshot-loader.js';

/**
 * The benchmark's floor: a Check server on the same gRPC stack as `serve` (grpc-js with the same
 * server options, our proto/ loaded the same way, connections handed to grpc-js by our own TCP
 * listener as startGrpcServer does) whose Check answers one fixed allowed CheckResponse without
 * looking at the request. The response is the one `serve` sends for the bench's allowed request
 * (same policies from the same configuration), so both put the same bytes on the wire; and like
 * `serve`, it encodes that response once. Each request is decoded in full by proto-loader, as any
 * grpc-js service built on our proto/ decodes them; `serve`'s server reads only what its view reads
 * (src/envoy/check-request-reader.ts), which is part of what it does better than such a service.
 *
 * Usage: node dist/bench/noop-server.js <site id> <key id>, or <site id> --token-client <client id> for
 * the answer to a token of that client, or <site id> --wrong-key <masked key> for the 102 that a wrong
 * key of that site gets; prints {"port":N} once listening on 127.0.0.1.
 *
 * With HOLD_SNAPSHOT_DATABASE_URL, it first loads every site of that database as `serve`'s first full
 * load does and holds them until it exits, never reading them: the floor of a process that holds the
 * snapshot, whose collector marks and moves the same objects as `serve`'s (resync-stall.ts).
 */
const USAGE = 'usage: noop-server.js <site id> <key id> | <site id> --token-client <client id> | <site id> --wrong-key <masked key>';
const [siteId, second, third] = process.argv.slice(2);
if (!siteId || !second || (second.startsWith('--') && !third)) {
  console.error(USAGE);
  process.exit(2);
}

function decisionToAnswer(site: string, option: string, value: string | undefined): Decision {
  if (option === '--token-client') return { outcome: 'allow', method: 'token', siteId: site, clientId: value! };
  if (option === '--wrong-key') return { outcome: 'deny', denial: { errorId: 102, siteId: site, maskedKey: value! } };
  if (option.startsWith('--')) {
    console.error(`unknown option ${option}; ${USAGE}`);
    process.exit(2);
  }
  return { outcome: 'allow', method: 'api_key', siteId: site, keyId: option };
}

async function loadSnapshot(databaseUrl: string): Promise<LoadedSites> {
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 1 });
  try {
    return await loadAllSites(pool);
  } finally {
    await pool.end();
  }
}

const heldUrl = process.env.HOLD_SNAPSHOT_DATABASE_URL;
const heldSites = heldUrl ? await loadSnapshot(heldUrl) : undefined;
const config = loadConfig(process.env);
const response = new EncodedCheckResponse(encodeCheckResponse(toCheckResponse(decisionToAnswer(siteId, second, third), checkPolicies(config).allowedResponse)));

const server = new Server(grpcServerOptions(GRPC_LIMITS, config.maxBodyBytes));
server.addService(AUTHORIZATION_SERVICE, {
  Check: (_call: unknown, callback: (error: null, value: typeof response) => void) => callback(null, response),
});
const injector = server.createConnectionInjector(ServerCredentials.createInsecure());
const listener = createServer((socket) => injector.injectConnection(socket));
listener.listen(0, '127.0.0.1', () => {
  console.log(JSON.stringify({ port: (listener.address() as AddressInfo).port, ...(heldSites && { sitesHeld: heldSites.size }) }));
});
process.on('SIGTERM', () => {
  listener.close();
  server.forceShutdown();
  if (heldSites !== undefined) console.error(`held ${heldSites.size} sites until now`);
});
