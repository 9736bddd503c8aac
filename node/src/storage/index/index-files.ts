/**
 * File housekeeping in the index directory: deleting the files of replaced tables, deleting the
 * whole durable index (reset after a log truncation), and removing leftovers of interrupted
 * writes at open. Only names this module owns are touched: `indexmap`, `<UUID>`,
 * `<UUID>.bloomfilter` and their `.tmp` siblings; subdirectories (stream-existence, scavenging)
 * are left alone.
 */

import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { BLOOM_FILE_SUFFIX } from './bloom-filter-file.js';
import { TEMP_FILE_SUFFIX, fsyncDirectory, removeFile } from './durable-file.js';
import { INDEX_MAP_FILE_NAME, isTableFileName, type IndexMap } from './index-map.js';

/** Deletes tables and their filters (after the indexmap no longer lists them). */
export async function removeTableFiles(directory: string, fileNames: string[]): Promise<void> {
  for (const fileName of fileNames) {
    await removeFile(join(directory, fileName));
    await removeFile(join(directory, `${fileName}${BLOOM_FILE_SUFFIX}`));
  }
  await fsyncDirectory(directory);
}

/** Deletes the indexmap first (durably), so a crash half-way leaves an empty index. */
export async function deleteIndexFiles(directory: string, fileNames: string[]): Promise<void> {
  await removeFile(join(directory, INDEX_MAP_FILE_NAME));
  await fsyncDirectory(directory);
  await removeTableFiles(directory, fileNames);
}

function isOwnedLeftover(name: string, referenced: ReadonlySet<string>): boolean {
  if (name.endsWith(TEMP_FILE_SUFFIX)) {
    const owner = name.slice(0, 36);
    return name.startsWith(`${INDEX_MAP_FILE_NAME}.`) || isTableFileName(owner);
  }
  const tableName = name.endsWith(BLOOM_FILE_SUFFIX)
    ? name.slice(0, -BLOOM_FILE_SUFFIX.length)
    : name;
  return isTableFileName(tableName) && !referenced.has(tableName);
}

/** Removes temporary files and tables the indexmap does not list (an interrupted flush/merge). */
export async function removeLeftoverFiles(
  directory: string,
  map: IndexMap,
  log: Logger,
): Promise<void> {
  const referenced = new Set(map.tables.map((table) => table.fileName));
  const entries = await readdir(directory, { withFileTypes: true });
  const leftovers = entries
    .filter((entry) => entry.isFile() && isOwnedLeftover(entry.name, referenced))
    .map((entry) => entry.name);
  if (leftovers.length === 0) return;
  for (const name of leftovers) await removeFile(join(directory, name));
  await fsyncDirectory(directory);
  log.info({ fileCount: leftovers.length }, 'index leftover files removed');
}
