/**
 * Fills a database directory (db/ and index/ under `dir`) with 1 KiB events through the engine
 * itself, eight writers appending 100 events to a new stream each time: the log the backup and
 * scavenge benches measure.
 */
import path from 'node:path';
import pino from 'pino';
import type { EventDb } from '../../node/src/storage/event-db-types.js';
import { openEngine } from '../../node/src/storage/event-db.js';

export const EVENT_BYTES = 1024;

export interface FillLogOptions {
  /** Stop once about this many bytes are written ... */
  readonly targetBytes: number;
  /** ... or once this long has passed. */
  readonly timeLimitMs: number;
  readonly maxMemTableSize: number;
  /** After each stream's 100 events (the scavenge bench deletes every other stream). */
  readonly afterStream?: (db: EventDb, stream: string, streamNumber: number) => Promise<void>;
}

export async function fillLog(dir: string, options: FillLogOptions): Promise<void> {
  const db = await openEngine({
    dbPath: path.join(dir, 'db'), indexPath: path.join(dir, 'index'), memDb: false, chunkSizeBytes: 256 * 1024 * 1024,
    maxMemTableSize: options.maxMemTableSize, maxEventSizeBytes: 4 << 20, hashCollisionReadLimit: 100,
    // The node's default filter size: with another size the node rebuilds the filter from the whole log at start-up.
    streamExistenceFilterSizeBytes: 32 << 20,
  }, { log: pino({ level: 'warn' }), onFatal: (err) => { throw err; } });
  const data = Buffer.from(JSON.stringify({ pad: 'x'.repeat(EVENT_BYTES - 12) }));
  let written = 0;
  let stream = 0;
  const t0 = performance.now();
  const writer = async (): Promise<void> => {
    while (written < options.targetBytes && performance.now() - t0 < options.timeLimitMs) {
      const s = stream++;
      const events = Array.from({ length: 100 }, () => ({ eventId: crypto.randomUUID(), eventType: 'Filler', data, metadata: Buffer.alloc(0), isJson: true }));
      const r = await db.append(`s-${s}`, -1, events);
      if (r.kind !== 'success') throw new Error(`fill failed: ${r.kind}`);
      written += 100 * (EVENT_BYTES + 100);
      await options.afterStream?.(db, `s-${s}`, s);
    }
  };
  await Promise.all(Array.from({ length: 8 }, () => writer()));
  await db.close();
}
