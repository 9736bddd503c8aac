/**
 * Writes one table file from a stream of encoded, already sorted entry chunks, without holding
 * the table in memory: each chunk is scanned (sort order asserted, distinct hashes fed to the
 * bloom filter, midpoints sampled), folded into the running crc32 and appended. The midpoints
 * and footer follow, then the file is made durable, then its `<UUID>.bloomfilter`.
 */

import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';
import { assert } from '../../errors.js';
import { BloomFilter, bloomBitCountFor } from './bloom-filter.js';
import { BLOOM_FILE_SUFFIX, encodeBloomFilterFile } from './bloom-filter-file.js';
import { DurableFileWriter, writeFileDurably } from './durable-file.js';
import { ENTRY_SIZE_BYTES, ENTRY_SIZE_WORDS, compareEntries } from './index-entry-codec.js';
import { Midpoints } from './midpoints.js';
import {
  PTABLE_FORMAT_VERSION,
  encodePTableFooter,
  encodePTableHeader,
  midpointStrideFor,
  ptableSizeBytes,
} from './ptable-format.js';

export interface PTableWriteOptions {
  readonly directory: string;
  /** Upper bound of the entry count (sizes the midpoint stride). */
  readonly entryCountMax: number;
  /** Upper bound of the distinct hash count (sizes the bloom filter). */
  readonly hashCountMax: number;
  readonly bloomBitCountMax: number;
  /** Encoded entries in table order; each chunk's bytes must be word-aligned. */
  readonly chunks: Iterable<Buffer> | AsyncIterable<Buffer>;
}

export interface WrittenPTable {
  readonly fileName: string;
  readonly entryCount: number;
  readonly hashCount: number;
  readonly midpointStride: number;
  readonly midpoints: Midpoints;
  readonly bloom: BloomFilter;
  readonly sizeBytes: number;
}

/** Scan state of the entries written so far. */
class PTableWriteScan {
  readonly previous = new Uint32Array(ENTRY_SIZE_WORDS);
  readonly midpointWords: number[] = [];
  entryCount = 0;
  hashCount = 0;
  lastMidpointIndex = -1;

  constructor(
    readonly midpointStride: number,
    readonly bloom: BloomFilter,
  ) {}

  scan(words: Uint32Array, entryCount: number): void {
    const previous = this.previous;
    for (let entry = 0; entry < entryCount; entry += 1) {
      const word = entry * ENTRY_SIZE_WORDS;
      const hashLow = words[word]!;
      const hashHigh = words[word + 1]!;
      if (this.entryCount === 0 || previous[0] !== hashLow || previous[1] !== hashHigh) {
        this.hashCount += 1;
        this.bloom.add(hashHigh, hashLow);
      }
      if (this.entryCount > 0) {
        assert(compareEntries(previous, 0, words, entry) <= 0, 'table entries arrive sorted');
      }
      for (let i = 0; i < ENTRY_SIZE_WORDS; i += 1) previous[i] = words[word + i]!;
      if (this.entryCount % this.midpointStride === 0) this.addMidpoint();
      this.entryCount += 1;
    }
  }

  /** Records the entry held in `previous` (at index entryCount) as a midpoint. */
  addMidpoint(): void {
    const p = this.previous;
    assert(this.entryCount < 2 ** 32, 'midpoint index fits 32 bits');
    this.midpointWords.push(p[0]!, p[1]!, p[2]!, p[3]!, this.entryCount >>> 0, 0);
    this.lastMidpointIndex = this.entryCount;
  }

  finish(): Buffer {
    if (this.lastMidpointIndex !== this.entryCount - 1) {
      this.entryCount -= 1;
      this.addMidpoint();
      this.entryCount += 1;
    }
    const words = Uint32Array.from(this.midpointWords);
    return Buffer.from(words.buffer, words.byteOffset, words.byteLength);
  }
}

/** Writes the table; resolves undefined (and leaves no file) when the chunks held no entry. */
export async function writePTable(
  options: PTableWriteOptions,
): Promise<WrittenPTable | undefined> {
  const fileName = randomUUID();
  const path = join(options.directory, fileName);
  const midpointStride = midpointStrideFor(options.entryCountMax);
  const bloom = BloomFilter.withBitCount(
    bloomBitCountFor(options.hashCountMax, options.bloomBitCountMax),
  );
  const scan = new PTableWriteScan(midpointStride, bloom);
  const writer = await DurableFileWriter.create(path);
  try {
    let checksum = await writePTableChunk(writer, encodePTableHeader({
      formatVersion: PTABLE_FORMAT_VERSION,
      midpointStride,
    }), 0);
    for await (const chunk of options.chunks) {
      assert(chunk.byteOffset % 4 === 0 && chunk.length % ENTRY_SIZE_BYTES === 0, 'aligned chunk');
      const entryCount = chunk.length / ENTRY_SIZE_BYTES;
      scan.scan(new Uint32Array(chunk.buffer, chunk.byteOffset, chunk.length / 4), entryCount);
      checksum = await writePTableChunk(writer, chunk, checksum);
    }
    if (scan.entryCount === 0) {
      await writer.abort();
      return undefined;
    }
    const midpointBytes = scan.finish();
    const midpointCount = midpointBytes.length / 24;
    checksum = await writePTableChunk(writer, midpointBytes, checksum);
    const footer = encodePTableFooter({
      entryCount: scan.entryCount,
      midpointCount,
      hashCount: scan.hashCount,
    });
    footer.writeUInt32LE(crc32(footer.subarray(0, footer.length - 4), checksum), footer.length - 4);
    await writer.write(footer);
    assert(writer.sizeBytes === ptableSizeBytes(scan.entryCount, midpointCount), 'table size');
    await writer.commit();
    const midpoints = Midpoints.decode(midpointBytes, midpointCount, scan.entryCount);
    assert(midpoints !== undefined, 'written midpoints decode');
    await writeFileDurably(`${path}${BLOOM_FILE_SUFFIX}`, encodeBloomFilterFile(bloom));
    return {
      fileName,
      entryCount: scan.entryCount,
      hashCount: scan.hashCount,
      midpointStride,
      midpoints,
      bloom,
      sizeBytes: writer.sizeBytes,
    };
  } catch (err: unknown) {
    await writer.abort();
    throw err;
  }
}

async function writePTableChunk(
  writer: DurableFileWriter,
  bytes: Buffer,
  checksum: number,
): Promise<number> {
  await writer.write(bytes);
  return crc32(bytes, checksum);
}
