import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
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

  it('is not needed to read the code: no file of src/ cites an issue (applied migrations are never edited)', () => {
    const files = readdirSync(join(PACKAGE_ROOT, 'src'), { recursive: true, encoding: 'utf8' }).filter((file) => /\.(ts|js)$/.test(file));
    assert.ok(files.length > 100, `only ${files.length} files of src/ read`);
    const citing = files.filter((file) => /\b[Ii]ssues? #\d+|\(#\d+\)|\bIssues? \d+/.test(readFileSync(join(PACKAGE_ROOT, 'src', file), 'utf8')));
    assert.deepEqual(citing, []);
  });

  it('stays short enough to read first', () => {
    assert.ok(MAP.split('\n').length <= 150, `${MAP.split('\n').length} lines`);
  });
});
