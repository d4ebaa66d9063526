import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { describe, it } from 'node:test';
import { SETTINGS } from '../src/config.js';
import { PACKAGE_ROOT } from '../src/paths.js';

/** The README, the map and every document of docs/, by their paths from the repository's root. */
const DOCUMENTS = [
  'README.md',
  'ARCHITECTURE.md',
  ...readdirSync(join(PACKAGE_ROOT, 'docs')).filter((name) => name.endsWith('.md')).map((name) => `docs/${name}`),
];

function read(path: string): string {
  return readFileSync(join(PACKAGE_ROOT, path), 'utf8');
}

/** The text outside fenced code blocks: a `# comment` in a shell example is no heading, a `](` in code no link. */
function prose(markdown: string): string {
  return markdown.replace(/^```[^\n]*\n[\s\S]*?^```$/gm, '');
}

/** Headings as they read, without the Markdown of code spans. */
function headingsOf(markdown: string): string[] {
  return [...prose(markdown).matchAll(/^#{1,6} (.+)$/gm)].map(([, text = '']) => text.replaceAll('`', '').trim());
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens. */
function anchorOf(heading: string): string {
  return heading.toLowerCase().replace(/[^\p{L}\p{N} _-]/gu, '').replaceAll(' ', '-');
}

/** The configuration reference: its table is held to the settings the code reads. */
const CONFIGURATION = read('docs/configuration.md');

/** The rows of the table under "## Configuration": the variable of each. */
function configurationTableNames(markdown: string): string[] {
  const section = markdown.slice(markdown.indexOf('\n## Configuration\n'));
  const end = section.slice(1).search(/\n##? /);
  return [...section.slice(0, end).matchAll(/^\| `([A-Z][A-Z0-9_]*)` \|/gm)].map(([, name = '']) => name);
}

/** A link of one document: where it points, as written, and the file and anchor it resolves to. */
interface Link {
  readonly from: string;
  readonly target: string;
  readonly path: string;
  readonly anchor: string | undefined;
}

/** The relative links of a document (images too), each resolved from the document's own folder. */
function linksOf(document: string): Link[] {
  return [...prose(read(document)).matchAll(/\]\(([^)\s]+)\)/g)]
    .map(([, target = '']) => target)
    .filter((target) => !/^[a-z][a-z0-9+.-]*:/i.test(target))
    .map((target) => {
      const [file = '', anchor] = target.split('#');
      return { from: document, target, path: file === '' ? document : normalize(join(dirname(document), file)), anchor };
    });
}

/** Whether a link's file exists and, for a Markdown file, whether it has the heading its anchor names. */
function resolves(link: { readonly path: string; readonly anchor: string | undefined }): boolean {
  if (!existsSync(join(PACKAGE_ROOT, link.path))) return false;
  if (link.anchor === undefined) return true;
  if (!link.path.endsWith('.md')) return false;
  return headingsOf(read(link.path)).map(anchorOf).includes(link.anchor);
}

/**
 * Files that point readers at a section of the README or of a document in docs/ by name: the deployment
 * manifests, the image, the source, the tests, the benchmarks, the Makefile, the map and the documents.
 */
function filesThatCiteTheDocuments(): string[] {
  const roots = ['deploy', 'src', 'test', 'bench'].map((dir) => join(PACKAGE_ROOT, dir));
  const files = roots.flatMap((root) =>
    readdirSync(root, { recursive: true, withFileTypes: true })
      .filter((entry) => entry.isFile() && /\.(ya?ml|json|ts|env|sql|md)$/.test(entry.name))
      .map((entry) => join(entry.parentPath, entry.name)),
  );
  return [...files, ...['Dockerfile', 'Makefile', ...DOCUMENTS].map((file) => join(PACKAGE_ROOT, file))]
    .filter((file) => relative(PACKAGE_ROOT, file) !== join('test', 'readme.test.ts'));
}

/** A section named in a comment or a message: the document (README.md or docs/….md) and the section's name. */
export interface Citation {
  readonly document: string;
  readonly section: string;
}

const CITED_DOCUMENT = String.raw`(README(?:\.md)?|docs/[\w-]+\.md)`;

/**
 * `README "Section"`, `docs/operations.md, "Section"` (quotes escaped or not, across comment lines) and
 * `README, Section.`; a bare README is README.md.
 */
export function citedSections(text: string): Citation[] {
  const joined = text.replace(/\s*\n\s*(#|\/\/|\*)?\s*/g, ' ');
  const citation = ([, document = '', section = '']: RegExpMatchArray): Citation => ({
    document: document === 'README' ? 'README.md' : document,
    section,
  });
  return [
    ...[...joined.matchAll(new RegExp(String.raw`${CITED_DOCUMENT},? \\?"([^"\\]+)\\?"`, 'g'))].map(citation),
    ...[...joined.matchAll(new RegExp(String.raw`${CITED_DOCUMENT}, ([A-Z][\w -]*)\.`, 'g'))].map(citation),
  ];
}

/** `README.md#anchor` or `docs/….md#anchor` written in a file that is no Markdown, such as an alert's runbook. */
function anchoredReferences(text: string): Array<{ readonly path: string; readonly anchor: string }> {
  return [...text.matchAll(/(?<![\w/.-])((?:README|ARCHITECTURE|docs\/[\w-]+)\.md)#([\w-]+)/g)].map(([, path = '', anchor = '']) => ({ path, anchor }));
}

describe('the README and the documents of docs/ stay true', () => {
  it('has a row in the configuration table for each setting of the schema, and no other', () => {
    const rows = configurationTableNames(CONFIGURATION);
    assert.deepEqual(SETTINGS.map((setting) => setting.name).filter((name) => !rows.includes(name)), [], 'settings missing from the table');
    assert.deepEqual(rows.filter((name) => !SETTINGS.some((setting) => setting.name === name)), [], 'rows for no setting');
  });

  it("gives each setting whose default is a value that value, as SETTINGS writes it", () => {
    const cells = new Map([...CONFIGURATION.matchAll(/^\| `([A-Z][A-Z0-9_]*)` \| ([^|]*) \|/gm)].map(([, name = '', cell = '']) => [name, cell]));
    const differing = SETTINGS.filter((setting) => setting.default !== undefined && !(cells.get(setting.name) ?? '').startsWith(`\`${setting.default}\``));
    assert.deepEqual(differing.map((setting) => `${setting.name}: ${setting.default}`), []);
  });

  it('tells a missing setting (the check itself can fail)', () => {
    const without = CONFIGURATION.replace(/^\| `METRICS_SITE_LABELS_MAX` \|.*\n/m, '');
    assert.ok(!configurationTableNames(without).includes('METRICS_SITE_LABELS_MAX'));
    assert.ok(configurationTableNames(CONFIGURATION).includes('METRICS_SITE_LABELS_MAX'));
  });

  it('links only to files that exist and to sections they have', () => {
    const links = DOCUMENTS.flatMap(linksOf);
    assert.ok(links.filter((link) => link.anchor !== undefined && link.path !== link.from).length > 10, 'few links into other documents\' sections were found');
    assert.ok(links.filter((link) => link.anchor !== undefined && link.path === link.from).length > 10, 'few links into a document\'s own sections were found');
    assert.deepEqual(links.filter((link) => !resolves(link)).map((link) => `${link.from}: ${link.target}`), []);
  });

  it('lists every document of docs/ in the README, and leads without the reference text', () => {
    const linked = new Set(linksOf('README.md').map((link) => link.path));
    assert.deepEqual(DOCUMENTS.filter((document) => document.startsWith('docs/') && !linked.has(document)), []);
    assert.ok(read('README.md').split('\n').length <= 300, `the README has ${read('README.md').split('\n').length} lines`);
  });

  it('tells a link to a section that is not there (the check itself can fail)', () => {
    assert.equal(resolves({ path: 'docs/operations.md', anchor: 'metrics' }), true);
    assert.equal(resolves({ path: 'README.md', anchor: 'metrics' }), false);
    assert.equal(resolves({ path: 'docs/no-such-document.md', anchor: undefined }), false);
  });

  it('has every section that a manifest, the image, the source, a test or a document names', () => {
    const missing: string[] = [];
    let cited = 0;
    for (const file of filesThatCiteTheDocuments()) {
      const text = readFileSync(file, 'utf8');
      for (const { document, section } of citedSections(text)) {
        cited++;
        const headings = existsSync(join(PACKAGE_ROOT, document)) ? headingsOf(read(document)) : [];
        if (!headings.some((heading) => heading.startsWith(section))) missing.push(`${relative(PACKAGE_ROOT, file)}: ${document} "${section}"`);
      }
      for (const reference of anchoredReferences(text)) {
        cited++;
        if (!resolves(reference)) missing.push(`${relative(PACKAGE_ROOT, file)}: ${reference.path}#${reference.anchor}`);
      }
    }
    assert.ok(cited > 10, `only ${cited} citations found: the pattern no longer matches how files cite the documents`);
    assert.deepEqual(missing, []);
  });

  it('reads citations as the files write them', () => {
    assert.deepEqual(citedSections('# mesh config (istiod-values.yaml, README\n# "Deploying with Istio"), then'), [{ document: 'README.md', section: 'Deploying with Istio' }]);
    assert.deepEqual(citedSections('set it (README, \\"The API-key sunset\\").'), [{ document: 'README.md', section: 'The API-key sunset' }]);
    assert.deepEqual(citedSections('"description": "… See README, Operations."'), [{ document: 'README.md', section: 'Operations' }]);
    assert.deepEqual(citedSections('set it (docs/api-key-sunset.md, \\"The API-key sunset\\").'), [{ document: 'docs/api-key-sunset.md', section: 'The API-key sunset' }]);
    assert.deepEqual(citedSections('# Limits of the operator port (docs/operations.md,\n# "Limits"), stated once'), [{ document: 'docs/operations.md', section: 'Limits' }]);
    assert.deepEqual(citedSections('"description": "… See docs/operations.md, Operations."'), [{ document: 'docs/operations.md', section: 'Operations' }]);
    assert.deepEqual(anchoredReferences('runbook: docs/deployment.md#envoy'), [{ path: 'docs/deployment.md', anchor: 'envoy' }]);
  });
});
