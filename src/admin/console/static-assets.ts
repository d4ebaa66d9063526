import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { ERROR_CATALOGUE } from '../../decision/error-catalogue.js';
import { PACKAGE_ROOT } from '../../paths.js';

/** Plain ES modules and styles, served as they are (no bundler, no build step). */
const CLIENT_DIR = join(PACKAGE_ROOT, 'src', 'admin', 'console', 'client');

/** htm's standalone module (Preact, hooks, htm) imports nothing: no import map, which the CSP refuses inline. */
const VENDOR_FILES: Readonly<Record<string, string>> = {
  'preact-htm.js': join(PACKAGE_ROOT, 'node_modules', 'htm', 'preact', 'standalone.module.js'),
  'pico.min.css': join(PACKAGE_ROOT, 'node_modules', '@picocss', 'pico', 'css', 'pico.min.css'),
};

const CONTENT_TYPES: Readonly<Record<string, string>> = {
  js: 'text/javascript; charset=utf-8',
  json: 'application/json',
  css: 'text/css; charset=utf-8',
  svg: 'image/svg+xml',
};

export interface StaticAsset {
  readonly body: Buffer;
  readonly contentType: string;
}

/** Read once at start: a name not in it is a 404, so no path is ever joined from a request. */
export function loadStaticAssets(): ReadonlyMap<string, StaticAsset> {
  const assets = new Map<string, StaticAsset>();
  const add = (name: string, file: string) => {
    const contentType = CONTENT_TYPES[name.slice(name.lastIndexOf('.') + 1)];
    if (contentType !== undefined) assets.set(name, { body: readFileSync(file), contentType });
  };
  for (const entry of readdirSync(CLIENT_DIR, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile()) continue;
    const file = join(entry.parentPath, entry.name);
    add(relative(CLIENT_DIR, file).split('\\').join('/'), file);
  }
  for (const [name, file] of Object.entries(VENDOR_FILES)) add(name, file);
  // The denial report names each error id's code from the one catalogue, not from a copy in the page.
  const codes = Object.fromEntries(Object.entries(ERROR_CATALOGUE).map(([id, entry]) => [id, entry.code]));
  assets.set('error-codes.json', { body: Buffer.from(JSON.stringify(codes)), contentType: 'application/json' });
  return assets;
}
