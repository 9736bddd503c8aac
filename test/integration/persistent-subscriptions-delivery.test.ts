/**
 * Competing-consumer semantics on a real node: consumers on their own connections pulling and
 * acknowledging over HTTP. Every event delivered and acknowledged exactly once across two
 * consumers; redelivery after the message timeout with a retry count; parking (by nack and
 * after maxRetryCount) with the reason, replay of parked messages; the consumer strategies;
 * maxSubscriberCount; checkpoints; startFrom; resolveLinkTos; update and delete; long polls.
 */
import { afterEach, describe, expect, it } from 'vitest';

import {
  appendNumbered,
  CompetingConsumer,
  createGroup,
  eventually,
  groupInfo,
  type CompetingEntry,
} from '../support/competing-consumer.js';
import { uniqueStream } from '../support/http-client.js';
import { useNode } from '../support/use-node.js';

const running = useNode();
const http = running.http;
const consumers: CompetingConsumer[] = [];

function consumer(stream: string, group: string): CompetingConsumer {
  const created = new CompetingConsumer(running.node.baseUrl, stream, group);
  consumers.push(created);
  return created;
}

afterEach(async () => {
  await Promise.all(consumers.splice(0).map((c) => c.close()));
});

/** The stream's own entries: links (the parked stream's) as links, not the events they point to. */
async function readStream(stream: string, embed = 'tryharder'): Promise<Record<string, any>[]> {
  const response = await http('GET', `/streams/${encodeURIComponent(stream)}/0/forward/1000?embed=${embed}`, {
    headers: { accept: 'application/vnd.eventstore.atom+json', 'ES-ResolveLinkTos': 'false' },
  });
  if (response.status === 404) return [];
  expect(response.status).toBe(200);
  return (response.json().entries as Record<string, any>[]).reverse();
}

/** The checkpoint stream's last value, or undefined when none was written. */
async function checkpointOf(stream: string, group: string): Promise<number | undefined> {
  const entries = await readStream(`$persistentsubscription-${stream}::${group}-checkpoint`);
  const last = entries[entries.length - 1];
  return last === undefined ? undefined : Number(JSON.parse(last.data));
}

describe('competing consumers', () => {
  it('two consumers share 10,000 events: each delivered and acknowledged exactly once, none lost', async () => {
    const stream = uniqueStream('ps-10k');
    const total = 10_000;
    await appendNumbered(running.node.baseUrl, stream, total);
    await createGroup(running.node.baseUrl, stream, 'workers');
    const delivered = new Map<number, string[]>();
    const acked = new Map<string, number>();
    const work = async (name: string, worker: CompetingConsumer): Promise<void> => {
      const deadline = Date.now() + 120_000;
      let idle = 0;
      while (Date.now() < deadline && idle < 20) {
        const result = await worker.pull(50);
        expect(result.status).toBe(200);
        if (result.entries.length === 0) {
          idle += 1;
          await new Promise((r) => setTimeout(r, 20));
          continue;
        }
        idle = 0;
        for (const entry of result.entries) {
          delivered.set(entry.eventNumber, [...(delivered.get(entry.eventNumber) ?? []), name]);
          expect(entry.retryCount).toBe(0);
        }
        await worker.ackAll(result);
        for (const entry of result.entries) acked.set(entry.messageId, (acked.get(entry.messageId) ?? 0) + 1);
      }
    };
    await Promise.all([work('a', consumer(stream, 'workers')), work('b', consumer(stream, 'workers'))]);
    expect(delivered.size).toBe(total);
    for (let n = 0; n < total; n++) expect(delivered.get(n)?.length, `event ${n}`).toBe(1);
    expect(acked.size).toBe(total);
    expect([...acked.values()].every((count) => count === 1)).toBe(true);
    const byA = [...delivered.values()].filter((names) => names[0] === 'a').length;
    expect(byA).toBeGreaterThan(total / 10);
    expect(byA).toBeLessThan(total - total / 10);
    const info = await eventually(async () => {
      const current = await groupInfo(running.node.baseUrl, stream, 'workers');
      return current.lastCheckpointedEventPosition === String(total - 1) ? current : undefined;
    }, 'the checkpoint at the last event');
    expect(info).toMatchObject({ totalItemsProcessed: total, outstandingMessagesCount: 0, status: 'Live' });
    expect(await checkpointOf(stream, 'workers')).toBe(total - 1);
  });

  it('a consumer that never acknowledges sees its messages go to another after the timeout', async () => {
    const stream = uniqueStream('ps-timeout');
    await appendNumbered(running.node.baseUrl, stream, 10);
    await createGroup(running.node.baseUrl, stream, 'g', { messageTimeoutMilliseconds: 1000 });
    const silent = consumer(stream, 'g');
    const worker = consumer(stream, 'g');
    const taken = await silent.pull(4);
    expect(taken.entries.map((e) => e.eventNumber)).toEqual([0, 1, 2, 3]);
    const rest = await worker.pull(100);
    expect(rest.entries.map((e) => e.eventNumber)).toEqual([4, 5, 6, 7, 8, 9]);
    await worker.ackAll(rest);
    expect((await worker.pull(100)).entries).toEqual([]);
    const redelivered = await eventually(async () => {
      const result = await worker.pull(100);
      return result.entries.length > 0 ? result : undefined;
    }, 'redelivery');
    expect(redelivered.entries.map((e) => [e.eventNumber, e.retryCount])).toEqual([
      [0, 1],
      [1, 1],
      [2, 1],
      [3, 1],
    ]);
    // The first delivery's ids are the same messages: acknowledging them now settles them.
    expect(redelivered.entries.map((e) => e.messageId)).toEqual(taken.entries.map((e) => e.messageId));
    await worker.ackAll(redelivered);
    const info = await groupInfo(running.node.baseUrl, stream, 'g');
    expect(info.outstandingMessagesCount).toBe(0);
    expect(info.totalItemsProcessed).toBe(14);
  });

  it('parks a message after maxRetryCount timeouts, with the reason; replayParked delivers it again', async () => {
    const stream = uniqueStream('ps-retries');
    await appendNumbered(running.node.baseUrl, stream, 2);
    await createGroup(running.node.baseUrl, stream, 'g', { messageTimeoutMilliseconds: 300, maxRetryCount: 1 });
    const worker = consumer(stream, 'g');
    const first = await worker.pull(1);
    expect(first.entries.map((e) => [e.eventNumber, e.retryCount])).toEqual([[0, 0]]);
    await worker.ackAll(await worker.pull(1)); // event 1 done
    const retried = await eventually(async () => {
      const r = await worker.pull(1);
      return r.entries.length > 0 ? r : undefined;
    }, 'the retry');
    expect(retried.entries.map((e) => [e.eventNumber, e.retryCount])).toEqual([[0, 1]]);
    const parked = await eventually(async () => {
      const entries = await readStream(`$persistentsubscription-${stream}::g-parked`);
      return entries.length > 0 ? entries : undefined;
    }, 'the parked message');
    expect(parked).toHaveLength(1);
    expect(parked[0]?.summary).toBe('$>');
    expect(JSON.parse(parked[0]?.metaData)).toMatchObject({ reason: 'Reached retry count of 1', subscriptionEventNumber: 0 });
    expect((await worker.pull(10)).entries).toEqual([]);
    expect((await groupInfo(running.node.baseUrl, stream, 'g')).parkedMessageCount).toBe(1);
    expect((await http('POST', `/subscriptions/${stream}/g/replayParked`)).status).toBe(200);
    const replayed = await eventually(async () => {
      const r = await worker.pull(10, { embed: 'rich' });
      return r.entries.length > 0 ? r : undefined;
    }, 'the replayed message');
    expect(replayed.entries.map((e) => [e.eventNumber, e.retryCount, e.stream])).toEqual([[0, 0, stream]]);
    expect(replayed.entries[0]?.eventId).toBe(first.entries[0]?.messageId);
    await worker.ackAll(replayed);
    const info = await groupInfo(running.node.baseUrl, stream, 'g');
    expect(info.parkedMessageCount).toBe(0);
    expect(info.outstandingMessagesCount).toBe(0);
  });

  it('nack Park → parked stream with the reason → replayParked (stopAt) → delivered again', async () => {
    const stream = uniqueStream('ps-park');
    await appendNumbered(running.node.baseUrl, stream, 4);
    await createGroup(running.node.baseUrl, stream, 'g');
    const worker = consumer(stream, 'g');
    const result = await worker.pull(4);
    expect(await worker.nack(result.entries.slice(0, 3), 'Park')).toBe(202);
    expect(await worker.post(result.entries[3]?.ackUri ?? '')).toBe(202);
    const parkedStream = `$persistentsubscription-${stream}::g-parked`;
    const parked = await eventually(async () => {
      const entries = await readStream(parkedStream);
      return entries.length === 3 ? entries : undefined;
    }, 'three parked messages');
    expect(parked.map((e) => e.title)).toEqual([`0@${parkedStream}`, `1@${parkedStream}`, `2@${parkedStream}`]);
    expect(JSON.parse(parked[0]?.metaData).reason).toBe("Client explicitly NAK'ed message.\nNacked from HTTP");
    expect(parked.map((e) => e.data)).toEqual([`0@${stream}`, `1@${stream}`, `2@${stream}`]);
    expect((await groupInfo(running.node.baseUrl, stream, 'g')).parkedMessageCount).toBe(3);
    // Replay the first two only.
    expect((await http('POST', `/subscriptions/${stream}/g/replayParked?stopAt=2`)).status).toBe(200);
    const replayed: CompetingEntry[] = [];
    await eventually(async () => {
      const r = await worker.pull(10);
      replayed.push(...r.entries);
      await worker.ackAll(r);
      return replayed.length >= 2 ? true : undefined;
    }, 'two replayed messages');
    expect(replayed.map((e) => e.eventNumber)).toEqual([0, 1]);
    expect(replayed.every((e) => e.summary === '$>')).toBe(true);
    const info = await eventually(async () => {
      const current = await groupInfo(running.node.baseUrl, stream, 'g');
      return current.parkedMessageCount === 1 ? current : undefined;
    }, 'one parked message left');
    expect(info.status).toBe('Live');
    expect((await readStream(parkedStream)).map((e) => e.data)).toEqual([`2@${stream}`]);
    const metadata = await http('GET', `/streams/${encodeURIComponent(parkedStream)}/metadata`, {
      headers: { accept: 'application/json' },
    });
    expect(metadata.json()).toMatchObject({ $tb: 2, $acl: { $r: '$admins' } });
  });

  it('nack Retry redelivers with retryCount + 1, Skip drops, Stop redelivers to others', async () => {
    const stream = uniqueStream('ps-nack');
    await appendNumbered(running.node.baseUrl, stream, 3);
    await createGroup(running.node.baseUrl, stream, 'g');
    const worker = consumer(stream, 'g');
    const result = await worker.pull(3);
    const [e0, e1, e2] = result.entries;
    expect(await worker.nack([e0!], 'Retry')).toBe(202);
    expect(await worker.nack([e1!], 'skip')).toBe(202);
    expect(await worker.nack([e2!], 'stop')).toBe(202);
    const other = consumer(stream, 'g');
    const again = await other.pull(10);
    expect(again.entries.map((e) => [e.eventNumber, e.retryCount])).toEqual([
      [0, 1],
      [2, 1],
    ]);
  });
});

describe('consumer strategies and limits', () => {
  it('DispatchToSingle: the first consumer gets everything while it is there', async () => {
    const stream = uniqueStream('ps-single');
    await appendNumbered(running.node.baseUrl, stream, 30);
    await createGroup(running.node.baseUrl, stream, 'g', { namedConsumerStrategy: 'DispatchToSingle' });
    const first = consumer(stream, 'g');
    const second = consumer(stream, 'g');
    const a = await first.pull(10);
    expect(a.entries).toHaveLength(10);
    expect((await second.pull(10)).entries).toEqual([]);
    await first.ackAll(a);
    expect((await first.pull(10)).entries.map((e) => e.eventNumber)).toEqual([10, 11, 12, 13, 14, 15, 16, 17, 18, 19]);
    expect((await second.pull(10)).entries).toEqual([]);
    await first.close(); // its connection closes: the next consumer takes over
    const taken = await eventually(async () => {
      const r = await second.pull(10);
      return r.entries.length > 0 ? r : undefined;
    }, 'the second consumer taking over');
    expect(taken.entries.map((e) => e.eventNumber)).toEqual([20, 21, 22, 23, 24, 25, 26, 27, 28, 29]);
  });

  it('Pinned: events of one source stream always go to the same consumer', async () => {
    const stream = uniqueStream('ps-pinned');
    await createGroup(running.node.baseUrl, stream, 'g', { namedConsumerStrategy: 'Pinned', resolveLinkTos: true });
    const workers = await joinTwo(stream);
    const sources = Array.from({ length: 16 }, (_, i) => `${stream}-src-${i}`);
    // Links to events of 16 source streams, 4 each, interleaved.
    const links = [];
    for (let round = 0; round < 4; round++) {
      for (const source of sources) {
        await appendNumbered(running.node.baseUrl, source, 1, { from: round });
        links.push({ eventId: crypto.randomUUID(), eventType: '$>', data: `${round}@${source}` });
      }
    }
    await appendLinks(stream, links);
    const owner = await drainPinned(workers, links.length, (entry) => entry.stream);
    expect(owner.size).toBe(16);
    expect(new Set(owner.values()).size).toBe(2);
  });

  it('PinnedByCorrelation: events with the same $correlationId go to the same consumer', async () => {
    const stream = uniqueStream('ps-correlation');
    await createGroup(running.node.baseUrl, stream, 'g', { namedConsumerStrategy: 'PinnedByCorrelation' });
    const workers = await joinTwo(stream);
    await appendNumbered(running.node.baseUrl, stream, 40, {
      metadata: (i) => ({ $correlationId: `c-${i % 8}` }),
    });
    const owner = await drainPinned(
      workers,
      40,
      (entry) => JSON.parse(String(entry.raw.metaData)).$correlationId as string,
    );
    expect(owner.size).toBe(8);
    expect(new Set(owner.values()).size).toBe(2);
  });

  it('maxSubscriberCount bounds consumers (user + connection); a closed connection frees its place', async () => {
    const stream = uniqueStream('ps-max');
    await appendNumbered(running.node.baseUrl, stream, 5);
    await createGroup(running.node.baseUrl, stream, 'g', { maxSubscriberCount: 1 });
    const first = consumer(stream, 'g');
    const second = consumer(stream, 'g');
    expect((await first.pull(1)).status).toBe(200);
    expect((await first.pull(1)).status).toBe(200); // the same connection is the same consumer
    const refused = await second.pull(1);
    expect(refused.status).toBe(400);
    // The message in the type the consumer accepts (competing JSON).
    expect(JSON.parse(refused.text).message).toBe('Maximum subscriptions reached');
    const info = await groupInfo(running.node.baseUrl, stream, 'g');
    expect(info.connections).toHaveLength(1);
    expect(info.connections[0]).toMatchObject({ username: 'admin', inFlightMessages: 2, availableSlots: 498 });
    expect(info.connections[0].from).toMatch(/^127\.0\.0\.1:\d+$/);
    await first.close();
    const admitted = await eventually(async () => {
      const r = await second.pull(5);
      return r.status === 200 ? r : undefined;
    }, 'the second consumer admitted');
    expect(admitted.entries.map((e) => e.eventNumber)).toEqual([2, 3, 4]);
  });
});

describe('positions, checkpoints, links, changes', () => {
  it('startFrom 0, N and -1 (only events written after the group started)', async () => {
    const stream = uniqueStream('ps-start');
    await appendNumbered(running.node.baseUrl, stream, 5);
    await createGroup(running.node.baseUrl, stream, 'zero', { startFrom: 0 });
    await createGroup(running.node.baseUrl, stream, 'three', { startFrom: 3 });
    await createGroup(running.node.baseUrl, stream, 'live', { startFrom: -1 });
    await appendNumbered(running.node.baseUrl, stream, 2, { from: 5 });
    const pull = async (group: string) =>
      (
        await eventually(async () => {
          const r = await consumer(stream, group).pull(100);
          return r.entries.length > 0 ? r : undefined;
        }, group)
      ).entries.map((e) => e.eventNumber);
    expect(await pull('zero')).toEqual([0, 1, 2, 3, 4, 5, 6]);
    expect(await pull('three')).toEqual([3, 4, 5, 6]);
    expect(await pull('live')).toEqual([5, 6]);
  });

  it('a long poll (ES-LongPoll) answers as soon as an event is written', async () => {
    const stream = uniqueStream('ps-longpoll');
    await createGroup(running.node.baseUrl, stream, 'g');
    const worker = consumer(stream, 'g');
    const started = Date.now();
    const waiting = worker.pull(10, { longPollSeconds: 10 });
    await new Promise((r) => setTimeout(r, 300));
    await appendNumbered(running.node.baseUrl, stream, 1);
    const result = await waiting;
    expect(result.entries.map((e) => e.eventNumber)).toEqual([0]);
    expect(Date.now() - started).toBeLessThan(5_000);
    const empty = await worker.pull(10, { longPollSeconds: 1 });
    expect(empty.entries).toEqual([]);
  });

  it('checkpoints: forced at maxCheckPointCount, by time once minCheckPointCount are done, never past an unacknowledged message', async () => {
    const stream = uniqueStream('ps-checkpoint');
    await appendNumbered(running.node.baseUrl, stream, 30);
    // Time checks never write (minCheckPointCount not reached): only the count forces one.
    await createGroup(running.node.baseUrl, stream, 'count', {
      checkPointAfterMilliseconds: 600_000,
      minCheckPointCount: 100,
      maxCheckPointCount: 10,
    });
    const worker = consumer(stream, 'count');
    const first = await worker.pull(9);
    await worker.ackAll(first);
    await new Promise((r) => setTimeout(r, 300));
    expect(await checkpointOf(stream, 'count')).toBeUndefined();
    const next = await worker.pull(3);
    await worker.ackAll(next); // 12 done: forced at 10 done since the last
    expect(await eventually(() => checkpointOf(stream, 'count'), 'a checkpoint')).toBe(11);
    const checkpointMeta = await http(
      'GET',
      `/streams/${encodeURIComponent(`$persistentsubscription-${stream}::count-checkpoint`)}/metadata`,
      { headers: { accept: 'application/json' } },
    );
    expect(checkpointMeta.json()).toMatchObject({ $maxCount: 2, $acl: { $mr: '$all', $w: '$admins' } });

    await createGroup(running.node.baseUrl, stream, 'time', {
      checkPointAfterMilliseconds: 200,
      minCheckPointCount: 5,
      maxCheckPointCount: 1000,
    });
    const timed = consumer(stream, 'time');
    const batch = await timed.pull(20);
    // Acknowledge all but event 6: the checkpoint stops at 5.
    for (const entry of batch.entries) if (entry.eventNumber !== 6) await timed.post(entry.ackUri);
    expect(await eventually(() => checkpointOf(stream, 'time'), 'a timed checkpoint')).toBe(5);
    await new Promise((r) => setTimeout(r, 400));
    expect(await checkpointOf(stream, 'time')).toBe(5);
    await timed.post(batch.entries.find((e) => e.eventNumber === 6)?.ackUri ?? '');
    expect(await eventually(async () => ((await checkpointOf(stream, 'time')) === 19 ? 19 : undefined), 'checkpoint 19')).toBe(19);
  });

  it('resolveLinkTos: messages carry the linked events (ids of the links); without it, the links', async () => {
    const source = uniqueStream('ps-source');
    const linkStream = uniqueStream('ps-links');
    await appendNumbered(running.node.baseUrl, source, 3);
    const linkIds = [crypto.randomUUID(), crypto.randomUUID()];
    await appendLinks(linkStream, [
      { eventId: linkIds[0]!, eventType: '$>', data: `2@${source}` },
      { eventId: linkIds[1]!, eventType: '$>', data: `0@${source}` },
    ]);
    await createGroup(running.node.baseUrl, linkStream, 'resolved', { resolveLinkTos: true });
    await createGroup(running.node.baseUrl, linkStream, 'raw', { resolveLinkTos: false });
    const resolved = await consumer(linkStream, 'resolved').pull(10, { embed: 'body' });
    expect(resolved.entries.map((e) => [e.eventNumber, e.stream, e.messageId])).toEqual([
      [2, source, linkIds[0]],
      [0, source, linkIds[1]],
    ]);
    expect(resolved.entries[0]?.raw).toMatchObject({ eventType: 'Numbered', data: '{\n  "i": 2\n}', positionStreamId: linkStream, positionEventNumber: 0 });
    const raw = await consumer(linkStream, 'raw').pull(10);
    expect(raw.entries.map((e) => [e.eventNumber, e.stream, e.summary, e.messageId])).toEqual([
      [0, linkStream, '$>', linkIds[0]],
      [1, linkStream, '$>', linkIds[1]],
    ]);
  });

  it('update drops the consumers and restarts from the checkpoint; delete removes the group and its state', async () => {
    const stream = uniqueStream('ps-change');
    await appendNumbered(running.node.baseUrl, stream, 6);
    await createGroup(running.node.baseUrl, stream, 'g', { minCheckPointCount: 1, maxCheckPointCount: 2 });
    const worker = consumer(stream, 'g');
    const acked = await worker.pull(2);
    await worker.ackAll(acked);
    expect(await eventually(() => checkpointOf(stream, 'g'), 'checkpoint')).toBe(1);
    const inFlight = await worker.pull(2);
    expect(inFlight.entries.map((e) => e.eventNumber)).toEqual([2, 3]);
    expect((await groupInfo(running.node.baseUrl, stream, 'g')).connections).toHaveLength(1);
    const updated = await http('POST', `/subscriptions/${stream}/g`, {
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ minCheckPointCount: 1, maxCheckPointCount: 2, messageTimeoutMilliseconds: 5000 }),
    });
    expect(updated.status).toBe(200);
    const info = await groupInfo(running.node.baseUrl, stream, 'g');
    expect(info.connections).toEqual([]);
    expect(info.config.messageTimeoutMilliseconds).toBe(5000);
    // Reset: the messages in flight come again at once, as new (from the checkpoint).
    const again = await worker.pull(10);
    expect(again.entries.map((e) => [e.eventNumber, e.retryCount])).toEqual([
      [2, 0], [3, 0], [4, 0], [5, 0],
    ]);
    await worker.nack(again.entries.slice(0, 1), 'park');
    await eventually(async () => ((await readStream(`$persistentsubscription-${stream}::g-parked`)).length === 1 ? true : undefined), 'parked');

    expect((await http('DELETE', `/subscriptions/${stream}/g`)).status).toBe(200);
    for (const state of ['checkpoint', 'parked']) {
      const response = await http('GET', `/streams/${encodeURIComponent(`$persistentsubscription-${stream}::g-${state}`)}`, {
        headers: { accept: 'application/vnd.eventstore.atom+json' },
      });
      expect(response.status, state).toBe(404);
    }
    expect((await worker.pull(1)).status).toBe(404);
    const config = await http('GET', '/streams/%24persistentSubscriptionConfig/head', { headers: { accept: 'application/json' } });
    expect(JSON.stringify(config.json().entries)).not.toContain(stream);
    // Created again, the group starts afresh.
    await createGroup(running.node.baseUrl, stream, 'g');
    const fresh = await worker.pull(10);
    expect(fresh.entries.map((e) => e.eventNumber)).toEqual([0, 1, 2, 3, 4, 5]);
    expect((await groupInfo(running.node.baseUrl, stream, 'g')).parkedMessageCount).toBe(0);
  });
});

type Workers = readonly (readonly [string, CompetingConsumer])[];

/** Two consumers of group `g` that have joined it (an empty pull each). */
async function joinTwo(stream: string): Promise<Workers> {
  const workers = [
    ['a', consumer(stream, 'g')],
    ['b', consumer(stream, 'g')],
  ] as const;
  for (const [, worker] of workers) expect((await worker.pull(1)).entries).toEqual([]);
  return workers;
}

/**
 * The consumers pull and acknowledge until `total` messages came; asserts each key always
 * went to the same consumer and answers the owner of each key.
 */
async function drainPinned(
  workers: Workers,
  total: number,
  keyOf: (entry: CompetingEntry) => string,
): Promise<Map<string, string>> {
  const owner = new Map<string, string>();
  let count = 0;
  await eventually(async () => {
    for (const [name, worker] of workers) {
      const r = await worker.pull(20, { embed: 'body' });
      for (const entry of r.entries) {
        const key = keyOf(entry);
        expect(owner.get(key) ?? name, key).toBe(name);
        owner.set(key, name);
        count += 1;
      }
      await worker.ackAll(r);
    }
    return count >= total ? true : undefined;
  }, 'every message');
  expect(count).toBe(total);
  return owner;
}

async function appendLinks(stream: string, links: { eventId: string; eventType: string; data: string }[]): Promise<void> {
  const response = await http('POST', `/streams/${encodeURIComponent(stream)}`, {
    headers: { 'content-type': 'application/vnd.eventstore.events+json' },
    body: JSON.stringify(links),
  });
  expect(response.status).toBe(201);
}
