import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { freshDatabase, type TestDatabase } from '../support/database.js';
import { CLI } from '../support/service.js';
import { freePorts } from '../../src/embedded/embedded-postgres.js';

/** Issue #9: a reachable database without our tables is named as such, with the command that fixes it. */
describe('serve on a database that was never migrated', () => {
  let database: TestDatabase;

  before(async () => {
    database = await freshDatabase({ migrated: false });
  });

  after(async () => {
    await database?.drop();
  });

  it('says the tables are missing and how to create them, instead of "unreachable"', async () => {
    const [grpcPort, metricsPort] = await freePorts(2);
    const child = spawn(process.execPath, [CLI, 'serve'], {
      env: {
        PATH: process.env.PATH ?? '',
        DATABASE_URL: database.url,
        MIGRATE_ON_START: 'false',
        GRPC_PORT: String(grpcPort),
        METRICS_PORT: String(metricsPort),
        BIND_ADDRESS: '127.0.0.1',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    try {
      const deadline = Date.now() + 15_000;
      while (!output.includes('sitekey-authz migrate') && Date.now() < deadline && child.exitCode === null) await sleep(100);
      const line = output.split('\n').find((text) => text.includes('sitekey-authz migrate'));
      assert.ok(line, `no line names the migrate command:\n${output}`);
      assert.match(line, /no sitekey-authz tables/);
      assert.match(line, /MIGRATE_ON_START=true/);
      assert.doesNotMatch(line, /unreachable/);
    } finally {
      child.kill('SIGTERM');
      await new Promise((resolveExit) => (child.exitCode === null ? child.once('exit', resolveExit) : resolveExit(undefined)));
    }
  });
});
