import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, it } from 'node:test';
import { PACKAGE_ROOT } from '../src/paths.js';

/**
 * The rooms of the house, held by the import statements of src/: the transports (the CLI, the admin
 * API and its console) stand side by side over one operations layer and never import one another or
 * the service's wiring; the operations know no transport.
 */

const SRC = join(PACKAGE_ROOT, 'src');
// `import … from '…'`, `export … from '…'`, `import('…')` and bare `import '…'`.
const IMPORT = /(?:\bfrom\s*|\bimport\s*\(\s*|\bimport\s+)['"](\.{1,2}\/[^'"]+)['"]/g;
/** The CLI's `serve` command starts the service: the one way into its wiring from a transport. */
const ALLOWED = new Set(['src/cli/commands.ts -> src/serve/run-server.ts']);

interface Edge {
  readonly from: string;
  readonly to: string;
}

function sourceFiles(folder: string): string[] {
  return readdirSync(folder, { withFileTypes: true }).flatMap((entry) => {
    const path = join(folder, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return /\.(ts|js)$/.test(entry.name) && !entry.name.endsWith('.d.ts') ? [path] : [];
  });
}

/** Every relative import of src/, as paths from the package root, .js written as the .ts it is. */
export function importEdges(files: readonly string[]): Edge[] {
  return files.flatMap((file) =>
    [...readFileSync(file, 'utf8').matchAll(IMPORT)].map((match) => ({
      from: relative(PACKAGE_ROOT, file),
      to: relative(PACKAGE_ROOT, resolve(dirname(file), match[1] ?? '')).replace(/\.js$/, file.endsWith('.ts') ? '.ts' : '.js'),
    })),
  );
}

const inside = (path: string, folder: string) => path.startsWith(`${folder}/`);
const broken = (edges: readonly Edge[], from: string, to: string) =>
  edges.filter((edge) => inside(edge.from, from) && inside(edge.to, to) && !ALLOWED.has(`${edge.from} -> ${edge.to}`)).map((edge) => `${edge.from} -> ${edge.to}`);

describe('the import rules of src/', () => {
  const edges = importEdges(sourceFiles(SRC));

  it('reads the imports of the whole tree', () => {
    assert.ok(edges.length > 300, `only ${edges.length} imports found: this reader or the tree changed`);
    assert.ok(edges.some((edge) => edge.from === 'src/admin/site-routes.ts' && edge.to.startsWith('src/operations/')));
  });

  it('no module of the admin API or console imports the CLI', () => {
    assert.deepEqual(broken(edges, 'src/admin', 'src/cli'), []);
  });

  it('the CLI imports nothing of the admin API', () => {
    assert.deepEqual(broken(edges, 'src/cli', 'src/admin'), []);
  });

  it('neither the CLI nor the admin API imports the service wiring (src/serve/)', () => {
    assert.deepEqual([...broken(edges, 'src/admin', 'src/serve'), ...broken(edges, 'src/cli', 'src/serve')], []);
  });

  it('the operations know no transport and no wiring', () => {
    assert.deepEqual(['src/admin', 'src/cli', 'src/serve'].flatMap((folder) => broken(edges, 'src/operations', folder)), []);
  });

  it('the CLI is imported by nothing but itself', () => {
    assert.deepEqual(edges.filter((edge) => inside(edge.to, 'src/cli') && !inside(edge.from, 'src/cli')).map((edge) => `${edge.from} -> ${edge.to}`), []);
  });
});
