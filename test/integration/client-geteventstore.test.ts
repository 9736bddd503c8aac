/**
 * The npm package geteventstore-promise (an EventStoreDB HTTP client), used unchanged against
 * a real node: proof that existing AtomPub clients work without modification.
 */
import { randomUUID } from 'node:crypto';
import { EventFactory } from 'geteventstore-promise';
import { describe, expect, it } from 'vitest';
import { useGetEventStoreClient } from '../support/geteventstore-client.js';

const es = useGetEventStoreClient();
const factory = new EventFactory();

function stream(prefix: string): string {
  return `${prefix}-${randomUUID().slice(0, 8)}`;
}

describe('geteventstore-promise HTTP client', () => {
  it('writes events and reads them back in both directions', async () => {
    const name = stream('client-rw');
    await es.client.writeEvent(name, 'TestEventType', { something: '123' }, { meta: 'data' });
    await es.client.writeEvents(name, [
      factory.newEvent('SecondType', { n: 2 }),
      factory.newEvent('ThirdType', { n: 3 }, { extra: true }),
    ]);
    const forward = await es.client.getEvents(name, 0, 10, 'forward');
    expect(forward.map((e) => e.eventType)).toEqual(['TestEventType', 'SecondType', 'ThirdType']);
    expect(forward.map((e) => e.eventNumber)).toEqual([0, 1, 2]);
    expect(forward[0]?.data).toEqual({ something: '123' });
    expect(forward[0]?.streamId).toBe(name);
    expect(forward[0]?.created).toBeTruthy();
    const backward = await es.client.getEvents(name, undefined, 2, 'backward');
    expect(backward.map((e) => e.eventNumber)).toEqual([2, 1]);
    const byType = await es.client.getEventsByType(name, ['SecondType']);
    expect(byType.map((e) => e.data)).toEqual([{ n: 2 }]);
  });

  it('reads a long stream in chunks to the end', async () => {
    const name = stream('client-chunks');
    const events = Array.from({ length: 55 }, (_, i) => factory.newEvent('Numbered', { i }));
    await es.client.writeEvents(name, events);
    const all = await es.client.getAllStreamEvents(name, 10);
    expect(all.map((e) => (e.data as { i: number }).i)).toEqual(
      Array.from({ length: 55 }, (_, i) => i),
    );
    const page = await es.client.readEventsForward(name, 50, 10);
    expect(page.isEndOfStream).toBe(true);
    expect(page.events.map((e) => e.eventNumber)).toEqual([50, 51, 52, 53, 54]);
    const head = await es.client.readEventsBackward(name, undefined, 5);
    expect(head.events.map((e) => e.eventNumber)).toEqual([54, 53, 52, 51, 50]);
  });

  it('checks existence, enforces expected versions, and deletes softly and hard', async () => {
    const name = stream('client-del');
    expect(await es.client.checkStreamExists(name)).toBe(false);
    await es.client.writeEvent(name, 'Created', { v: 1 }, undefined, { expectedVersion: -1 });
    expect(await es.client.checkStreamExists(name)).toBe(true);
    await expect(
      es.client.writeEvent(name, 'Again', { v: 2 }, undefined, { expectedVersion: -1 }),
    ).rejects.toMatchObject({
      response: {
        status: 400,
        statusText: 'Wrong expected EventNumber',
        headers: { 'es-currentversion': '0' },
      },
    });
    await es.client.writeEvent(name, 'Again', { v: 2 }, undefined, { expectedVersion: 0 });

    await es.client.deleteStream(name);
    expect(await es.client.checkStreamExists(name)).toBe(false);
    await expect(es.client.deleteStream(name)).rejects.toThrow('Stream does not exist');

    const hard = stream('client-hard');
    await es.client.writeEvent(hard, 'Created', { v: 1 });
    await es.client.deleteStream(hard, true);
    await expect(es.client.checkStreamExists(hard)).rejects.toMatchObject({
      response: { status: 410 },
    });
    await expect(es.client.writeEvent(hard, 'Nope', { v: 1 })).rejects.toMatchObject({
      response: { status: 410 },
    });
  });

  it('is rejected with 401 for wrong credentials', async () => {
    const wrong = es.clientAs('admin', 'wrong');
    await expect(wrong.writeEvent(stream('client-401'), 'T', { a: 1 })).rejects.toMatchObject({
      response: { status: 401 },
    });
  });
});
