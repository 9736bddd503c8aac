/**
 * geteventstore-promise (an EventStoreDB HTTP client, a devDependency) used unchanged against a
 * real node: its projection calls (assert, getAllProjectionsInfo, getInfo with config, getState,
 * getResult, config, stop, start, reset, disableAll, enableAll, remove) and its reads of `$ce-`
 * streams, whose links resolve to the categorised events.
 */
import { randomUUID } from 'node:crypto';
import { EventFactory } from 'geteventstore-promise';
import { describe, expect, it } from 'vitest';
import { useGetEventStoreClient } from '../support/geteventstore-client.js';
import { httpClient } from '../support/http-client.js';
import { waitCaughtUp, waitFor } from '../support/projection-helpers.js';

const es = useGetEventStoreClient({ args: ['--run-projections', 'All', '--start-standard-projections'] });
const factory = new EventFactory();
const category = `gesp${randomUUID().slice(0, 6)}`;

const SOURCE = `fromCategory('${category}')
  .foreachStream()
  .when({
    $init: function () { return { items: 0 }; },
    ItemAdded: function (s, e) { s.items += e.body.quantity; }
  })
  .outputState()`;

async function infoStatus(name: string): Promise<string | undefined> {
  return ((await es.client.projections.getInfo(name)) as { status?: string } | undefined)?.status;
}

describe('geteventstore-promise projections', () => {
  it('asserts, lists, reads state, result and config of a projection', async () => {
    await es.client.writeEvents(`${category}-1`, [factory.newEvent('ItemAdded', { quantity: 2 }), factory.newEvent('ItemAdded', { quantity: 3 })]);
    await es.client.writeEvents(`${category}-2`, [factory.newEvent('ItemAdded', { quantity: 7 })]);
    const created = (await es.client.projections.assert('cart-items', SOURCE, 'continuous', true, true, true, true)) as unknown;
    expect(created).toEqual({ name: 'cart-items' });
    const all = (await es.client.projections.getAllProjectionsInfo()) as { projections: Array<{ name: string }> };
    expect(all.projections.map((p) => p.name)).toEqual(expect.arrayContaining(['cart-items', '$by_category']));
    await waitCaughtUp(httpClient(es.node.baseUrl), ['$by_category', 'cart-items']);
    expect(await es.client.projections.getState('cart-items', { partition: `${category}-1` })).toEqual({ items: 5 });
    expect(await es.client.projections.getResult('cart-items', { partition: `${category}-2` })).toEqual({ items: 7 });
    const info = (await es.client.projections.getInfo('cart-items', true)) as { status: string; mode: string; config: Record<string, unknown> };
    expect(info).toMatchObject({ status: 'Running', mode: 'Continuous' });
    expect(info.config).toMatchObject({ emitEnabled: true, trackEmittedStreams: true, checkpointHandledThreshold: 4000 });
    expect(await es.client.projections.config('cart-items')).toMatchObject({ maxWriteBatchLength: 500 });
  });

  it('updates the source through assert and stops, starts and resets', async () => {
    const updated = (await es.client.projections.assert('cart-items', SOURCE.replace('s.items += e.body.quantity', 's.items += 10 * e.body.quantity'), 'continuous', true, true, true, true)) as unknown;
    expect(updated).toEqual({ name: 'cart-items' });
    expect(await es.client.projections.stop('cart-items')).toEqual({ name: 'cart-items' });
    await waitFor('stopped', async () => ((await infoStatus('cart-items')) === 'Stopped' ? true : undefined));
    expect(await es.client.projections.start('cart-items')).toEqual({ name: 'cart-items' });
    expect(await es.client.projections.reset('cart-items')).toEqual({ name: 'cart-items' });
    await waitFor('the reset state', async () => {
      const state = (await es.client.projections.getState('cart-items', { partition: `${category}-1` })) as { items?: number };
      return state.items === 50 ? true : undefined;
    });
  });

  it('disables and enables every projection, then removes one', async () => {
    await es.client.projections.disableAll();
    await waitFor('all stopped', async () => {
      const all = (await es.client.projections.getAllProjectionsInfo()) as { projections: Array<{ status: string }> };
      return all.projections.every((p) => p.status.startsWith('Stopped') || p.status.startsWith('Completed')) ? true : undefined;
    });
    await es.client.projections.enableAll();
    await waitFor('all running', async () => {
      const all = (await es.client.projections.getAllProjectionsInfo()) as { projections: Array<{ status: string }> };
      return all.projections.every((p) => p.status === 'Running') ? true : undefined;
    });
    await es.client.projections.stop('cart-items');
    await waitFor('stopped', async () => ((await infoStatus('cart-items')) === 'Stopped' ? true : undefined));
    expect(await es.client.projections.remove('cart-items', true, true)).toEqual({ name: 'cart-items' });
    const all = (await es.client.projections.getAllProjectionsInfo()) as { projections: Array<{ name: string }> };
    expect(all.projections.map((p) => p.name)).not.toContain('cart-items');
  });
});

describe('geteventstore-promise reads of $ce- streams', () => {
  it('reads categorised events, resolved, in every way the client reads', async () => {
    const stream = `${category}-3`;
    await es.client.writeEvents(stream, [factory.newEvent('ItemAdded', { quantity: 1 }), factory.newEvent('ItemRemoved', { quantity: 1 })]);
    await waitCaughtUp(httpClient(es.node.baseUrl), ['$by_category']);
    const all = await es.client.getAllStreamEvents(`$ce-${category}`);
    expect(all.map((e) => [e.streamId, e.eventNumber, e.eventType, e.data])).toEqual([
      [`${category}-1`, 0, 'ItemAdded', { quantity: 2 }],
      [`${category}-1`, 1, 'ItemAdded', { quantity: 3 }],
      [`${category}-2`, 0, 'ItemAdded', { quantity: 7 }],
      [stream, 0, 'ItemAdded', { quantity: 1 }],
      [stream, 1, 'ItemRemoved', { quantity: 1 }],
    ]);
    const forward = await es.client.readEventsForward(`$ce-${category}`, 3, 10);
    expect(forward.events.map((e) => [e.streamId, e.eventNumber])).toEqual([[stream, 0], [stream, 1]]);
    expect(forward.isEndOfStream).toBe(true);
    const backward = await es.client.getEvents(`$ce-${category}`, undefined, 2, 'backward');
    expect(backward.map((e) => e.eventType)).toEqual(['ItemRemoved', 'ItemAdded']);
    const byType = await es.client.getEventsByType(`$ce-${category}`, ['ItemRemoved']);
    expect(byType.map((e) => e.data)).toEqual([{ quantity: 1 }]);
    const links = await es.client.readEventsForward(`$ce-${category}`, 0, 10, false, 'rich');
    expect(links.events.map((e) => e.eventType)).toEqual(['$>', '$>', '$>', '$>', '$>']);
  });
});
