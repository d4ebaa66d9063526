import * as grpc from '@grpc/grpc-js';
import { service as healthService } from 'grpc-health-check';

/** A grpc.health.v1.Health client, as Envoy's and Kubernetes' gRPC health checks use it. */
export type HealthClient = grpc.Client & {
  Check(
    request: { service: string },
    options: grpc.CallOptions,
    callback: (error: grpc.ServiceError | null, response: { status: string }) => void,
  ): void;
};

export function healthClient(target: string, credentials = grpc.credentials.createInsecure()): HealthClient {
  const Health = grpc.makeGenericClientConstructor(healthService as grpc.ServiceDefinition, 'Health');
  return new Health(target, credentials) as unknown as HealthClient;
}

/** The status, or a failure within 5 s: a server that is not there must fail a test, not hang it. */
export function healthOf(client: HealthClient, service: string): Promise<string> {
  return new Promise((resolveStatus, reject) =>
    client.Check({ service }, { deadline: Date.now() + 5_000 }, (error, response) => (error ? reject(error) : resolveStatus(response.status))),
  );
}
