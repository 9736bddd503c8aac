import { afterEach, describe, expect, it } from 'vitest';
import { engineOptions, jsonEvent, openTestEngine, tempDir } from '../../../../test/support/engine-fixture.js';
import { decodeFrame } from '../format/record.js';
import type { Engine } from '../event-db.js';

const engines: Engine[] = [];
afterEach(async () => {
  for (const db of engines.splice(0)) await db.close().catch(() => undefined);
});

/** Every frame of `piece` decodes whole at its position: what a replica checks of each piece. */
function wholeRecords(piece: Buffer, position: number): number {
  let offset = 0;
  let records = 0;
  while (offset < piece.length) {
    const frame = decodeFrame(piece, offset, piece.length, position + offset);
    if (frame.kind !== 'record') throw new Error(`piece at ${position}: ${frame.kind === 'torn' ? frame.reason : frame.kind} at ${position + offset}`);
    offset += frame.frameSizeBytes;
    records++;
  }
  return records;
}

describe('pieces of the log a leader ships', () => {
  it('end after the last whole record, so a replica never sees a record split between two pieces; a record larger than a piece comes whole', async () => {
    const db = await openTestEngine(engineOptions(tempDir()));
    engines.push(db);
    for (let i = 0; i < 200; i++) {
      // sizes that do not divide the piece size; every 50th event larger than a piece
      const body = { i, pad: 'x'.repeat(i % 50 === 0 ? 3000 : 37 + (i % 13) * 11) };
      expect((await db.append(`s-${i % 7}`, -2, [jsonEvent(body)])).kind).toBe('success');
    }
    const durable = db.source.durable;
    const chunk = db.source.chunkAt(0)!;
    const pieceBytes = 1000;
    let position = chunk.startPosition;
    let pieces = 0;
    let records = 0;
    while (position < durable) {
      const piece = db.source.readBytes(position, pieceBytes);
      expect(piece.length, `piece at ${position}`).toBeGreaterThan(0);
      records += wholeRecords(piece, position);
      position += piece.length;
      pieces++;
    }
    expect(position).toBe(durable);
    expect(pieces).toBeGreaterThan(10);
    expect(records).toBeGreaterThan(400); // prepares and commits of 200 appends, and the epoch
  });
});
