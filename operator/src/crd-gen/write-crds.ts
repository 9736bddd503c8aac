/**
 * `make crds`: writes crds/*.yaml from the API's zod schemas, and removes generated CRD files
 * of kinds that no longer exist. Run from the repository root after `make build`:
 * `node dist/operator/src/crd-gen/write-crds.js [directory]`.
 */
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { GENERATED_HEADER, renderCrdFiles } from './crd-files.js';

function main(): void {
  const directory = path.resolve(process.argv[2] ?? 'crds');
  mkdirSync(directory, { recursive: true });
  const files = renderCrdFiles();
  for (const existing of readdirSync(directory)) {
    if (!existing.endsWith('.yaml') || files.has(existing)) continue;
    const text = readFileSync(path.join(directory, existing), 'utf8');
    if (text.startsWith(GENERATED_HEADER)) rmSync(path.join(directory, existing));
  }
  for (const [fileName, text] of files) {
    writeFileSync(path.join(directory, fileName), text);
    process.stdout.write(`wrote ${path.relative(process.cwd(), path.join(directory, fileName))}\n`);
  }
}

main();
