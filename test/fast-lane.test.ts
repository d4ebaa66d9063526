import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, it } from 'node:test';
import { PACKAGE_ROOT } from '../src/paths.js';

const TEST_ROOT = join(PACKAGE_ROOT, 'test');

// What starts a process, a database, a server or a connection, imported for its value (a type is free).
const STARTERS = [
  /^node:(child_process|cluster|worker_threads|dgram)$/,
  /^pg$/,
  /\/embedded\/embedded-postgres\.js$/,
  /\/support\/(database|service|console-stack|console-browser|oidc-issuer|issuer-process|tls-gateway|check-gateway|check-load|throttling-proxy)\.js$/,
];
const IMPORT = /^import\s+(type\s+)?([\s\S]*?)\s+from\s+'([^']+)';/gm;
// Servers and connections of node's own modules, by name.
const NETWORK_CALLS = /\b(createServer|createSecureServer|connect|request|get)\b/;

/** The fast lane's test files: every *.test.ts under test/ but test/integration/. */
function fastLaneFiles(): string[] {
  return readdirSync(TEST_ROOT, { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith('.test.ts') && !file.startsWith('integration/'))
    .map((file) => join(TEST_ROOT, file));
}

describe('the fast lane (make test-unit)', () => {
  it('starts no process, database, server or connection: such a test belongs in test/integration/', () => {
    const offenders: string[] = [];
    for (const file of fastLaneFiles()) {
      const source = readFileSync(file, 'utf8');
      for (const [, typeOnly, names = '', from = ''] of source.matchAll(IMPORT)) {
        if (typeOnly !== undefined) continue;
        const starts = STARTERS.some((pattern) => pattern.test(from));
        const network = /^node:(net|http|https|http2|tls)$/.test(from) && NETWORK_CALLS.test(names);
        const kustomize = from.endsWith('/manifests.js') && /\b(findKustomize|render)\b/.test(names);
        if (starts || network || kustomize) offenders.push(`${relative(PACKAGE_ROOT, file)} imports ${names.replace(/\s+/g, ' ')} from ${from}`);
      }
    }
    assert.ok(fastLaneFiles().length > 50, 'the reader of test files found too few: it or the tree changed');
    assert.deepEqual(offenders, []);
  });
});
