/**
 * `indexmap`: the text file listing the durable tables and the log position they cover.
 *
 *   <sha256 hex of everything after this line>
 *   EDB-INDEXMAP 1
 *   persistedLogPosition <n>
 *   table <level> <UUID>          one line per table
 *
 * It is replaced atomically (temp file, fsync, rename, fsync directory); a missing file means an
 * empty index, a checksum or syntax error is fatal (EDB_INDEX_CORRUPT).
 */

import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { FatalError, assert, isErrno } from '../../errors.js';
import { writeFileDurably } from './durable-file.js';

export const INDEX_MAP_FILE_NAME = 'indexmap';
const INDEX_MAP_HEADER = 'EDB-INDEXMAP 1';
const TABLE_FILE_NAME_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const DECIMAL_PATTERN = /^(0|[1-9][0-9]{0,15})$/;

export interface IndexMapTable {
  readonly level: number;
  readonly fileName: string;
}

export interface IndexMap {
  readonly persistedLogPosition: number;
  readonly tables: readonly IndexMapTable[];
}

export const EMPTY_INDEX_MAP: IndexMap = { persistedLogPosition: 0, tables: [] };

export function isTableFileName(name: string): boolean {
  return TABLE_FILE_NAME_PATTERN.test(name);
}

function sha256Hex(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

export function encodeIndexMap(map: IndexMap): string {
  const position = map.persistedLogPosition;
  assert(Number.isSafeInteger(position) && position >= 0, 'persisted position is an integer >= 0');
  const lines = [INDEX_MAP_HEADER, `persistedLogPosition ${map.persistedLogPosition}`];
  for (const table of map.tables) {
    assert(isTableFileName(table.fileName), 'table file name is a UUID');
    assert(Number.isInteger(table.level) && table.level >= 0, 'table level is an integer >= 0');
    lines.push(`table ${table.level} ${table.fileName}`);
  }
  const body = `${lines.join('\n')}\n`;
  return `${sha256Hex(body)}\n${body}`;
}

function corruptIndexMap(fileName: string, reason: string): FatalError {
  return new FatalError('EDB_INDEX_CORRUPT', `index map ${fileName} is corrupt: ${reason}`, {
    details: { fileName, reason },
  });
}

export function decodeIndexMap(text: string, fileName: string = INDEX_MAP_FILE_NAME): IndexMap {
  const newline = text.indexOf('\n');
  if (newline < 0) throw corruptIndexMap(fileName, 'no checksum line');
  const body = text.slice(newline + 1);
  if (text.slice(0, newline) !== sha256Hex(body)) {
    throw corruptIndexMap(fileName, 'checksum mismatch');
  }
  const lines = body.split('\n');
  if (lines.pop() !== '') throw corruptIndexMap(fileName, 'no final newline');
  if (lines[0] !== INDEX_MAP_HEADER) throw corruptIndexMap(fileName, 'unknown header');
  const position = /^persistedLogPosition (\S+)$/.exec(lines[1] ?? '')?.[1];
  if (position === undefined || !DECIMAL_PATTERN.test(position)) {
    throw corruptIndexMap(fileName, 'bad persistedLogPosition line');
  }
  const tables: IndexMapTable[] = [];
  for (const line of lines.slice(2)) {
    const match = /^table (\S+) (\S+)$/.exec(line);
    const level = match?.[1];
    const tableFileName = match?.[2];
    if (level === undefined || tableFileName === undefined || !DECIMAL_PATTERN.test(level)) {
      throw corruptIndexMap(fileName, 'bad table line');
    }
    if (!isTableFileName(tableFileName)) throw corruptIndexMap(fileName, 'bad table file name');
    if (tables.some((table) => table.fileName === tableFileName)) {
      throw corruptIndexMap(fileName, 'table listed twice');
    }
    tables.push({ level: Number(level), fileName: tableFileName });
  }
  return { persistedLogPosition: Number(position), tables };
}

/** Reads `<directory>/indexmap`; a missing file is an empty index. */
export async function readIndexMap(directory: string): Promise<IndexMap> {
  let text: string;
  try {
    text = await readFile(join(directory, INDEX_MAP_FILE_NAME), 'utf8');
  } catch (err: unknown) {
    if (isErrno(err, 'ENOENT')) return EMPTY_INDEX_MAP;
    throw err;
  }
  return decodeIndexMap(text);
}

export async function writeIndexMap(directory: string, map: IndexMap): Promise<void> {
  const text = encodeIndexMap(map);
  assert(decodeIndexMap(text).tables.length === map.tables.length, 'index map round trip');
  await writeFileDurably(join(directory, INDEX_MAP_FILE_NAME), Buffer.from(text, 'utf8'));
}
