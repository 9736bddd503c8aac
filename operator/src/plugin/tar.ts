/**
 * PURE: a small ustar writer (and reader, for checks) for the support bundle; gzip by node:zlib.
 * Regular files only, mode 0644, names up to 255 bytes (prefix + name).
 */
import { gunzipSync, gzipSync } from 'node:zlib';

export interface TarEntry {
  readonly name: string;
  readonly content: Buffer | string;
  readonly mtimeMs?: number;
}

const BLOCK = 512;

function writeString(header: Buffer, offset: number, length: number, value: string): void {
  const bytes = Buffer.from(value, 'utf8');
  if (bytes.length > length) throw new Error(`tar: '${value}' longer than ${length} bytes`);
  bytes.copy(header, offset);
}

function writeOctal(header: Buffer, offset: number, length: number, value: number): void {
  writeString(header, offset, length, `${Math.floor(value).toString(8).padStart(length - 1, '0')}\0`);
}

function splitName(name: string): { prefix: string; name: string } {
  if (Buffer.byteLength(name) <= 100) return { prefix: '', name };
  for (let slash = name.indexOf('/'); slash >= 0; slash = name.indexOf('/', slash + 1)) {
    const prefix = name.slice(0, slash);
    const rest = name.slice(slash + 1);
    if (Buffer.byteLength(prefix) <= 155 && Buffer.byteLength(rest) <= 100) return { prefix, name: rest };
  }
  throw new Error(`tar: name too long: ${name}`);
}

function header(entry: TarEntry, size: number): Buffer {
  const block = Buffer.alloc(BLOCK);
  const { prefix, name } = splitName(entry.name);
  writeString(block, 0, 100, name);
  writeOctal(block, 100, 8, 0o644);
  writeOctal(block, 108, 8, 0);
  writeOctal(block, 116, 8, 0);
  writeOctal(block, 124, 12, size);
  writeOctal(block, 136, 12, (entry.mtimeMs ?? Date.now()) / 1000);
  block.fill(' ', 148, 156); // checksum field counts as spaces while summing
  block[156] = '0'.charCodeAt(0);
  writeString(block, 257, 6, 'ustar\0');
  writeString(block, 263, 2, '00');
  writeString(block, 265, 32, 'eventdb');
  writeString(block, 297, 32, 'eventdb');
  writeString(block, 345, 155, prefix);
  let sum = 0;
  for (const byte of block) sum += byte;
  writeString(block, 148, 8, `${sum.toString(8).padStart(6, '0')}\0 `);
  return block;
}

export function tar(entries: readonly TarEntry[]): Buffer {
  const parts: Buffer[] = [];
  for (const entry of entries) {
    const content = typeof entry.content === 'string' ? Buffer.from(entry.content, 'utf8') : entry.content;
    parts.push(header(entry, content.length), content);
    const pad = (BLOCK - (content.length % BLOCK)) % BLOCK;
    if (pad > 0) parts.push(Buffer.alloc(pad));
  }
  parts.push(Buffer.alloc(BLOCK * 2));
  return Buffer.concat(parts);
}

export function tarGz(entries: readonly TarEntry[]): Buffer {
  return gzipSync(tar(entries));
}

/** Reads a tar (or tar.gz) written by tar() or by GNU tar: regular files, names with prefix. */
export function readTar(archive: Buffer): Map<string, Buffer> {
  const data = archive[0] === 0x1f && archive[1] === 0x8b ? gunzipSync(archive) : archive;
  const files = new Map<string, Buffer>();
  for (let offset = 0; offset + BLOCK <= data.length; ) {
    const block = data.subarray(offset, offset + BLOCK);
    if (block.every((byte) => byte === 0)) break;
    const text = (start: number, length: number): string => block.subarray(start, start + length).toString('utf8').replace(/\0.*$/s, '');
    const size = parseInt(text(124, 12).trim() || '0', 8);
    const prefix = text(345, 155);
    const name = prefix === '' ? text(0, 100) : `${prefix}/${text(0, 100)}`;
    const type = String.fromCharCode(block[156] ?? 0);
    if (type === '0' || type === '\0') files.set(name, Buffer.from(data.subarray(offset + BLOCK, offset + BLOCK + size)));
    offset += BLOCK + Math.ceil(size / BLOCK) * BLOCK;
  }
  return files;
}
