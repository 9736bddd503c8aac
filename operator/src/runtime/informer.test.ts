import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { ManualClock } from './clock.js';
import { FakeKubeApi } from './fake-kube-api.js';
import { Informer, type InformerEvent } from './informer.js';
import type { KubeObject } from './kube-api.js';
import { CONFIG_MAPS } from './resource-types.js';

const log = pino({ level: 'silent' });

function configMap(name: string, data: Record<string, string> = {}): KubeObject {
  return { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: 'ns' }, data };
}

async function settle(): Promise<void> {
  for (let i = 0; i < 20; i++) await new Promise((resolve) => setImmediate(resolve));
}

function setUp(options: { resyncPeriodMs?: number; relistPeriodMs?: number } = {}) {
  const api = new FakeKubeApi();
  const clock = new ManualClock(1_000_000);
  const events: [InformerEvent, string][] = [];
  const informer = new Informer({
    api,
    type: CONFIG_MAPS,
    clock,
    log,
    resyncPeriodMs: options.resyncPeriodMs ?? 0,
    relistPeriodMs: options.relistPeriodMs ?? 3_600_000,
    watchTimeoutSeconds: 60,
    retryBaseMs: 100,
    random: () => 0.5,
  });
  informer.on((event, object) => events.push([event, object.metadata.name ?? '']));
  return { api, clock, events, informer };
}

describe('Informer', () => {
  it('lists, then sees additions, changes and deletions through its watch', async () => {
    const { api, events, informer } = setUp();
    api.seed(CONFIG_MAPS, configMap('a'));
    informer.start();
    await informer.waitForSync();
    await settle();
    await api.create(CONFIG_MAPS, configMap('b'));
    await api.patch(CONFIG_MAPS, 'ns', 'a', { data: { x: '1' } });
    await api.delete(CONFIG_MAPS, 'ns', 'b');
    await settle();
    expect(events).toEqual([['add', 'a'], ['add', 'b'], ['update', 'a'], ['delete', 'b']]);
    expect(informer.get('ns/a')?.['data']).toEqual({ x: '1' });
    expect(informer.list().map((object) => object.metadata.name)).toEqual(['a']);
    await informer.stop();
  });

  it('re-opens a watch the server closed from the last version seen, missing nothing, without a re-list', async () => {
    const { api, clock, events, informer } = setUp();
    let lists = 0;
    const list = api.list.bind(api);
    api.list = async (...args) => {
      lists++;
      return list(...args);
    };
    informer.start();
    await informer.waitForSync();
    await settle();
    api.closeWatches();
    await api.create(CONFIG_MAPS, configMap('made-while-no-watch-was-open'));
    clock.advance(1000);
    await settle();
    expect(api.openWatches()).toBe(1);
    expect(events).toEqual([['add', 'made-while-no-watch-was-open']]);
    expect(lists).toBe(1);
    await informer.stop();
  });

  it('re-lists after 410 Gone and reports what disappeared meanwhile as deleted', async () => {
    const { api, clock, events, informer } = setUp();
    api.seed(CONFIG_MAPS, configMap('a'));
    api.seed(CONFIG_MAPS, configMap('b'));
    informer.start();
    await informer.waitForSync();
    await settle();
    api.closeWatches();
    // While no watch is open, b goes away and c appears; the old version is then compacted away.
    await api.delete(CONFIG_MAPS, 'ns', 'b');
    await api.create(CONFIG_MAPS, configMap('c'));
    api.expireVersions();
    clock.advance(1000);
    await settle();
    expect(events.slice(2).sort()).toEqual([['add', 'c'], ['delete', 'b']]);
    expect(informer.list().map((object) => object.metadata.name).sort()).toEqual(['a', 'c']);
    await informer.stop();
  });

  it('backs off and re-watches after a failed watch', async () => {
    const { api, clock, informer } = setUp();
    informer.start();
    await informer.waitForSync();
    await settle();
    api.failWatches(2);
    api.closeWatches();
    clock.advance(1000);
    await settle();
    expect(api.openWatches()).toBe(0);
    clock.advance(100);
    await settle();
    clock.advance(200);
    await settle();
    expect(api.openWatches()).toBe(1);
    await informer.stop();
  });

  it('re-lists when its watch stays silent past the timeout (a half-open connection)', async () => {
    const { api, clock, informer } = setUp();
    let lists = 0;
    const list = api.list.bind(api);
    api.list = async (...args) => {
      lists++;
      return list(...args);
    };
    informer.start();
    await informer.waitForSync();
    await settle();
    expect(lists).toBe(1);
    clock.advance(121_000);
    await settle();
    expect(lists).toBe(2);
    expect(api.openWatches()).toBe(1);
    await informer.stop();
  });

  it('keeps what its transform keeps of each object, listed or watched', async () => {
    const api = new FakeKubeApi();
    const clock = new ManualClock(1_000_000);
    const informer = new Informer({ api, type: CONFIG_MAPS, clock, log, resyncPeriodMs: 0, relistPeriodMs: 3_600_000, watchTimeoutSeconds: 60, retryBaseMs: 100, random: () => 0.5, transform: (object) => ({ ...object, data: {} }) });
    const events: [InformerEvent, string][] = [];
    informer.on((event, object) => events.push([event, object.metadata.name ?? '']));
    api.seed(CONFIG_MAPS, configMap('a', { secret: '1' }));
    informer.start();
    await informer.waitForSync();
    await settle();
    await api.patch(CONFIG_MAPS, 'ns', 'a', { data: { secret: '2' } });
    await settle();
    expect(events).toEqual([['add', 'a'], ['update', 'a']]);
    expect(informer.get('ns/a')?.['data']).toEqual({});
    await informer.stop();
  });

  it('hands every cached object to the handlers at each resync', async () => {
    const { api, clock, events, informer } = setUp({ resyncPeriodMs: 30_000 });
    api.seed(CONFIG_MAPS, configMap('a'));
    informer.start();
    await informer.waitForSync();
    await settle();
    clock.advance(30_000);
    await settle();
    expect(events).toEqual([['add', 'a'], ['resync', 'a']]);
    await informer.stop();
  });
});
