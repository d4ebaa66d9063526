import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { PACKAGE_ROOT } from '../src/paths.js';

const MAP = readFileSync(join(PACKAGE_ROOT, 'ARCHITECTURE.md'), 'utf8');

/** Every path the map names: `src/…`, `test/…`, `bench/…`, `deploy/…`, and a folder's files by their bare names in its row. */
function namedPaths(): string[] {
  const paths = new Set<string>();
  for (const match of MAP.matchAll(/\b((?:src|test|bench|deploy)\/[\w./-]*[\w/])/g)) paths.add(match[1] ?? '');
  for (const row of MAP.split('\n').filter((line) => line.startsWith('| `src/'))) {
    const folder = /^\| `(src\/[\w-]+\/)`/.exec(row)?.[1];
    if (folder === undefined) continue;
    for (const file of row.matchAll(/`([\w-]+\.ts)`/g)) paths.add(`${folder}${file[1]}`);
  }
  return [...paths];
}

describe('ARCHITECTURE.md', () => {
  it('names only files and folders that exist', () => {
    const named = namedPaths();
    assert.ok(named.length > 40, `only ${named.length} paths found: the map or this reader changed`);
    assert.deepEqual(named.filter((path) => !existsSync(join(PACKAGE_ROOT, path))), []);
  });

  it('stays short enough to read first', () => {
    assert.ok(MAP.split('\n').length <= 150, `${MAP.split('\n').length} lines`);
  });
});
