import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, it } from 'node:test';
import { SETTINGS } from '../src/config.js';
import { PACKAGE_ROOT } from '../src/paths.js';

const README = readFileSync(join(PACKAGE_ROOT, 'README.md'), 'utf8');

/** Headings as they read, without the Markdown of code spans. */
const HEADINGS = [...README.matchAll(/^#{1,6} (.+)$/gm)].map(([, text = '']) => text.replaceAll('`', '').trim());

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens. */
function anchorOf(heading: string): string {
  return heading.toLowerCase().replace(/[^\p{L}\p{N} _-]/gu, '').replaceAll(' ', '-');
}

/** The rows of the table under "## Configuration": the variable of each. */
function configurationTableNames(readme: string): string[] {
  const section = readme.slice(readme.indexOf('\n## Configuration\n'));
  const end = section.slice(1).search(/\n##? /);
  return [...section.slice(0, end).matchAll(/^\| `([A-Z][A-Z0-9_]*)` \|/gm)].map(([, name = '']) => name);
}

/** Files that point readers at a README section by name: the deployment manifests, the image, the source. */
function filesThatCiteTheReadme(): string[] {
  const roots = ['deploy', 'src'].map((dir) => join(PACKAGE_ROOT, dir));
  const files = roots.flatMap((root) =>
    readdirSync(root, { recursive: true, withFileTypes: true })
      .filter((entry) => entry.isFile() && /\.(ya?ml|json|ts|env|sql)$/.test(entry.name))
      .map((entry) => join(entry.parentPath, entry.name)),
  );
  return [...files, join(PACKAGE_ROOT, 'Dockerfile')];
}

/** `README "Section"`, `README, "Section"` (quotes escaped or not, across comment lines) and `README, Section.` */
export function citedSections(text: string): string[] {
  const joined = text.replace(/\s*\n\s*(#|\/\/|\*)?\s*/g, ' ');
  return [
    ...[...joined.matchAll(/README,? \\?"([^"\\]+)\\?"/g)].map(([, name = '']) => name),
    ...[...joined.matchAll(/README, ([A-Z][\w -]*)\./g)].map(([, name = '']) => name),
  ];
}

describe('the README stays true', () => {
  it('has a row in its configuration table for each setting of the schema, and no other', () => {
    const rows = configurationTableNames(README);
    assert.deepEqual(SETTINGS.map((setting) => setting.name).filter((name) => !rows.includes(name)), [], 'settings missing from the table');
    assert.deepEqual(rows.filter((name) => !SETTINGS.some((setting) => setting.name === name)), [], 'rows for no setting');
  });

  it('tells a missing setting (the check itself can fail)', () => {
    const without = README.replace(/^\| `METRICS_SITE_LABELS_MAX` \|.*\n/m, '');
    assert.ok(!configurationTableNames(without).includes('METRICS_SITE_LABELS_MAX'));
    assert.ok(configurationTableNames(README).includes('METRICS_SITE_LABELS_MAX'));
  });

  it('links only to sections it has', () => {
    const anchors = new Set(HEADINGS.map(anchorOf));
    const links = [...README.matchAll(/\]\(#([^)]+)\)/g)].map(([, anchor = '']) => anchor);
    assert.ok(links.length > 10);
    assert.deepEqual(links.filter((anchor) => !anchors.has(anchor)), []);
  });

  it('has every section that a manifest, the image or the source names', () => {
    const missing: string[] = [];
    let cited = 0;
    for (const file of filesThatCiteTheReadme()) {
      for (const section of citedSections(readFileSync(file, 'utf8'))) {
        cited++;
        if (!HEADINGS.some((heading) => heading.startsWith(section))) missing.push(`${relative(PACKAGE_ROOT, file)}: "${section}"`);
      }
    }
    assert.ok(cited > 10, `only ${cited} citations found: the pattern no longer matches how files cite the README`);
    assert.deepEqual(missing, []);
  });

  it('reads citations as the files write them', () => {
    assert.deepEqual(citedSections('# mesh config (istiod-values.yaml, README\n# "Deploying with Istio"), then'), ['Deploying with Istio']);
    assert.deepEqual(citedSections('set it (README, \\"The API-key sunset\\").'), ['The API-key sunset']);
    assert.deepEqual(citedSections('"description": "… See README, Operations."'), ['Operations']);
  });
});
