/**
 * Projections under SIGKILL: a real node runs the system projections and a partitioned user
 * projection that emits, while a client appends; the node is killed with SIGKILL at random
 * moments and restarted several times. Once everything has caught up and the node has stopped,
 * the data directory is opened and checked: every `$ce-`, `$et-`, `$streams` and
 * `$category-` stream holds exactly one link per source event, in log order (none duplicated,
 * none missing), and the user projection emitted exactly one event per source event with its
 * partition's running count (its partition states survived the restarts).
 */
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { RecordedEvent } from '../../node/src/storage/event-db-types.js';
import { engineOptions, openTestEngine } from '../support/engine-fixture.js';
import { appendEvents, httpClient, type Http } from '../support/http-client.js';
import { startNode, tempDir, type NodeProcess } from '../support/node-process.js';
import { createProjection, waitCaughtUp, waitFor } from '../support/projection-helpers.js';

const KILLS = 6;
const CATEGORIES = ['cat0', 'cat1', 'cat2'];
const STREAMS_PER_CATEGORY = 12;
const TYPES = ['Opened', 'Changed', 'Closed'];
const SYSTEM = ['$by_category', '$by_event_type', '$streams', '$stream_by_category'];

const TALLY = `fromCategory('cat0')
  .foreachStream()
  .when({
    $init: function () { return { n: 0 }; },
    $any: function (s, e) {
      s.n += 1;
      emit('tally-' + e.streamId, 'Counted', { n: s.n, source: e.sequenceNumber });
    }
  })`;

function nodeArgs(dir: string): string[] {
  return ['--db', path.join(dir, 'db'), '--index', path.join(dir, 'index'), '--run-projections', 'All', '--start-standard-projections'];
}

/** Appends batches from a few connections until the node stops answering (it was killed). */
async function appendUntilDead(http: Http, stop: { dead: boolean }): Promise<number> {
  let written = 0;
  const writer = async (): Promise<void> => {
    while (!stop.dead) {
      const category = CATEGORIES[Math.floor(Math.random() * CATEGORIES.length)] as string;
      const stream = `${category}-${Math.floor(Math.random() * STREAMS_PER_CATEGORY)}`;
      const events = Array.from({ length: 1 + Math.floor(Math.random() * 8) }, () => ({
        eventId: randomUUID(),
        eventType: TYPES[Math.floor(Math.random() * TYPES.length)],
        data: { at: Date.now() },
      }));
      try {
        const res = await appendEvents(http, stream, events);
        if (res.status === 201) written += events.length;
      } catch {
        return;
      }
    }
  };
  await Promise.all([writer(), writer(), writer(), writer()]);
  return written;
}

async function runAndKill(dir: string, killAfterMs: number, setUp?: (http: Http) => Promise<void>): Promise<number> {
  const node = await startNode({ memDb: false, args: nodeArgs(dir) });
  const http = httpClient(node.baseUrl);
  if (setUp !== undefined) await setUp(http);
  const stop = { dead: false };
  const load = appendUntilDead(http, stop);
  await new Promise((r) => setTimeout(r, killAfterMs));
  node.child.kill('SIGKILL');
  await node.exited();
  stop.dead = true;
  return load;
}

async function readStream(db: Awaited<ReturnType<typeof openTestEngine>>, stream: string): Promise<RecordedEvent[]> {
  const out: RecordedEvent[] = [];
  let from = 0;
  for (;;) {
    const page = await db.readStream(stream, from, 4096, 'forward');
    if (page.kind !== 'success') return out;
    out.push(...page.events);
    if (page.isEndOfStream || page.events.length === 0) return out;
    from = page.nextEventNumber;
  }
}

describe('projections under SIGKILL', () => {
  it(`keep links and emitted events exactly once across ${KILLS} kills`, async () => {
    const { path: dir, remove } = tempDir('edb-proj-crash-');
    try {
      let written = 0;
      written += await runAndKill(dir, 1500, async (http) => {
        await createProjection(http, 'continuous', 'tally', TALLY, { emit: 'yes' });
        // Checkpoint often, so restarts begin from checkpoints and partition states.
        expect((await http('POST', '/projection/tally/command/disable')).status).toBe(200);
        const config = await http('PUT', '/projection/tally/config', {
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ emitEnabled: true, checkpointHandledThreshold: 50, checkpointUnhandledBytesThreshold: 100_000 }),
        });
        expect(config.status, config.text).toBe(200);
        expect((await http('POST', '/projection/tally/command/enable')).status).toBe(200);
      });
      for (let round = 1; round < KILLS; round++) written += await runAndKill(dir, 800 + Math.floor(Math.random() * 2000));
      expect(written).toBeGreaterThan(300);

      const node: NodeProcess = await startNode({ memDb: false, args: nodeArgs(dir) });
      const http = httpClient(node.baseUrl);
      await waitFor('the projections to run', async () => ((await http('GET', '/projection/tally')).status === 200 ? true : undefined));
      await waitCaughtUp(http, [...SYSTEM, 'tally'], 120_000);
      expect(await node.stop()).toBe(0);

      // The node's own defaults, so the files open as they were written.
      const db = await openTestEngine(
        engineOptions(dir, { chunkSizeBytes: 268_435_456, maxMemTableSize: 1_000_000, streamExistenceFilterSizeBytes: 33_554_432 }),
      );
      try {
        const all = await db.readAll(undefined, 10_000_000, 'forward');
        const sources = all.events.filter((e) => /^cat\d-\d+$/.test(e.stream));
        expect(sources.length).toBeGreaterThanOrEqual(written);
        const link = (e: RecordedEvent): string => `${e.eventNumber}@${e.stream}`;
        const dataOf = (events: RecordedEvent[]): string[] => events.map((e) => e.data.toString('utf8'));

        for (const category of CATEGORIES) {
          const expected = sources.filter((e) => e.stream.startsWith(`${category}-`)).map(link);
          expect(dataOf(await readStream(db, `$ce-${category}`)), `$ce-${category}`).toEqual(expected);
        }
        for (const type of TYPES) {
          const expected = sources.filter((e) => e.eventType === type).map(link);
          expect(dataOf(await readStream(db, `$et-${type}`)), `$et-${type}`).toEqual(expected);
        }
        const firsts = sources.filter((e) => e.eventNumber === 0);
        const streamsLinks = dataOf(await readStream(db, '$streams'));
        expect(new Set(streamsLinks).size, '$streams has no duplicate').toBe(streamsLinks.length);
        expect(streamsLinks.filter((l) => /@cat\d-/.test(l))).toEqual(firsts.map(link));
        for (const category of CATEGORIES) {
          const expected = firsts.filter((e) => e.stream.startsWith(`${category}-`)).map((e) => e.stream);
          expect(dataOf(await readStream(db, `$category-${category}`)), `$category-${category}`).toEqual(expected);
        }

        const perStream = new Map<string, RecordedEvent[]>();
        for (const e of sources.filter((s) => s.stream.startsWith('cat0-'))) perStream.set(e.stream, [...(perStream.get(e.stream) ?? []), e]);
        expect(perStream.size).toBeGreaterThan(0);
        for (const [stream, events] of perStream) {
          const tally = (await readStream(db, `tally-${stream}`)).map((e) => JSON.parse(e.data.toString('utf8')) as { n: number; source: number });
          expect(tally, `tally-${stream}`).toEqual(events.map((e, i) => ({ n: i + 1, source: e.eventNumber })));
        }
      } finally {
        await db.close();
      }
    } finally {
      remove();
    }
  });
});
