/**
 * Reading an immutable table. Memory policy: a table keeps its midpoint cache (24 bytes per
 * `stride` entries, see midpoints.ts) and its bloom filter in memory; a lookup binary-searches
 * the midpoints and reads the needed pages of `stride + 1` entries with positioned reads on an
 * open descriptor (the OS page cache does the caching). The index may in addition hold the
 * entries of its smallest tables in memory (loadCache) within a fixed byte budget. Opening
 * verifies the file's crc32 by streaming it once unless verification is turned off. Merges read
 * a table sequentially in big chunks through readChunks().
 */

import { closeSync, fstatSync, openSync, read, readSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { crc32 } from 'node:zlib';
import type { Logger } from 'pino';
import { assert, isErrno } from '../../errors.js';
import type { IndexEntry } from './stream-index-port.js';
import type { IndexSource, RangeQuery } from './range-query.js';
import type { BloomFilter } from './bloom-filter.js';
import { BLOOM_FILE_SUFFIX, decodeBloomFilterFile } from './bloom-filter-file.js';
import {
  ENTRY_SIZE_BYTES,
  ENTRY_SIZE_WORDS,
  allocEntryBuffer,
  compareEntryToKey,
  readUint53,
  type HashKey,
} from './index-entry-codec.js';
import { Midpoints } from './midpoints.js';
import {
  MIDPOINT_SIZE_BYTES,
  PTABLE_FOOTER_SIZE_BYTES,
  PTABLE_HEADER_SIZE_BYTES,
  corruptTable,
  decodePTableFooter,
  decodePTableHeader,
  ptableSizeBytes,
} from './ptable-format.js';
import type { WrittenPTable } from './ptable-writer.js';

const readAsync = promisify(read);
const VERIFY_CHUNK_SIZE_BYTES = 4 * 1024 * 1024;

export interface PTableOpenOptions {
  readonly directory: string;
  readonly fileName: string;
  /** Streams the whole file through crc32 before use (default true). */
  readonly verifyChecksum: boolean;
  readonly log: Logger;
}

interface PTableParts {
  readonly fileName: string;
  readonly path: string;
  readonly fd: number;
  readonly entryCount: number;
  readonly hashCount: number;
  readonly midpointStride: number;
  readonly midpoints: Midpoints;
  readonly bloom: BloomFilter | undefined;
  readonly sizeBytes: number;
}

export class PTable implements IndexSource {
  readonly fileName: string;
  readonly path: string;
  readonly entryCount: number;
  readonly hashCount: number;
  readonly sizeBytes: number;
  readonly bloom: BloomFilter | undefined;
  private readonly fd: number;
  private readonly midpoints: Midpoints;
  private readonly pageEntryCount: number;
  private readonly page: { bytes: Buffer; words: Uint32Array };
  private closed = false;
  private cache: Uint32Array | undefined;

  private constructor(parts: PTableParts) {
    this.fileName = parts.fileName;
    this.path = parts.path;
    this.fd = parts.fd;
    this.entryCount = parts.entryCount;
    this.hashCount = parts.hashCount;
    this.sizeBytes = parts.sizeBytes;
    this.bloom = parts.bloom;
    this.midpoints = parts.midpoints;
    this.pageEntryCount = Math.min(parts.midpointStride + 1, parts.entryCount);
    this.page = allocEntryBuffer(this.pageEntryCount);
  }

  /** Wraps a table just written (its midpoints and filter are already in memory). */
  static fromWritten(directory: string, written: WrittenPTable): PTable {
    const path = join(directory, written.fileName);
    return new PTable({ ...written, path, fd: openSync(path, 'r') });
  }

  static async open(options: PTableOpenOptions): Promise<PTable> {
    const path = join(options.directory, options.fileName);
    let fd: number;
    try {
      fd = openSync(path, 'r');
    } catch (err: unknown) {
      if (isErrno(err, 'ENOENT')) throw corruptTable(options.fileName, 'file missing');
      throw err;
    }
    try {
      const parts = await openPTableParts(fd, path, options);
      return new PTable(parts);
    } catch (err: unknown) {
      closeSync(fd);
      throw err;
    }
  }

  /** False when the table's filter proves it holds no entry of the hash. */
  mightContain(key: HashKey): boolean {
    return this.bloom === undefined || this.bloom.mightContain(key.hashHigh, key.hashLow);
  }

  collect(query: RangeQuery, out: IndexEntry[]): void {
    assert(!this.closed, 'table read after close');
    let entryIndex = this.midpoints.scanStart(query.key, query.beforeEventNumber);
    let skipping = true;
    let taken = 0;
    while (entryIndex < this.entryCount && taken < query.limit) {
      // A cached table is one page; otherwise pages of `stride + 1` entries are read.
      const rest = this.entryCount - entryIndex;
      const pageCount = this.cache === undefined ? Math.min(this.pageEntryCount, rest) : rest;
      const { words, base } = this.loadPage(entryIndex, pageCount);
      const end = base + pageCount;
      let entry = base;
      if (skipping) {
        entry = ptableFirstBelow(words, base, end, query);
        skipping = entry === end;
      }
      for (; entry < end; entry += 1) {
        const word = entry * ENTRY_SIZE_WORDS;
        if (words[word] !== query.key.hashLow || words[word + 1] !== query.key.hashHigh) return;
        const eventNumber = readUint53(words, word + 2);
        if (eventNumber < query.minEventNumber || taken >= query.limit) return;
        const logPosition = readUint53(words, word + 4);
        out.push({ streamHash: query.streamHash, eventNumber, logPosition });
        taken += 1;
      }
      entryIndex += pageCount;
    }
  }

  /**
   * Reads all entries in table order as chunks of `chunkEntryCount`. One buffer is reused: a
   * chunk is valid until the next one is requested (a merge reads many; fresh buffers for each
   * made the allocator keep tens of MB).
   */
  async *readChunks(chunkEntryCount: number): AsyncGenerator<Buffer> {
    const buffer = allocEntryBuffer(Math.max(1, Math.min(chunkEntryCount, this.entryCount)));
    for (let start = 0; start < this.entryCount; start += chunkEntryCount) {
      assert(!this.closed, 'table read after close');
      const count = Math.min(chunkEntryCount, this.entryCount - start);
      const chunk = buffer.bytes.subarray(0, count * ENTRY_SIZE_BYTES);
      const position = PTABLE_HEADER_SIZE_BYTES + start * ENTRY_SIZE_BYTES;
      await readFully(this.fd, chunk, position, this.fileName);
      yield chunk;
    }
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.cache = undefined;
    closeSync(this.fd);
  }

  /** True when the entries are held in memory (see loadCache). */
  get isCached(): boolean {
    return this.cache !== undefined;
  }

  /** Reads all entries into memory so lookups need no system call; the index decides when. */
  async loadCache(): Promise<void> {
    assert(!this.closed, 'table cached after close');
    if (this.cache !== undefined) return;
    const entries = allocEntryBuffer(this.entryCount);
    await readFully(this.fd, entries.bytes, PTABLE_HEADER_SIZE_BYTES, this.fileName);
    this.cache = entries.words;
  }

  dropCache(): void {
    this.cache = undefined;
  }

  /** The words holding entries [entryIndex, entryIndex + entryCount) and the first one's index. */
  private loadPage(entryIndex: number, entryCount: number): { words: Uint32Array; base: number } {
    if (this.cache !== undefined) return { words: this.cache, base: entryIndex };
    const lengthBytes = entryCount * ENTRY_SIZE_BYTES;
    const position = PTABLE_HEADER_SIZE_BYTES + entryIndex * ENTRY_SIZE_BYTES;
    const bytesRead = readSync(this.fd, this.page.bytes, 0, lengthBytes, position);
    if (bytesRead !== lengthBytes) throw corruptTable(this.fileName, 'short read');
    return { words: this.page.words, base: 0 };
  }
}

/** First entry of the page strictly below the query cursor (binary search; pageCount if none). */
function ptableFirstBelow(
  words: Uint32Array,
  begin: number,
  end: number,
  query: RangeQuery,
): number {
  let low = begin;
  let high = end;
  while (low < high) {
    const mid = (low + high) >>> 1;
    const order = compareEntryToKey(
      words,
      mid,
      query.key,
      query.beforeEventNumber,
      query.beforeLogPosition,
    );
    if (order <= 0) low = mid + 1;
    else high = mid;
  }
  return low;
}

async function readFully(fd: number, target: Buffer, position: number, fileName: string) {
  let done = 0;
  while (done < target.length) {
    const { bytesRead } = await readAsync(fd, target, done, target.length - done, position + done);
    if (bytesRead === 0) throw corruptTable(fileName, 'unexpected end of file');
    done += bytesRead;
  }
}

async function openPTableParts(
  fd: number,
  path: string,
  options: PTableOpenOptions,
): Promise<PTableParts> {
  const fileName = options.fileName;
  const sizeBytes = fstatSync(fd).size;
  if (sizeBytes < PTABLE_HEADER_SIZE_BYTES + PTABLE_FOOTER_SIZE_BYTES) {
    throw corruptTable(fileName, 'file too short');
  }
  const header = Buffer.alloc(PTABLE_HEADER_SIZE_BYTES);
  await readFully(fd, header, 0, fileName);
  const { midpointStride } = decodePTableHeader(header, fileName);
  const footerBytes = Buffer.alloc(PTABLE_FOOTER_SIZE_BYTES);
  await readFully(fd, footerBytes, sizeBytes - PTABLE_FOOTER_SIZE_BYTES, fileName);
  const footer = decodePTableFooter(footerBytes, fileName);
  if (ptableSizeBytes(footer.entryCount, footer.midpointCount) !== sizeBytes) {
    throw corruptTable(fileName, 'size does not match footer counts');
  }
  if (options.verifyChecksum) await verifyPTableChecksum(fd, sizeBytes, footer.checksum, fileName);
  const midpointBytes = Buffer.from(new ArrayBuffer(footer.midpointCount * MIDPOINT_SIZE_BYTES));
  const midpointsAt = PTABLE_HEADER_SIZE_BYTES + footer.entryCount * ENTRY_SIZE_BYTES;
  await readFully(fd, midpointBytes, midpointsAt, fileName);
  const midpoints = Midpoints.decode(midpointBytes, footer.midpointCount, footer.entryCount);
  if (midpoints === undefined || footer.entryCount === 0) {
    throw corruptTable(fileName, 'bad midpoints');
  }
  const bloom = await loadBloomFilter(path, options.log);
  return { ...footer, fileName, path, fd, midpointStride, midpoints, bloom, sizeBytes };
}

async function verifyPTableChecksum(
  fd: number,
  sizeBytes: number,
  expected: number,
  fileName: string,
): Promise<void> {
  const chunk = Buffer.alloc(VERIFY_CHUNK_SIZE_BYTES);
  const checkedSizeBytes = sizeBytes - 4;
  let checksum = 0;
  for (let position = 0; position < checkedSizeBytes; position += chunk.length) {
    const length = Math.min(chunk.length, checkedSizeBytes - position);
    const view = chunk.subarray(0, length);
    await readFully(fd, view, position, fileName);
    checksum = crc32(view, checksum);
  }
  if (checksum !== expected) throw corruptTable(fileName, 'checksum mismatch');
}

async function loadBloomFilter(path: string, log: Logger): Promise<BloomFilter | undefined> {
  const filterPath = `${path}${BLOOM_FILE_SUFFIX}`;
  try {
    const filter = decodeBloomFilterFile(await readFile(filterPath));
    if (filter === undefined) log.warn({ filterPath }, 'index bloom filter invalid, not used');
    return filter;
  } catch (err: unknown) {
    if (!isErrno(err, 'ENOENT')) throw err;
    log.warn({ filterPath }, 'index bloom filter missing, not used');
    return undefined;
  }
}
