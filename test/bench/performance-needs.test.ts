import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { PACKAGE_ROOT } from '../../src/paths.js';

const read = (path: string) => readFileSync(join(PACKAGE_ROOT, path), 'utf8');
const guide = read('docs/performance.md');
const needsAt = guide.indexOf('## What a pod must hold');
const needs = guide.slice(needsAt, guide.indexOf('\n## ', needsAt + 1));

describe('docs/performance.md: each need names a row make bench prints', () => {
  it('names, for each pure-Node row it quotes, words that benchmark prints', () => {
    // `resync-stall.js` "the tail during full resyncs, …": the words up to the first figure, which the source computes.
    const quoted = [...needs.matchAll(/`([\w-]+)\.js`\s+"([^"]+)"/g)];
    assert.ok(quoted.length >= 4, 'the section quotes the rows that measure the sites, memory, start-up and the resync tail');
    for (const [, benchmark, row] of quoted) {
      const words = /^[^\d]*/.exec(row!.replace(/\s+/g, ' '))![0];
      assert.ok(words.length >= 8, `"${row}" starts with a figure: quote the words before it`);
      assert.ok(read(`bench/${benchmark}.ts`).includes(words), `bench/${benchmark}.ts prints no "${words}"`);
    }
  });

  it('lists every row of the abuse run in its table', () => {
    const rows = /const ROWS = \[([^\]]*)\]/.exec(read('bench/abuse.ts'))?.[1];
    assert.ok(rows, 'bench/abuse.ts declares its ROWS');
    for (const [, name] of rows.matchAll(/'([\w-]+)'/g)) assert.match(needs, new RegExp(`^\\| \`${name}\` \\|`, 'm'), `the abuse row ${name} is missing`);
  });
});
