import * as grpc from '@grpc/grpc-js';
import { service as healthService } from 'grpc-health-check';

/** A grpc.health.v1.Health client, as Envoy's and Kubernetes' gRPC health checks use it. */
export type HealthClient = grpc.Client & {
  Check(request: { service: string }, callback: (error: grpc.ServiceError | null, response: { status: string }) => void): void;
};

export function healthClient(target: string): HealthClient {
  const Health = grpc.makeGenericClientConstructor(healthService as grpc.ServiceDefinition, 'Health');
  return new Health(target, grpc.credentials.createInsecure()) as unknown as HealthClient;
}

export function healthOf(client: HealthClient, service: string): Promise<string> {
  return new Promise((resolveStatus, reject) =>
    client.Check({ service }, (error, response) => (error ? reject(error) : resolveStatus(response.status))),
  );
}
