/**
 * The stream existence filter: a persistent bloom filter of stream names, so "does stream X
 * exist?" can be answered "no" without an index lookup. Files, under the index directory:
 *
 *   stream-existence/streamExistenceFilter.dat  magic "EDBSEXF1", uint32 format version,
 *       uint32 probe count, uint64 size in bytes, 8 zero bytes, the bit array, uint32 crc32
 *   stream-existence/streamExistenceFilter.chk  magic "EDBSECHK", uint64 log position, crc32
 *
 * The `.chk` position says up to where the `.dat` is known to cover the log; the engine replays
 * the log from `checkpoint` on start, calling add() for every stream it meets, then advance().
 * Persisting writes `.dat` then `.chk` (each atomically), copying the bits in 1 MiB slices while
 * adds continue: bits are only ever set, so the file holds at least everything up to the
 * position recorded, which is all a bloom filter needs. A missing or damaged pair of files, or a
 * size change, is not fatal: the filter starts empty with checkpoint 0 and is rebuilt by replay.
 */

import { mkdir, readFile, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';
import type { Logger } from 'pino';
import { EventDbError, assert, isErrno } from '../../errors.js';
import { BLOOM_PROBE_COUNT, BloomFilter } from './bloom-filter.js';
import {
  DurableFileWriter,
  TEMP_FILE_SUFFIX,
  removeFile,
  writeFileDurably,
} from './durable-file.js';
import { streamHash } from './stream-hash.js';
import type { StreamHasher } from './stream-index-port.js';

export const STREAM_EXISTENCE_DIRECTORY = 'stream-existence';
export const STREAM_EXISTENCE_DATA_FILE = 'streamExistenceFilter.dat';
export const STREAM_EXISTENCE_CHECKPOINT_FILE = 'streamExistenceFilter.chk';
/** EventStoreDB's default StreamExistenceFilterSize. */
export const STREAM_EXISTENCE_SIZE_BYTES_DEFAULT = 256_000_000;
const DATA_MAGIC = 'EDBSEXF1';
const CHECKPOINT_MAGIC = 'EDBSECHK';
const FORMAT_VERSION = 1;
const DATA_HEADER_SIZE_BYTES = 32;
const CHECKPOINT_SIZE_BYTES = 20;
const PERSIST_SLICE_SIZE_BYTES = 1024 * 1024;

export interface OpenStreamExistenceFilterOptions {
  /** The index directory; the files live in its `stream-existence` subdirectory. */
  readonly indexPath: string;
  /** Size of the bit array in bytes. Default 256,000,000 (EventStoreDB's default). */
  readonly sizeBytes?: number;
  /** Must be the index's hasher (default `streamHash`). */
  readonly hasher?: StreamHasher;
  readonly log: Logger;
  /** Keep the filter in memory only; persist() is a no-op. Default false. */
  readonly memOnly?: boolean;
  /** Persist this often when something changed (0 = only explicit persist). Default 0. */
  readonly persistIntervalMs?: number;
}

export class StreamExistenceFilter {
  readonly sizeBytes: number;
  private readonly bloom: BloomFilter;
  private readonly hasher: StreamHasher;
  private readonly options: OpenStreamExistenceFilterOptions;
  private readonly directory: string;
  private checkpointValue: number;
  private coveredLogPositionValue: number;
  /** Bits changed since the last persist: `.dat` must be rewritten. */
  private bitsDirty = false;
  /** The covered position moved since the last persist: `.chk` must be rewritten. */
  private positionDirty = false;
  /** A valid `.dat` exists (loaded at open or written since). */
  private dataOnDisk: boolean;
  private persisting: Promise<void> | undefined;
  private timer: NodeJS.Timeout | undefined;
  private failure: unknown = undefined;

  constructor(
    options: OpenStreamExistenceFilterOptions,
    bits: Uint8Array,
    checkpoint: number,
    dataOnDisk: boolean,
  ) {
    this.dataOnDisk = dataOnDisk;
    this.options = options;
    this.directory = join(options.indexPath, STREAM_EXISTENCE_DIRECTORY);
    this.sizeBytes = bits.length;
    this.bloom = new BloomFilter(bits, BLOOM_PROBE_COUNT);
    this.hasher = options.hasher ?? streamHash;
    this.checkpointValue = checkpoint;
    this.coveredLogPositionValue = checkpoint;
    const intervalMs = options.persistIntervalMs ?? 0;
    if (intervalMs > 0 && options.memOnly !== true) {
      this.timer = setInterval(() => this.persistInBackground(), intervalMs);
      this.timer.unref();
    }
  }

  /** Log position the persisted files cover: replay the log from here on start. */
  get checkpoint(): number {
    return this.checkpointValue;
  }

  /** Log position up to which add() has been called (as told by advance()). */
  get coveredLogPosition(): number {
    return this.coveredLogPositionValue;
  }

  add(streamName: string): void {
    const hash = this.hasher(streamName);
    if (this.bloom.add(Number(hash >> 32n), Number(BigInt.asUintN(32, hash)))) {
      this.bitsDirty = true;
    }
  }

  /** False means the stream certainly has no event in the covered log; true means maybe. */
  mightExist(streamName: string): boolean {
    const hash = this.hasher(streamName);
    return this.bloom.mightContain(Number(hash >> 32n), Number(BigInt.asUintN(32, hash)));
  }

  /**
   * Records that every stream in the log below `logPosition` has been added. A lower position
   * than the covered one is ignored: after the log was truncated below the covered position the
   * filter keeps the bits of the cut streams (harmless false positives) and every stream
   * appended since is added live, so the covered position stays true.
   */
  advance(logPosition: number): void {
    assert(Number.isSafeInteger(logPosition) && logPosition >= 0, 'covered position is valid');
    if (logPosition <= this.coveredLogPositionValue) return;
    this.positionDirty = true;
    this.coveredLogPositionValue = logPosition;
  }

  /** Writes `.dat` then `.chk` atomically; concurrent calls share one write. */
  async persist(): Promise<void> {
    if (this.failure !== undefined) throw this.failure;
    if (this.options.memOnly === true) return;
    while (this.persisting !== undefined) await this.persisting;
    if (!this.bitsDirty && !this.positionDirty) return;
    this.persisting = this.persistNow().finally(() => {
      this.persisting = undefined;
    });
    await this.persisting;
  }

  /** Stops the periodic persist and persists what changed. */
  async close(): Promise<void> {
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
    await this.persist();
  }

  private persistInBackground(): void {
    const dirty = this.bitsDirty || this.positionDirty;
    if (!dirty || this.persisting !== undefined || this.failure !== undefined) return;
    this.persist().catch((err: unknown) => {
      this.failure = err;
      this.options.log.error({ err }, 'stream existence filter persist failed');
    });
  }

  private async persistNow(): Promise<void> {
    const logPosition = this.coveredLogPositionValue;
    // `.dat` is rewritten only when bits changed (appends to known streams change none);
    // clearing the flags first lets adds during the write mark the next persist.
    const writeBits = this.bitsDirty || !this.dataOnDisk;
    this.bitsDirty = false;
    this.positionDirty = false;
    try {
      await mkdir(this.directory, { recursive: true });
      if (writeBits) await this.writeData();
      this.dataOnDisk = true;
      await writeFileDurably(
        join(this.directory, STREAM_EXISTENCE_CHECKPOINT_FILE),
        encodeExistenceCheckpoint(logPosition),
      );
    } catch (err: unknown) {
      this.bitsDirty ||= writeBits;
      this.positionDirty = true;
      throw err;
    }
    this.checkpointValue = logPosition;
    this.options.log.debug({ logPosition, writeBits }, 'stream existence filter persisted');
  }

  private async writeData(): Promise<void> {
    const writer = await DurableFileWriter.create(join(this.directory, STREAM_EXISTENCE_DATA_FILE));
    try {
      const header = encodeExistenceHeader(this.sizeBytes);
      let checksum = crc32(header);
      await writer.write(header);
      const bits = this.bloom.bits;
      for (let start = 0; start < bits.length; start += PERSIST_SLICE_SIZE_BYTES) {
        // A copy: the live bits may change while the write is in flight.
        const slice = Buffer.from(bits.subarray(start, start + PERSIST_SLICE_SIZE_BYTES));
        checksum = crc32(slice, checksum);
        await writer.write(slice);
      }
      const footer = Buffer.alloc(4);
      footer.writeUInt32LE(checksum, 0);
      await writer.write(footer);
      assert(writer.sizeBytes === DATA_HEADER_SIZE_BYTES + bits.length + 4, 'filter file size');
      await writer.commit();
    } catch (err: unknown) {
      await writer.abort();
      throw err;
    }
  }
}

function encodeExistenceHeader(sizeBytes: number): Buffer {
  const header = Buffer.alloc(DATA_HEADER_SIZE_BYTES);
  header.write(DATA_MAGIC, 0, 'latin1');
  header.writeUInt32LE(FORMAT_VERSION, 8);
  header.writeUInt32LE(BLOOM_PROBE_COUNT, 12);
  header.writeBigUInt64LE(BigInt(sizeBytes), 16);
  return header;
}

export function encodeExistenceCheckpoint(logPosition: number): Buffer {
  assert(Number.isSafeInteger(logPosition) && logPosition >= 0, 'checkpoint is a position');
  const bytes = Buffer.alloc(CHECKPOINT_SIZE_BYTES);
  bytes.write(CHECKPOINT_MAGIC, 0, 'latin1');
  bytes.writeBigUInt64LE(BigInt(logPosition), 8);
  bytes.writeUInt32LE(crc32(bytes.subarray(0, 16)), 16);
  return bytes;
}

export function decodeExistenceCheckpoint(bytes: Buffer): number | undefined {
  if (bytes.length !== CHECKPOINT_SIZE_BYTES) return undefined;
  if (bytes.toString('latin1', 0, 8) !== CHECKPOINT_MAGIC) return undefined;
  if (crc32(bytes.subarray(0, 16)) !== bytes.readUInt32LE(16)) return undefined;
  return Number(bytes.readBigUInt64LE(8));
}

/** Returns the bits of a valid `.dat` of the expected size, else undefined. */
export function decodeExistenceData(bytes: Buffer, sizeBytes: number): Uint8Array | undefined {
  if (bytes.length !== DATA_HEADER_SIZE_BYTES + sizeBytes + 4) return undefined;
  if (bytes.toString('latin1', 0, 8) !== DATA_MAGIC) return undefined;
  if (bytes.readUInt32LE(8) !== FORMAT_VERSION) return undefined;
  if (bytes.readUInt32LE(12) !== BLOOM_PROBE_COUNT) return undefined;
  if (Number(bytes.readBigUInt64LE(16)) !== sizeBytes) return undefined;
  const checksum = crc32(bytes.subarray(0, bytes.length - 4));
  if (checksum !== bytes.readUInt32LE(bytes.length - 4)) return undefined;
  return new Uint8Array(bytes.buffer, bytes.byteOffset + DATA_HEADER_SIZE_BYTES, sizeBytes);
}

/** Deletes temporary files a crash left behind mid-persist (each may be as big as the filter). */
async function removeExistenceTempFiles(directory: string): Promise<void> {
  let names: string[];
  try {
    names = await readdir(directory);
  } catch (err: unknown) {
    if (isErrno(err, 'ENOENT')) return;
    throw err;
  }
  for (const name of names) {
    if (name.startsWith('streamExistenceFilter.') && name.endsWith(TEMP_FILE_SUFFIX)) {
      await removeFile(join(directory, name));
    }
  }
}

async function readOptional(path: string): Promise<Buffer | undefined> {
  try {
    return await readFile(path);
  } catch (err: unknown) {
    if (isErrno(err, 'ENOENT')) return undefined;
    throw err;
  }
}

export async function openStreamExistenceFilter(
  options: OpenStreamExistenceFilterOptions,
): Promise<StreamExistenceFilter> {
  const sizeBytes = options.sizeBytes ?? STREAM_EXISTENCE_SIZE_BYTES_DEFAULT;
  if (!Number.isSafeInteger(sizeBytes) || sizeBytes < 8 || sizeBytes > 2 ** 29) {
    throw new EventDbError('EDB_CONFIG_INVALID', 'stream existence filter size out of range', {
      details: { sizeBytes },
    });
  }
  if (options.memOnly === true) {
    return new StreamExistenceFilter(options, new Uint8Array(sizeBytes), 0, false);
  }
  const directory = join(options.indexPath, STREAM_EXISTENCE_DIRECTORY);
  await removeExistenceTempFiles(directory);
  const checkpointBytes = await readOptional(join(directory, STREAM_EXISTENCE_CHECKPOINT_FILE));
  const checkpoint = checkpointBytes && decodeExistenceCheckpoint(checkpointBytes);
  const dataBytes = checkpoint === undefined
    ? undefined
    : await readOptional(join(directory, STREAM_EXISTENCE_DATA_FILE));
  const bits = dataBytes && decodeExistenceData(dataBytes, sizeBytes);
  if (checkpoint === undefined || bits === undefined) {
    const found = checkpointBytes !== undefined;
    options.log.info({ found, sizeBytes }, 'stream existence filter rebuilt from the log');
    return new StreamExistenceFilter(options, new Uint8Array(sizeBytes), 0, false);
  }
  options.log.info({ checkpoint, sizeBytes }, 'stream existence filter loaded');
  return new StreamExistenceFilter(options, bits, checkpoint, true);
}
