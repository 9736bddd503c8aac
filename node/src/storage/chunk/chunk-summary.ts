/**
 * Chunk summaries: what scavenge accumulation needs of a chunk, noted by the writer while it
 * writes the chunk, so accumulation does not have to read the whole chunk again.
 *
 * Accumulation reads every record of every chunk added since the previous scavenge, yet acts on
 * few of them: it needs each stream name (for the hash-collision check), the chunk's time range
 * (for $maxAge), and the metadata records and tombstones. Reading and walking 2 GB for that took
 * a quarter of a scavenge here. The writer has all of it in hand as it encodes a batch; at chunk
 * completion it is saved beside the scavenge state. Accumulation then reads only the records at
 * the noted positions (each checked against its own checksum, as before).
 *
 * A summary is an optimisation, never the truth: it is used only when it was noted from the
 * chunk's first record on (not for the chunk that was active when the node started), when its
 * own checksum, the chunk id and the data size all match the chunk file; otherwise accumulation
 * reads the chunk as before.
 */
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { crc32 } from 'node:zlib';

export interface ChunkSummary {
  readonly chunkStartNumber: number;
  /** The chunk file's id (header): a summary never applies to another file of the same number. */
  readonly chunkId: string;
  readonly dataSizeBytes: number;
  /** Timestamp range of the chunk's prepares (null: none). */
  readonly minTimestampMs: number | null;
  readonly maxTimestampMs: number | null;
  /** Every stream with a prepare in the chunk. */
  readonly streams: readonly string[];
  /** Log positions of the prepares accumulation decodes (metadata records, tombstones), ascending. */
  readonly positions: readonly number[];
}

const FORMAT_VERSION = 1;

/** Bytes of a summary file: its JSON, a newline, and the crc32 of the JSON in hex. */
export function encodeChunkSummary(s: ChunkSummary): Buffer {
  const json = Buffer.from(JSON.stringify({ v: FORMAT_VERSION, ...s }), 'utf8');
  return Buffer.concat([json, Buffer.from(`\n${crc32(json).toString(16)}\n`, 'utf8')]);
}

/** The summary in `bytes`, or undefined when they are not a whole, intact summary. */
export function decodeChunkSummary(bytes: Buffer): ChunkSummary | undefined {
  const nl = bytes.lastIndexOf(0x0a, bytes.length - 2);
  if (nl < 0 || bytes[bytes.length - 1] !== 0x0a) return undefined;
  const json = bytes.subarray(0, nl);
  if (crc32(json).toString(16) !== bytes.subarray(nl + 1, bytes.length - 1).toString('utf8')) return undefined;
  try {
    const o = JSON.parse(json.toString('utf8')) as Partial<ChunkSummary> & { v?: unknown };
    if (o.v !== FORMAT_VERSION || typeof o.chunkStartNumber !== 'number' || typeof o.chunkId !== 'string' || typeof o.dataSizeBytes !== 'number'
      || !Array.isArray(o.streams) || !Array.isArray(o.positions)) return undefined;
    return {
      chunkStartNumber: o.chunkStartNumber, chunkId: o.chunkId, dataSizeBytes: o.dataSizeBytes,
      minTimestampMs: o.minTimestampMs ?? null, maxTimestampMs: o.maxTimestampMs ?? null, streams: o.streams, positions: o.positions,
    };
  } catch {
    return undefined;
  }
}

/**
 * Most streams or positions one summary notes. A chunk with more (a quarter of a gigabyte of
 * tiny events in distinct streams) is read in full by accumulation instead: noting it would hold
 * tens of MB in the writer and stall it at chunk completion.
 */
export const SUMMARY_ENTRIES_MAX = 100_000;

/**
 * What the writer notes for the active chunk. `complete` only when noting began with the chunk's
 * first record (and stayed under SUMMARY_ENTRIES_MAX).
 */
export class ChunkSummaryNotes {
  private streams = new Set<string>();
  private positions: number[] = [];
  private minMs: number | null = null;
  private maxMs: number | null = null;
  chunkNumber: number;
  private complete: boolean;

  /** Starts noting for chunk `chunkNumber`; `fromItsStart`: it holds no record yet. */
  constructor(chunkNumber: number, fromItsStart: boolean) {
    this.chunkNumber = chunkNumber;
    this.complete = fromItsStart;
  }

  /** One write of prepares, all of `stream`, at `timestampMs`. */
  noteWrite(stream: string, timestampMs: number): void {
    if (!this.complete) return;
    this.streams.add(stream);
    if (this.streams.size > SUMMARY_ENTRIES_MAX) this.giveUp();
    if (this.minMs === null || timestampMs < this.minMs) this.minMs = timestampMs;
    if (this.maxMs === null || timestampMs > this.maxMs) this.maxMs = timestampMs;
  }

  /** A prepare accumulation must decode (metadata record or tombstone). */
  notePosition(logPosition: number): void {
    if (!this.complete) return;
    this.positions.push(logPosition);
    if (this.positions.length > SUMMARY_ENTRIES_MAX) this.giveUp();
  }

  /** No summary for this chunk after all (what was noted is let go). */
  giveUp(): void {
    this.complete = false;
    this.streams = new Set();
    this.positions = [];
  }

  /** The summary of the chunk just completed (undefined when not noted from its start); notes start afresh for `nextChunkNumber`. */
  finish(chunkId: string, dataSizeBytes: number, nextChunkNumber: number): ChunkSummary | undefined {
    const summary: ChunkSummary | undefined = this.complete ? {
      chunkStartNumber: this.chunkNumber, chunkId, dataSizeBytes, minTimestampMs: this.minMs, maxTimestampMs: this.maxMs,
      streams: [...this.streams], positions: this.positions,
    } : undefined;
    this.chunkNumber = nextChunkNumber;
    this.complete = true;
    this.streams = new Set();
    this.positions = [];
    this.minMs = null;
    this.maxMs = null;
    return summary;
  }
}

/** Where summaries are kept: files beside the scavenge state, or memory (--mem-db). */
export interface ChunkSummaryStore {
  /** Never rejects: a summary that could not be saved is reported and skipped. */
  save(summary: ChunkSummary): Promise<void>;
  load(chunkStartNumber: number): ChunkSummary | undefined;
  /** Once accumulated, a chunk's summary is not needed again. */
  drop(chunkStartNumber: number): void;
}

export class DirectoryChunkSummaryStore implements ChunkSummaryStore {
  constructor(private readonly dir: string, private readonly onError: (err: unknown, what: string) => void) {}

  private fileOf(chunkStartNumber: number): string {
    return path.join(this.dir, `chunk-${String(chunkStartNumber).padStart(6, '0')}.summary`);
  }

  /**
   * Written without fsync: a summary lost or torn in a crash fails its checksum and the chunk is
   * read instead. Never fails the writer: an error is reported and the summary skipped.
   */
  async save(summary: ChunkSummary): Promise<void> {
    const file = this.fileOf(summary.chunkStartNumber);
    try {
      await fsp.mkdir(this.dir, { recursive: true });
      await fsp.writeFile(`${file}.tmp`, encodeChunkSummary(summary));
      await fsp.rename(`${file}.tmp`, file);
    } catch (err: unknown) {
      this.onError(err, file);
    }
  }

  drop(chunkStartNumber: number): void {
    fs.rmSync(this.fileOf(chunkStartNumber), { force: true });
  }

  load(chunkStartNumber: number): ChunkSummary | undefined {
    let bytes: Buffer;
    try {
      bytes = fs.readFileSync(this.fileOf(chunkStartNumber));
    } catch {
      return undefined;
    }
    return decodeChunkSummary(bytes);
  }
}

export class MemoryChunkSummaryStore implements ChunkSummaryStore {
  private readonly summaries = new Map<number, ChunkSummary>();
  async save(summary: ChunkSummary): Promise<void> {
    this.summaries.set(summary.chunkStartNumber, summary);
  }
  load(chunkStartNumber: number): ChunkSummary | undefined {
    return this.summaries.get(chunkStartNumber);
  }
  drop(chunkStartNumber: number): void {
    this.summaries.delete(chunkStartNumber);
  }
}
