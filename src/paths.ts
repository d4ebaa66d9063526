import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The first folder from `start` up to the root for which `found` holds. */
export function findUp(start: string, found: (dir: string) => boolean): string | undefined {
  for (let dir = start; ; dir = dirname(dir)) {
    if (found(dir)) return dir;
    if (dirname(dir) === dir) return undefined;
  }
}

function findPackageRoot(start: string): string {
  const root = findUp(start, (dir) => existsSync(join(dir, 'package.json')));
  if (root === undefined) throw new Error(`package.json not found above ${start}`);
  return root;
}

/** The repository root, whether running from src/ through a loader or from dist/. */
export const PACKAGE_ROOT = findPackageRoot(dirname(fileURLToPath(import.meta.url)));
export const PROTO_DIR = join(PACKAGE_ROOT, 'proto');
export const MIGRATIONS_DIR = join(PACKAGE_ROOT, 'src', 'store', 'migrations');
