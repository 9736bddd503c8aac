/**
 * A node's identity for backups: a UUID in `<db>/eventdb.node-id`, made by the first backup of
 * the directory (the node itself never reads it). Every backup records it; a differential backup
 * into a backup of another identity is refused (spec rule 2: never mix backup files of different
 * nodes). A restore gives the restored directories a NEW identity that names where it came from,
 * so a differential backup of a restored node into its old backup is refused as well and a full
 * backup is taken (rule 4: after restoring the backup source, take a full backup).
 */
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { readIfExists, writeFileDurably } from './file-copy.js';

export const NODE_ID_FILE = 'eventdb.node-id';

export async function readNodeId(dbDir: string): Promise<string | undefined> {
  const bytes = await readIfExists(path.join(dbDir, NODE_ID_FILE));
  const first = bytes?.toString('utf8').split('\n')[0]?.trim();
  return first === undefined || first === '' ? undefined : first;
}

/** The directory's identity, made and stored durably when it has none. */
export async function ensureNodeId(dbDir: string): Promise<string> {
  const existing = await readNodeId(dbDir);
  if (existing !== undefined) return existing;
  const id = randomUUID();
  await writeFileDurably(path.join(dbDir, NODE_ID_FILE), `${id}\n`);
  return id;
}

/** A fresh identity for restored directories, recording the backup's. */
export async function writeRestoredNodeId(dbDir: string, restoredFrom: string): Promise<string> {
  const id = randomUUID();
  await writeFileDurably(path.join(dbDir, NODE_ID_FILE), `${id}\nrestored-from ${restoredFrom} at ${new Date().toISOString()}\n`);
  return id;
}
