import { startGrpcServer } from '../src/envoy/grpc-server.js';
import { benchCheckDeps } from './check-path.js';

/**
 * `node dist/bench/handler-server.js <partner key>`: check-path's Check handler (10,000 sites, serve's
 * observers) behind serve's own gRPC server on 127.0.0.1; prints {"port":N} once listening.
 * handler-variants.ts runs two of them with different Node options.
 */
const [partnerKey] = process.argv.slice(2);
if (!partnerKey) {
  console.error('usage: handler-server.js <partner key>');
  process.exit(2);
}
const { deps, close } = await benchCheckDeps(partnerKey);
const server = await startGrpcServer({
  bindAddress: '127.0.0.1',
  port: 0,
  authorization: deps,
  logger: deps.logger,
  maxBodyBytes: deps.maxBodyBytes,
  maxConnections: 1_000,
});
console.log(JSON.stringify({ port: server.port }));
process.on('SIGTERM', () => {
  void server.shutdown(0).then(close);
});
