import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { notTheImageNode } from '../../bench/image-node.js';
import { HISTORY_HEADING, historyRow, parseResults, recordRun, renderResults } from '../../bench/results-file.js';

const benchSection = (when: string, percent: number) => [
  `## ${when} — \`make bench\`: serve beside a no-op under h2load; 2 cores, Node v26.10.0`,
  '',
  `**Headline: one \`serve\` process answers ${percent} % of the no-op's checks per second** (13,085 against 13,491 req/s, medians of 9 runs); **refusing a wrong key (102), 95 %** (15,264 against 16,099 req/s).`,
  '',
  '| round | pair | serve req/s |',
  '|---|---|---|',
  '| 1 | 1 | 13,603 |',
];
const soakSection = ['## 2026-11-23 18:23Z — `make soak`: serve at half of saturation for 600 s; 2 cores, Node v20.20.2', '', '**RSS flat:** 1.1 % above (flat: at most 5 % above).'];

describe('bench/RESULTS.md: the latest run of each command in full, a headline row for every run', () => {
  it('makes a run\'s row from its heading and headline, without the raw rates, keeping what names a figure', () => {
    assert.equal(
      historyRow(benchSection('2026-11-29 06:00Z', 97), 'abc1234'),
      "| 2026-11-29 06:00Z | abc1234 | v26.10.0 | `make bench` | one `serve` process answers 97 % of the no-op's checks per second; refusing a wrong key (102), 95 %. |",
    );
    assert.equal(historyRow(['## Notes on something'], 'abc1234'), undefined);
  });

  it('puts a run on another Node than the image\'s in the table with its Node and its headline', () => {
    const [heading, blank, ...rest] = benchSection('2026-11-29 06:00Z', 97);
    const onNode20 = [heading!.replace('v26.10.0', 'v20.20.2'), blank!, ...notTheImageNode('v20.20.2', 26), ...rest];
    assert.equal(
      historyRow(onNode20, 'abc1234'),
      "| 2026-11-29 06:00Z | abc1234 | v20.20.2 | `make bench` | one `serve` process answers 97 % of the no-op's checks per second; refusing a wrong key (102), 95 %. |",
    );
  });

  it('replaces the latest section of the same command, keeps the other command\'s, and puts the new row first', async () => {
    const intro = '# Benchmark results\n\nIntro.\n\n';
    const before = renderResults(intro, [benchSection('2026-11-28 06:00Z', 90), soakSection], ['| 2026-11-28 06:00Z | old | v26.10.0 | `make bench` | old headline |']);
    const parsed = parseResults(before);
    assert.equal(parsed.intro, intro);
    assert.deepEqual(parsed.latest.map((section) => section[0]), [benchSection('2026-11-28 06:00Z', 90)[0], soakSection[0]]);
    assert.deepEqual(parsed.history, ['| 2026-11-28 06:00Z | old | v26.10.0 | `make bench` | old headline |']);

    const next = benchSection('2026-11-29 06:00Z', 97);
    const folder = await mkdtemp(join(tmpdir(), 'results-'));
    const file = join(folder, 'RESULTS.md');
    await writeFile(file, before);
    await recordRun(next, 'new', file);
    const after = await readFile(file, 'utf8');
    await rm(folder, { recursive: true });
    const reparsed = parseResults(after);
    assert.deepEqual(reparsed.latest.map((section) => section[0]), [next[0], soakSection[0]]);
    assert.equal(reparsed.history.length, 2);
    assert.match(reparsed.history[0] ?? '', /^\| 2026-11-29 06:00Z \| new \|/);
    assert.equal(after.split(HISTORY_HEADING).length, 2, 'one history table');
  });
});
