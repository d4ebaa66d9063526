import { freePort } from '../../src/embedded/embedded-postgres.js';
import { startAdminIssuer, type AdminIssuer, type AdminPerson } from './admin-issuer.js';
import { startService, type RunningService } from './service.js';

/** The real service with its admin port and console, signed in through a real provider on loopback. */
export interface ConsoleStack {
  readonly issuer: AdminIssuer;
  readonly service: RunningService;
  /** ADMIN_PUBLIC_URL: http://127.0.0.1:<ADMIN_PORT>. */
  readonly consoleBase: string;
  close(): Promise<void>;
}

/** `people`: who may sign in besides ADMIN_PEOPLE (AdminIssuerOptions.people). */
export async function startConsoleStack(databaseUrl: string, env: Record<string, string> = {}, people: readonly AdminPerson[] = []): Promise<ConsoleStack> {
  const adminPort = await freePort();
  const consoleBase = `http://127.0.0.1:${adminPort}`;
  const issuer = await startAdminIssuer({ redirectUris: [`${consoleBase}/auth/callback`], postLogoutRedirectUris: [`${consoleBase}/auth/signed-out`], people });
  let service: RunningService;
  try {
    service = await startService({
      DATABASE_URL: databaseUrl,
      ...issuer.env(),
      ADMIN_PORT: String(adminPort),
      ADMIN_PUBLIC_URL: consoleBase,
      ADMIN_OIDC_CLIENT_ID: issuer.clientId,
      ...env,
    });
  } catch (error) {
    await issuer.close();
    throw error;
  }
  return {
    issuer,
    service,
    consoleBase,
    close: async () => {
      await service.stop();
      await issuer.close();
    },
  };
}
