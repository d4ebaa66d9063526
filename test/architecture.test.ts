import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { PACKAGE_ROOT } from '../src/paths.js';

const MAP = readFileSync(join(PACKAGE_ROOT, 'ARCHITECTURE.md'), 'utf8');
/** Where the map stops being read first and lists every file, a table per folder. */
const EVERY_FILE = '\n## Every file, folder by folder\n';

/** A folder's heading in the map: "### `src/store/`: …"; its table's rows name the folder's files by their bare names. */
const FOLDER_HEADING = /^#{2,4} `((?:src|test|bench|docs|deploy)\/(?:[\w-]+\/)*)`/;

/** Every path the map names: `src/…`, `test/…`, `bench/…`, `docs/…`, `deploy/…` written out, and each file in the first column of its folder's table. */
function namedPaths(map: string): string[] {
  const paths = new Set<string>();
  for (const match of map.matchAll(/\b((?:src|test|bench|deploy|docs)\/[\w./-]*[\w/])/g)) paths.add(match[1] ?? '');
  let folder: string | undefined;
  for (const line of map.split('\n')) {
    if (line.startsWith('#')) folder = FOLDER_HEADING.exec(line)?.[1];
    const firstCell = /^\| ([^|]+) \|/.exec(line)?.[1];
    if (folder === undefined || firstCell === undefined) continue;
    for (const file of firstCell.matchAll(/`([\w.-]+\.\w+)`/g)) paths.add(`${folder}${file[1]}`);
  }
  return [...paths];
}

/** The files under a folder of the repository, by their paths from its root. */
function filesUnder(folder: string): string[] {
  return readdirSync(join(PACKAGE_ROOT, folder), { recursive: true, encoding: 'utf8' })
    .map((file) => `${folder}/${file}`)
    .filter((path) => statSync(join(PACKAGE_ROOT, path)).isFile());
}

/** The source files of src/ (TypeScript, and the console's browser modules) with their text. */
const SOURCES = filesUnder('src')
  .filter((path) => /\.(ts|js)$/.test(path))
  .map((path) => ({ path, text: readFileSync(join(PACKAGE_ROOT, path), 'utf8') }));

/** Code without its comments: a rule's home is where code states it, whatever comments elsewhere say about it. */
function code(text: string): string {
  return text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:\\])\/\/.*$/gm, '$1');
}

describe('ARCHITECTURE.md', () => {
  const named = namedPaths(MAP);

  it('names only files and folders that exist', () => {
    assert.ok(named.length > 200, `only ${named.length} paths found: the map or this reader changed`);
    assert.deepEqual(named.filter((path) => !existsSync(join(PACKAGE_ROOT, path))), []);
  });

  it('names every file of src/, so that a newcomer finds each from the map alone', () => {
    const files = filesUnder('src');
    assert.ok(files.length > 150, `only ${files.length} files of src/ read`);
    assert.deepEqual(files.filter((path) => !named.includes(path)), [], 'files of src/ the map names nowhere: give each a row in its folder\'s table');
  });

  it('names every document of docs/', () => {
    const documents = filesUnder('docs').filter((path) => path.endsWith('.md'));
    assert.ok(documents.length > 5, `only ${documents.length} documents of docs/ read`);
    assert.deepEqual(documents.filter((path) => !named.includes(path)), []);
  });

  it('tells a file named nowhere (the check itself can fail)', () => {
    const row = /^\| `bounded-map\.ts` \|.*\n/m;
    assert.match(MAP, row);
    assert.ok(!namedPaths(MAP.replace(row, '')).includes('src/common/bounded-map.ts'));
    assert.ok(named.includes('src/common/bounded-map.ts'));
  });

  it('is not needed to read the code: no file of src/ cites an issue (applied migrations are never edited)', () => {
    assert.ok(SOURCES.length > 100, `only ${SOURCES.length} files of src/ read`);
    const citing = SOURCES.filter(({ text }) => /\b[Ii]ssues? #\d+|\(#\d+\)|\bIssues? \d+/.test(text)).map(({ path }) => path);
    assert.deepEqual(citing, []);
  });

  it('stays short enough to read first, and lists each file in one short line', () => {
    const start = MAP.indexOf(EVERY_FILE);
    assert.ok(start > 0, `the map has no "${EVERY_FILE.trim()}"`);
    const readFirst = MAP.slice(0, start).split('\n').length;
    assert.ok(readFirst <= 150, `${readFirst} lines before the list of every file`);
    const longRows = MAP.slice(start)
      .split('\n')
      .filter((line) => /^\| `/.test(line) && line.length > 160);
    assert.deepEqual(longRows, [], 'a file\'s row says what it does in one short line');
  });
});

describe('one home per rule', () => {
  it('the positive-id pattern (site, key, brownout and cursor ids within bigint) and its bound live in src/common/positive-id.ts alone', () => {
    const homes = SOURCES.filter(({ text }) => /\[1-9\](?:\[0-9\]|\\d)\{0,18\}|9_?223_?372_?036_?854_?775_?80[78]/.test(code(text))).map(({ path }) => path);
    assert.deepEqual(homes, ['src/common/positive-id.ts']);
  });

  it('the IPv4-mapped /96 rule lives in src/allowlist/ alone, its prefix written once in client-ip.ts', () => {
    const outside = SOURCES.filter(({ path, text }) => !path.startsWith('src/allowlist/') && /::ffff:0:0|\/96\b/i.test(text)).map(({ path }) => path);
    assert.deepEqual(outside, [], 'name IPV4_MAPPED of src/allowlist/client-ip.ts instead');
    const prefix = SOURCES.filter(({ path, text }) => path.startsWith('src/allowlist/') && /\b96\b/.test(code(text))).map(({ path }) => path);
    assert.deepEqual(prefix, ['src/allowlist/client-ip.ts']);
  });
});
