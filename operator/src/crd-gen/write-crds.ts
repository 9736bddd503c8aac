/**
 * `make crds`: writes crds/*.yaml from the API's zod schemas, and the chart's copies
 * (charts/eventdb-operator/files/crds/), and removes generated CRD files of kinds that no longer
 * exist. Run from the repository root after `make build`:
 * `node dist/operator/src/crd-gen/write-crds.js [directory...]`.
 */
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { GENERATED_HEADER, renderCrdFiles } from './crd-files.js';

export const CRD_DIRECTORIES = ['crds', 'charts/eventdb-operator/files/crds'];

function main(): void {
  const directories = process.argv.length > 2 ? process.argv.slice(2) : CRD_DIRECTORIES;
  for (const directory of directories) writeDirectory(path.resolve(directory));
}

function writeDirectory(directory: string): void {
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
