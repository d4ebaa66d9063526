import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

function findPackageRoot(start: string): string {
  let dir = start;
  while (!existsSync(join(dir, 'package.json'))) {
    const parent = dirname(dir);
    if (parent === dir) throw new Error(`package.json not found above ${start}`);
    dir = parent;
  }
  return dir;
}

/** The repository root, whether running from src/ through a loader or from dist/. */
export const PACKAGE_ROOT = findPackageRoot(dirname(fileURLToPath(import.meta.url)));
export const PROTO_DIR = join(PACKAGE_ROOT, 'proto');
export const MIGRATIONS_DIR = join(PACKAGE_ROOT, 'src', 'store', 'migrations');
