import { spawn } from 'node:child_process';
import { freePort } from '../../src/embedded/embedded-postgres.js';
import { CLI } from './service.js';

/**
 * `sitekey-authz issuer` as a user runs it (`make issuer`): a child process on a free loopback port,
 * read from its start banner the way a user copies it (the settings to give serve).
 */

export interface IssuerProcess {
  /** TOKEN_ISSUER, TOKEN_AUDIENCE and, when the banner prints its value, TOKEN_REGISTRATION_TOKEN. */
  readonly serveEnv: Record<string, string>;
  /** The issuer identifier (TOKEN_ISSUER). */
  readonly url: string;
  readonly tokenEndpoint: string;
  readonly port: number;
  /** Everything it wrote to stdout and stderr so far. */
  output(): string;
  /** SIGTERM, then the exit code. */
  stop(): Promise<number | null>;
}

const BANNER_SETTINGS = /^ {2}(TOKEN_ISSUER=\S+ TOKEN_AUDIENCE=\S+ TOKEN_REGISTRATION_TOKEN=.+)$/m;
const TOKEN_ENDPOINT = /^ {2}token endpoint +(\S+)$/m;

export async function startIssuerProcess(env: Record<string, string>, options: { readonly port?: number; readonly args?: readonly string[] } = {}): Promise<IssuerProcess> {
  const port = options.port ?? (await freePort());
  const child = spawn(process.execPath, [CLI, 'issuer', ...(options.args ?? [])], {
    env: { PATH: process.env.PATH ?? '', LOG_LEVEL: 'info', BIND_ADDRESS: '127.0.0.1', ISSUER_PORT: String(port), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const exited = new Promise<number | null>((resolveExit) => child.on('exit', (code) => resolveExit(code)));
  const banner = new Promise<{ settings: string; tokenEndpoint: string }>((resolveBanner, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`the issuer printed no start banner within 30 s:\n${output}`));
    }, 30_000);
    const read = (chunk: Buffer) => {
      output += chunk.toString();
      const settings = BANNER_SETTINGS.exec(output)?.[1];
      const tokenEndpoint = TOKEN_ENDPOINT.exec(output)?.[1];
      if (settings !== undefined && tokenEndpoint !== undefined) {
        clearTimeout(timer);
        resolveBanner({ settings, tokenEndpoint });
      }
    };
    child.stdout.on('data', read);
    child.stderr.on('data', read);
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`the issuer exited with ${code}:\n${output}`));
    });
  });
  const { settings, tokenEndpoint } = await banner;
  // A value in <angle brackets> is a placeholder, not a value to copy (the token on a later start).
  const serveEnv = Object.fromEntries([...settings.matchAll(/(TOKEN_[A-Z_]+)=([^<\s]\S*)/g)].map(([, name, value]) => [name as string, value as string]));
  return {
    serveEnv,
    url: serveEnv.TOKEN_ISSUER as string,
    tokenEndpoint,
    port,
    output: () => output,
    stop: async () => {
      if (child.exitCode === null) child.kill('SIGTERM');
      return exited;
    },
  };
}
