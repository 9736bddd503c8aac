/**
 * EmittedStreams on the real engine (in memory): what a restarted projection emits again is
 * dropped, a reset starts streams anew behind `$tb`, writes from outside and other projections
 * fault, one source event's events are never split, and events queued while a stream's write
 * finishes are still written.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openMemEngine } from '../../../../test/support/engine-fixture.js';
import type { Engine } from '../../storage/event-db.js';
import type { CheckpointTag, ProjectionVersion } from '../checkpoint-tag.js';
import { EmittedStreams, type EmittedEvent } from './emitted-streams.js';

let db: Engine;
beforeEach(async () => {
  db = await openMemEngine();
});
afterEach(async () => {
  await db.close();
});

function emitter(version: ProjectionVersion, faults: string[] = [], maxWriteBatchLength = 500): EmittedStreams {
  return new EmittedStreams({
    db,
    version,
    maxWriteBatchLength,
    maxAllowedWritesInFlight: 0,
    trackingStream: undefined,
    onFault: (message) => faults.push(message),
  });
}

function at(prepare: number): CheckpointTag {
  return { mode: 'position', commit: prepare, prepare };
}

let group = 0;
function event(stream: string, tag: CheckpointTag, data: string, sameGroupAs?: number): EmittedEvent {
  return { spec: { stream, eventType: 'Out', data, isJson: false, extra: null }, causedBy: tag, causedById: undefined, correlationId: undefined, group: sameGroupAs ?? ++group };
}

async function data(stream: string): Promise<string[]> {
  const read = await db.readStream(stream, 0, 1000, 'forward');
  return read.kind === 'success' ? read.events.map((e) => e.data.toString()) : [];
}

const V1: ProjectionVersion = { id: 7, epoch: 1, version: 1 };

describe('EmittedStreams', () => {
  it('drops what a previous run of the projection already wrote, writes the rest', async () => {
    const first = emitter(V1);
    first.emit([event('out', at(10), 'a'), event('out', at(20), 'b')]);
    await first.drain();
    // A restart from an older checkpoint emits the same events again, then new ones.
    const second = emitter({ ...V1, version: 2 });
    second.emit([event('out', at(10), 'a'), event('out', at(20), 'b'), event('out', at(30), 'c')]);
    await second.drain();
    expect(await data('out')).toEqual(['a', 'b', 'c']);
    const last = await db.readEvent('out', -1);
    expect(last.kind === 'success' && JSON.parse(last.event.metadata.toString())).toEqual({ $v: '7:1:2:4', $c: 30, $p: 30 });
  });

  it('starts a stream anew after a reset, hiding what the old epoch wrote', async () => {
    const first = emitter(V1);
    first.emit([event('out', at(10), 'a')]);
    await first.drain();
    const reset = emitter({ id: 7, epoch: 3, version: 3 });
    reset.emit([event('out', at(10), 'a2')]);
    await reset.drain();
    expect(await data('out')).toEqual(['a2']);
    expect((await db.getStreamMetadata('out')).metadata.truncateBefore).toBe(1);
  });

  it('faults on a stream written from outside or by another projection', async () => {
    await db.append('foreign', -2, [{ eventId: crypto.randomUUID(), eventType: 'X', data: Buffer.from('{}'), metadata: Buffer.alloc(0), isJson: true }]);
    const faults: string[] = [];
    const a = emitter(V1, faults);
    a.emit([event('foreign', at(10), 'x')]);
    await expect(a.drain()).rejects.toThrow("The 'foreign' stream managed by projection 7 has been written to from the outside.");
    const other = emitter({ id: 8, epoch: 1, version: 1 }, faults);
    const mine = emitter(V1);
    mine.emit([event('shared', at(10), 'x')]);
    await mine.drain();
    other.emit([event('shared', at(20), 'y')]);
    await expect(other.drain()).rejects.toThrow("Multiple projections emitting to the same stream detected.  Stream: 'shared'. Last event projection: '7'.  Emitting projection: '8'");
    expect(faults).toHaveLength(2);
  });

  it('never splits the events of one source event across appends', async () => {
    const writes: Array<[number, number]> = [];
    const unsubscribe = db.onCommitted((w) => {
      if (w.stream === 'out') writes.push([w.firstEventNumber, w.lastEventNumber]);
    });
    const out = emitter(V1, [], 2);
    const g = ++group;
    out.emit([event('out', at(10), 'a', g), event('out', at(10), 'b', g), event('out', at(10), 'c', g), event('out', at(20), 'd'), event('out', at(30), 'e'), event('out', at(40), 'f')]);
    await out.drain();
    unsubscribe();
    expect(await data('out')).toEqual(['a', 'b', 'c', 'd', 'e', 'f']);
    // Batches of at most 2, except that a source event's three go together.
    expect(writes).toEqual([[0, 2], [3, 4], [5, 5]]);
  });

  it('writes events queued while a write of the same stream is finishing, and follow-ups', async () => {
    const out = emitter(V1);
    let tag = 0;
    const next = (): EmittedEvent => ({ ...event('out', at(++tag * 10), `e${tag}`), then: (n) => ({ stream: 'links', eventType: '$>', data: `${n}@out`, isJson: false, extra: null }) });
    // Each durable write of `out` queues the next event a few microtasks later: some of them land
    // after the writer saw its queue empty and before it let go of the stream.
    let delay = 0;
    const unsubscribe = db.onCommitted((w) => {
      if (w.stream !== 'out' || tag >= 60) return;
      let hops = delay++ % 12;
      const later = (): void => {
        if (hops-- > 0) queueMicrotask(later);
        else out.emit([next()]);
      };
      queueMicrotask(later);
    });
    out.emit([next()]);
    const settled = await Promise.race([
      (async () => {
        while (tag < 60) await new Promise((r) => setTimeout(r, 5));
        await out.drain();
        return 'drained';
      })(),
      new Promise((r) => setTimeout(() => r('stuck'), 5000)),
    ]);
    unsubscribe();
    expect(settled).toBe('drained');
    expect(out.pending).toBe(0);
    expect(await data('out')).toHaveLength(60);
    expect(await data('links')).toEqual(Array.from({ length: 60 }, (_, n) => `${n}@out`));
  });
});
