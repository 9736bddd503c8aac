/**
 * The text of every generated file under crds/. Pure, so the "committed CRDs are current" test
 * and the writer (write-crds.ts) produce byte-identical output.
 */
import { stringify } from 'yaml';
import { buildCrds } from './crd-definitions.js';

export const GENERATED_HEADER =
  '# Generated from operator/src/api by operator/src/crd-gen: do not edit. `make crds` regenerates.\n';

export function renderYaml(document: unknown): string {
  return stringify(document, { lineWidth: 0, aliasDuplicateObjects: false });
}

export function renderCrdFiles(): Map<string, string> {
  const files = new Map<string, string>();
  for (const { fileName, crd } of buildCrds()) files.set(fileName, GENERATED_HEADER + renderYaml(crd));
  return files;
}
