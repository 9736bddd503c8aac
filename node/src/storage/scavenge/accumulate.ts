/**
 * Accumulation: reads each chunk added since the previous scavenge, up to the scavenge point,
 * once. Records in the scavenge state: metadata records (the stream's $maxAge/$maxCount/$tb, and
 * the metastream's discard point: metastreams keep only their latest record), tombstones, the
 * min/max timestamp of each logical chunk, and weight for the chunk of every metadata record
 * that a newer one replaces. One state transaction per chunk, with the checkpoint.
 */
import { RecordType, decodePayload } from '../format/record.js';
import { isMetastream, isTombstonePrepare, originalStreamOf, parseStreamMetadata, metastreamOf } from '../stream-metadata.js';
import { FRAME_PAYLOAD_OFFSET_BYTES, corrupt, forEachFrame, frameChecksumOk } from './chunk-frames.js';
import { RECORD_FRAME_OVERHEAD_BYTES, RECORD_SIZE_BYTES_MAX } from '../limits.js';
import type { ChunkSummary } from '../chunk/chunk-summary.js';
import { StreamNameMemo, frameRecordType, prepareEventNumber, prepareFlags, prepareTimestampMs } from './record-fields.js';
import type { ScavengeAccess, ScavengePacer } from './scavenge-access.js';
import type { Chunk } from '../chunk/chunk.js';
import type { MetastreamData, OriginalStreamData, ScavengePoint, ScavengeState } from './scavenge-types.js';

type StreamMetadataFields = ReturnType<typeof parseStreamMetadata>;

/** Weight of one record that can be removed (spec: weight ~ 2 x removable records). */
export const REMOVABLE_RECORD_WEIGHT = 2;

/**
 * Accumulates every chunk added since the previous scavenge. A chunk with a usable summary (see
 * chunk-summary.ts) is not read in full: only its metadata records and tombstones are, each
 * checked against its own checksum; if one of them does not match what the summary says, the
 * chunk is read in full after all. Returns the chunks accumulated, and how many from summaries.
 */
export async function accumulate(
  access: ScavengeAccess, state: ScavengeState, point: ScavengePoint, pacer: ScavengePacer,
): Promise<{ accumulated: number; summarised: number }> {
  const lastChunkInScope = Math.floor(point.position / access.chunkSizeBytes) - 1;
  let accumulated = 0;
  let summarised = 0;
  for (const chunk of access.registry.allChunks()) {
    if (chunk.header.chunkEndNumber <= state.lastAccumulatedChunk()) continue;
    if (chunk.header.chunkEndNumber > lastChunkInScope || !chunk.isCompleted) break;
    let changes = new ChunkChanges(state, access.hasher);
    let scan = new ChunkScan(chunk, access.chunkSizeBytes, changes);
    const summary = usableSummary(chunk, access.chunkSummary?.(chunk.header.chunkStartNumber));
    if (!summary || !scan.fromSummary(summary)) {
      if (summary) {
        access.log.warn({ chunkStartNumber: chunk.header.chunkStartNumber }, 'the chunk summary does not match the chunk: reading the chunk');
        changes = new ChunkChanges(state, access.hasher);
        scan = new ChunkScan(chunk, access.chunkSizeBytes, changes);
      }
      await forEachFrame(chunk, (block, frame, size, logicalOffset) => scan.visit(block, frame, size, logicalOffset),
        () => pacer.yieldNow(), undefined, false);
    } else {
      summarised++;
    }
    const times = scan.finish();
    state.transaction(() => {
      changes.apply();
      for (const [n, t] of times) {
        const old = state.getChunkTimeRange(n);
        state.setChunkTimeRange(n, Math.min(t.minMs, old?.minMs ?? t.minMs), Math.max(t.maxMs, old?.maxMs ?? t.maxMs));
      }
      state.setLastAccumulatedChunk(chunk.header.chunkEndNumber);
      state.setCheckpoint({ stage: 'Accumulating', scavengePoint: point, doneLogicalChunkNumber: chunk.header.chunkEndNumber });
    });
    accumulated++;
    access.dropChunkSummary?.(chunk.header.chunkStartNumber);
    access.log.debug({ chunkStartNumber: chunk.header.chunkStartNumber, chunkEndNumber: chunk.header.chunkEndNumber, fromSummary: summary !== undefined },
      'chunk accumulated');
    await pacer.afterUnit();
  }
  return { accumulated, summarised };
}

/** `summary` when it describes exactly this chunk file (a fresh, unscavenged, single chunk). */
function usableSummary(chunk: Chunk, summary: ChunkSummary | undefined): ChunkSummary | undefined {
  if (!summary || chunk.header.isScavenged || chunk.header.chunkStartNumber !== chunk.header.chunkEndNumber) return undefined;
  if (summary.chunkStartNumber !== chunk.header.chunkStartNumber || summary.chunkId !== chunk.header.chunkId) return undefined;
  return summary.dataSizeBytes === chunk.physicalDataSizeBytes ? summary : undefined;
}

/**
 * The per-record work of accumulation for one chunk. State lives in fields (not in variables of
 * a closure, where every new timestamp was boxed), and the logical chunk of a record is found by
 * comparing offsets with the current one's bounds rather than dividing per record.
 */
class ChunkScan {
  private readonly memo = new StreamNameMemo();
  private stream = '';
  private isMeta = false;
  private readonly times = new Map<number, { minMs: number; maxMs: number }>();
  /** The logical chunk being read (-1: none yet), its offset range in this chunk, its time range. */
  private timeChunk = -1;
  private timeChunkFrom = 0;
  private timeChunkTo = 0;
  private minMs = 0;
  private maxMs = 0;
  /** Metadata records and tombstones visited. */
  private decoded = 0;

  constructor(private readonly chunk: Chunk, private readonly chunkSizeBytes: number, private readonly changes: ChunkChanges) {}

  visit(block: Buffer, frame: number, size: number, logicalOffset: number): void {
    if (frameRecordType(block, frame) !== RecordType.Prepare) return;
    const timestampMs = prepareTimestampMs(block, frame);
    if (logicalOffset >= this.timeChunkTo || logicalOffset < this.timeChunkFrom || this.timeChunk < 0) {
      this.foldTimes();
      const within = Math.floor(logicalOffset / this.chunkSizeBytes);
      this.timeChunk = this.chunk.header.chunkStartNumber + within;
      this.timeChunkFrom = within * this.chunkSizeBytes;
      this.timeChunkTo = this.timeChunkFrom + this.chunkSizeBytes;
      this.minMs = timestampMs;
      this.maxMs = timestampMs;
    } else {
      if (timestampMs < this.minMs) this.minMs = timestampMs;
      if (timestampMs > this.maxMs) this.maxMs = timestampMs;
    }
    if (!this.memo.same(block, frame)) {
      this.stream = this.memo.remember(block, frame);
      this.isMeta = isMetastream(this.stream);
      this.changes.hashUser(this.stream);
    }
    if (this.isMeta) {
      // Decoded in full: checked on its own first (the chunk's checksum is only known at the end).
      if (!frameChecksumOk(block, frame, size)) throw corrupt(this.chunk, logicalOffset, 'checksum mismatch');
      const record = decodePayload(block.subarray(frame + FRAME_PAYLOAD_OFFSET_BYTES, frame + size - 4));
      if (record.type === RecordType.Prepare) this.changes.metadata(this.stream, prepareEventNumber(block, frame), this.timeChunk, record.data);
      this.decoded++;
    } else if (isTombstonePrepare(prepareFlags(block, frame), prepareEventNumber(block, frame))) {
      // A tombstone discards a whole stream: checked on its own like a metadata record.
      if (!frameChecksumOk(block, frame, size)) throw corrupt(this.chunk, logicalOffset, 'checksum mismatch');
      this.changes.tombstone(this.stream);
      this.decoded++;
    }
    // Other records only feed weights and time ranges (estimates: execution decides on each
    // record again, from bytes its own walk verifies), so the chunk's checksum is not taken here.
  }

  /**
   * Takes the chunk's streams and time range from `summary` and visits the records at its
   * positions. False (nothing to rely on: the caller starts afresh) when a position does not
   * hold a whole frame matching its own checksum, or the frame is not a metadata record or
   * tombstone.
   */
  fromSummary(summary: ChunkSummary): boolean {
    for (const stream of summary.streams) this.changes.hashUser(stream);
    if (summary.minTimestampMs !== null && summary.maxTimestampMs !== null) {
      this.times.set(this.chunk.header.chunkStartNumber, { minMs: summary.minTimestampMs, maxMs: summary.maxTimestampMs });
    }
    const start = this.chunk.startPosition;
    for (const position of summary.positions) {
      const offset = position - start;
      if (!Number.isInteger(offset) || offset < 0 || offset + RECORD_FRAME_OVERHEAD_BYTES > this.chunk.physicalDataSizeBytes) return false;
      const len = this.chunk.readData(offset, 4).readUInt32LE(0);
      if (len === 0 || len > RECORD_SIZE_BYTES_MAX || offset + len + RECORD_FRAME_OVERHEAD_BYTES > this.chunk.physicalDataSizeBytes) return false;
      const size = len + RECORD_FRAME_OVERHEAD_BYTES;
      const frame = this.chunk.readData(offset, size);
      if (frame.readUInt32LE(size - 4) !== len || !frameChecksumOk(frame, 0, size)) return false;
      if (frameRecordType(frame, 0) !== RecordType.Prepare) return false;
      const before = this.decoded;
      this.visit(frame, 0, size, offset);
      if (this.decoded === before) return false; // not a metadata record or tombstone
    }
    return true;
  }

  /** The time range of each logical chunk read. */
  finish(): Map<number, { minMs: number; maxMs: number }> {
    this.foldTimes();
    this.timeChunk = -1;
    return this.times;
  }

  private foldTimes(): void {
    if (this.timeChunk < 0) return;
    const t = this.times.get(this.timeChunk);
    if (!t) this.times.set(this.timeChunk, { minMs: this.minMs, maxMs: this.maxMs });
    else { t.minMs = Math.min(t.minMs, this.minMs); t.maxMs = Math.max(t.maxMs, this.maxMs); }
  }
}

/**
 * Collects one chunk's effects in memory, then works them out and writes them in the chunk's
 * transaction. The chunk's tombstones and metadata records are kept in log order and applied in
 * `apply`, after the state rows they touch were read in bulk: one statement per 128 rows instead
 * of one per row (per-statement cost dominated accumulation's state work).
 */
class ChunkChanges {
  private readonly ops: Array<{ metastream: string; eventNumber: number; logicalChunk: number; parsed: StreamMetadataFields } | { tombstoned: string }> = [];
  private readonly originals = new Map<string, OriginalStreamData>();
  private readonly metas = new Map<string, { discardPoint: number; lastRecordChunk: number | null; isTombstoned: boolean }>();
  private readonly weights = new Map<number, number>();
  /** Distinct stream names of the chunk, checked once each for hash collisions. */
  private readonly streams = new Set<string>();
  private loadedOriginals = new Map<string, OriginalStreamData>();
  private loadedMetas = new Map<string, MetastreamData>();

  constructor(private readonly state: ScavengeState, private readonly hasher: (s: string) => bigint) {}

  hashUser(stream: string): void {
    this.streams.add(stream);
  }

  /** A metadata record (parsed now: `data` lives in a reused block). */
  metadata(metastream: string, eventNumber: number, logicalChunk: number, data: Buffer): void {
    this.ops.push({ metastream, eventNumber, logicalChunk, parsed: parseStreamMetadata(data) });
  }

  tombstone(stream: string): void {
    this.ops.push({ tombstoned: stream });
  }

  private original(stream: string): OriginalStreamData {
    return this.originals.get(stream) ?? this.loadedOriginals.get(stream) ?? {
      stream, isTombstoned: false, maxAgeSeconds: null, maxCount: null, truncateBefore: null,
      discardPoint: 0, maybeDiscardPoint: 0, lastEventNumber: -1, status: 'Active',
    };
  }

  private meta(metastream: string): { discardPoint: number; lastRecordChunk: number | null; isTombstoned: boolean } {
    return this.metas.get(metastream) ?? this.loadedMetas.get(metastream) ?? { discardPoint: 0, lastRecordChunk: null, isTombstoned: false };
  }

  private addWeight(chunk: number): void {
    this.weights.set(chunk, (this.weights.get(chunk) ?? 0) + REMOVABLE_RECORD_WEIGHT);
  }

  private applyMetadata(metastream: string, eventNumber: number, logicalChunk: number, parsed: StreamMetadataFields): void {
    const meta = this.meta(metastream);
    if (eventNumber < meta.discardPoint) { this.addWeight(logicalChunk); return; } // out of order: already replaced
    if (meta.lastRecordChunk !== null) this.addWeight(meta.lastRecordChunk);
    this.metas.set(metastream, { ...meta, discardPoint: eventNumber, lastRecordChunk: logicalChunk });
    const stream = originalStreamOf(metastream);
    const o = this.original(stream);
    this.originals.set(stream, {
      ...o, maxAgeSeconds: parsed.maxAgeSeconds ?? null, maxCount: parsed.maxCount ?? null,
      truncateBefore: parsed.truncateBefore ?? null, status: o.isTombstoned ? 'Archived' : 'Active',
    });
  }

  private applyTombstone(stream: string): void {
    const o = this.original(stream);
    this.originals.set(stream, { ...o, isTombstoned: true, status: 'Active' });
    const metastream = metastreamOf(stream);
    const meta = this.meta(metastream);
    if (meta.lastRecordChunk !== null && !meta.isTombstoned) this.addWeight(meta.lastRecordChunk);
    this.metas.set(metastream, { ...meta, isTombstoned: true });
  }

  apply(): void {
    const originalNames = new Set<string>();
    const metaNames = new Set<string>();
    for (const op of this.ops) {
      if ('tombstoned' in op) {
        originalNames.add(op.tombstoned);
        metaNames.add(metastreamOf(op.tombstoned));
      } else {
        metaNames.add(op.metastream);
        originalNames.add(originalStreamOf(op.metastream));
      }
    }
    this.loadedOriginals = originalNames.size > 0 ? this.state.getOriginals([...originalNames]) : new Map();
    this.loadedMetas = metaNames.size > 0 ? this.state.getMetas([...metaNames]) : new Map();
    for (const op of this.ops) {
      if ('tombstoned' in op) this.applyTombstone(op.tombstoned);
      else this.applyMetadata(op.metastream, op.eventNumber, op.logicalChunk, op.parsed);
    }
    this.state.checkHashUsers([...this.streams].map((stream) => ({ hash: this.hasher(stream), stream })));
    this.state.setOriginals([...this.originals.values()]);
    this.state.setMetas([...this.metas].map(([metastream, m]) => ({ metastream, ...m })));
    for (const [chunk, w] of this.weights) this.state.addChunkWeight(chunk, w);
  }
}
