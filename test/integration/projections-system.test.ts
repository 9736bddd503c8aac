/**
 * The five system projections on a real node (--run-projections System
 * --start-standard-projections) fill `$ce-`, `$et-`, `$streams`, `$category-` and `$bc-` as the
 * original does, and reads resolve `$>` links by default (stream and single-event reads) unless
 * `ES-ResolveLinkTos: false`. With RunProjections System user projections stay stopped; without
 * `--start-standard-projections` the system projections exist but are stopped; with None the
 * subsystem is off.
 */
import { describe, expect, it } from 'vitest';
import { appendEvents, newEvent, uniqueStream, type Http } from '../support/http-client.js';
import { createProjection, readRawStream, statistics, waitCaughtUp, waitFor } from '../support/projection-helpers.js';
import { useNode } from '../support/use-node.js';

const SYSTEM = ['$streams', '$stream_by_category', '$by_category', '$by_event_type', '$by_correlation_id'];
const ATOM = 'application/vnd.eventstore.atom+json';

interface Entry {
  title: string;
  summary: string;
  eventNumber?: number;
  eventType?: string;
  streamId?: string;
  data?: string;
  linkMetaData?: string;
  positionEventNumber?: number;
  positionStreamId?: string;
}

async function feed(http: Http, path: string, headers: Record<string, string> = {}): Promise<Entry[]> {
  const res = await http('GET', path, { headers: { accept: ATOM, ...headers } });
  expect(res.status, `${path}: ${res.text}`).toBe(200);
  return res.json<{ entries: Entry[] }>().entries;
}

describe('system projections (RunProjections System, started)', () => {
  const running = useNode({ args: ['--run-projections', 'System', '--start-standard-projections'] });
  const http = running.http;
  const category = `shop${Math.random().toString(36).slice(2, 8)}`;
  const cart1 = `${category}-1`;
  const cart2 = `${category}-2`;
  const type = `Added${Math.random().toString(36).slice(2, 8)}`;
  const correlation = `corr-${Math.random().toString(36).slice(2, 8)}`;

  it('run from the start and fill $ce-, $et-, $streams, $category- and $bc-', async () => {
    for (const name of SYSTEM) expect((await statistics(http, name)).status).toBe('Running');
    await appendEvents(http, cart1, [newEvent(type, { item: 'a' }), newEvent('Paid', { total: 3 }, { $correlationId: correlation })]);
    await appendEvents(http, cart2, [newEvent(type, { item: 'b' })]);
    await appendEvents(http, 'nocategory', [newEvent(type, { item: 'c' })]);
    await waitCaughtUp(http, SYSTEM);

    const ce = await readRawStream(http, `$ce-${category}`);
    expect(ce?.map((e) => [e.eventType, e.data])).toEqual([['$>', `0@${cart1}`], ['$>', `1@${cart1}`], ['$>', `0@${cart2}`]]);
    const ceMetadata = JSON.parse(ce?.[0]?.metaData ?? '{}') as Record<string, unknown>;
    expect(ceMetadata).toMatchObject({ $o: cart1 });
    expect(ceMetadata['$v']).toMatch(/^\d+:\d+:\d+:4$/);
    expect(typeof ceMetadata['$c']).toBe('number');
    expect(typeof ceMetadata['$causedBy']).toBe('string');

    const et = await readRawStream(http, `$et-${type}`);
    expect(et?.map((e) => e.data)).toEqual([`0@${cart1}`, `0@${cart2}`, '0@nocategory']);
    const streams = (await readRawStream(http, '$streams'))?.map((e) => e.data) ?? [];
    expect(streams).toEqual(expect.arrayContaining([`0@${cart1}`, `0@${cart2}`, '0@nocategory']));
    expect(new Set(streams).size).toBe(streams.length);
    const categoryStream = await readRawStream(http, `$category-${category}`);
    expect(categoryStream?.map((e) => [e.eventType, e.data])).toEqual([['$@', cart1], ['$@', cart2]]);
    const bc = await readRawStream(http, `$bc-${correlation}`);
    expect(bc?.map((e) => e.data)).toEqual([`1@${cart1}`]);
    expect(JSON.parse(bc?.[0]?.metaData ?? '{}')).toMatchObject({ $eventTimestamp: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/) });
  });

  it('resolves links in stream reads unless ES-ResolveLinkTos is false', async () => {
    const resolved = await feed(http, `/streams/%24ce-${category}?embed=body`);
    expect(resolved.map((e) => [e.title, e.summary, e.eventType, e.streamId, e.eventNumber, e.positionStreamId, e.positionEventNumber])).toEqual([
      [`0@${cart2}`, '$>', type, cart2, 0, `$ce-${category}`, 2],
      [`1@${cart1}`, '$>', 'Paid', cart1, 1, `$ce-${category}`, 1],
      [`0@${cart1}`, '$>', type, cart1, 0, `$ce-${category}`, 0],
    ]);
    expect(JSON.parse(resolved[2]?.data ?? '')).toEqual({ item: 'a' });
    expect(JSON.parse(resolved[2]?.linkMetaData ?? '{}')).toMatchObject({ $o: cart1 });
    const raw = await feed(http, `/streams/%24ce-${category}?embed=tryharder`, { 'ES-ResolveLinkTos': 'false' });
    expect(raw.map((e) => [e.title, e.eventType, e.data])).toEqual([
      [`2@$ce-${category}`, '$>', `0@${cart2}`],
      [`1@$ce-${category}`, '$>', `1@${cart1}`],
      [`0@$ce-${category}`, '$>', `0@${cart1}`],
    ]);
    const svc = await feed(http, `/streams/%24ce-${category}`, { 'SVC-ResolveLinkTos': 'False' });
    expect(svc[0]?.title).toBe(`2@$ce-${category}`);
    const bad = await http('GET', `/streams/%24ce-${category}`, { headers: { accept: ATOM, 'ES-ResolveLinkTos': 'maybe' } });
    expect(bad.status).toBe(400);
  });

  it('resolves a single link read to its target, or reads the link itself when asked', async () => {
    const data = await http('GET', `/streams/%24ce-${category}/0`, { headers: { accept: 'application/json' } });
    expect(data.json()).toEqual({ item: 'a' });
    const dto = await http('GET', `/streams/%24ce-${category}/1`, { headers: { accept: 'application/vnd.eventstore.event+json' } });
    expect(dto.json()).toMatchObject({ eventStreamId: cart1, eventNumber: 1, eventType: 'Paid', data: { total: 3 } });
    const raw = await http('GET', `/streams/%24ce-${category}/0`, { headers: { accept: 'application/json', 'ES-ResolveLinkTos': 'false' } });
    expect(raw.json()).toBe(`0@${cart1}`);
    const entry = await http('GET', `/streams/%24ce-${category}/0`, { headers: { accept: ATOM } });
    expect(entry.json()).toMatchObject({ title: `0@${cart1}`, summary: '$>', id: `${running.node.baseUrl}/streams/${cart1}/0` });
  });

  it('links deleted streams into $et-$deleted and $ce- with $deleted metadata, and a link to a gone event reads as not found', async () => {
    const stream = `${category}-gone`;
    await appendEvents(http, stream, [newEvent(type, { item: 'x' })]);
    const deleted = await http('DELETE', `/streams/${stream}`);
    expect(deleted.status).toBe(204);
    await waitCaughtUp(http, SYSTEM);
    const del = await readRawStream(http, '$et-$deleted');
    const link = del?.find((e) => e.data.endsWith(`@${stream}`));
    expect(link).toBeDefined();
    expect(JSON.parse(link?.metaData ?? '{}')).toMatchObject({ $deleted: -1 });
    const ce = await readRawStream(http, `$ce-${category}`);
    const last = ce?.[ce.length - 1];
    expect(last?.data).toMatch(new RegExp(`^0@\\$\\$${stream}$`));
    expect(JSON.parse(last?.metaData ?? '{}')).toMatchObject({ $o: stream, $deleted: -1 });
    // The link to the deleted stream's event in $et- cannot be resolved any more.
    const et = await readRawStream(http, `$et-${type}`);
    const number = et?.findIndex((e) => e.data === `0@${stream}`) ?? -1;
    expect(number).toBeGreaterThanOrEqual(0);
    expect((await http('GET', `/streams/%24et-${type}/${number}`, { headers: { accept: 'application/json' } })).status).toBe(404);
    const entries = await feed(http, `/streams/%24et-${type}/${number}/forward/1`);
    expect(entries.map((e) => [e.title, e.summary])).toEqual([[`0@${stream}`, '$>']]);
  });

  it('resolves the links of $scavenges to the scavenge history events', async () => {
    const started = await http('POST', '/admin/scavenge', { headers: { accept: 'application/json' } });
    expect(started.status).toBe(200);
    const entries = await waitFor('$scavenges', async () => {
      const res = await http('GET', '/streams/%24scavenges?embed=body', { headers: { accept: ATOM } });
      const list = res.status === 200 ? res.json<{ entries: Entry[] }>().entries : [];
      return list.length > 0 ? list : undefined;
    });
    const first = entries[entries.length - 1] as Entry;
    expect(first.eventType).toBe('$scavengeStarted');
    expect(first.streamId).toMatch(/^\$scavenges-/);
    expect(JSON.parse(first.data ?? '{}')).toHaveProperty('nodeEndpoint');
  });

  it('checkpoints $by_event_type into $et and its checkpoint stream', async () => {
    expect((await http('POST', '/projection/%24by_event_type/command/disable')).status).toBe(200);
    await waitFor('stopped', async () => ((await statistics(http, '$by_event_type')).status === 'Stopped' ? true : undefined));
    const config = await http('PUT', '/projection/%24by_event_type/config', {
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ emitEnabled: true, checkpointHandledThreshold: 5 }),
    });
    expect(config.status).toBe(200);
    expect((await http('POST', '/projection/%24by_event_type/command/enable')).status).toBe(200);
    await appendEvents(http, uniqueStream('many'), Array.from({ length: 12 }, (_, n) => newEvent('Many', { n })));
    await waitCaughtUp(http, ['$by_event_type']);
    const et = await readRawStream(http, '$et');
    expect(et?.every((e) => e.eventType === '$Checkpoint')).toBe(true);
    const tag = JSON.parse(et?.[et.length - 1]?.data ?? '{}') as { $c?: number; $p?: number };
    expect(typeof tag.$p).toBe('number');
    const checkpoints = await readRawStream(http, '$projections-$by_event_type-checkpoint');
    expect(checkpoints?.[checkpoints.length - 1]?.eventType).toBe('$ProjectionCheckpoint');
    expect((await statistics(http, '$by_event_type')).lastCheckpoint).toMatch(/^C:\d+\/P:\d+$/);
  });

  it('leaves user projections stopped under RunProjections System', async () => {
    const name = uniqueStream('user');
    await createProjection(http, 'continuous', name, "fromAll().when({ $any: function (s, e) {} })");
    expect((await statistics(http, name)).status).toBe('Stopped (Enabled)');
  });
});

describe('system projections not started (RunProjections All)', () => {
  const running = useNode({ args: ['--run-projections', 'All'] });
  const http = running.http;

  it('exist stopped, link nothing, and start when enabled', async () => {
    for (const name of SYSTEM) expect((await statistics(http, name)).status).toBe('Stopped');
    const stream = uniqueStream('idle');
    await appendEvents(http, stream, [newEvent('Happened', {})]);
    const category = stream.split('-')[0];
    expect(await readRawStream(http, `$ce-${category}`)).toBeUndefined();
    expect((await http('POST', '/projection/%24by_category/command/enable')).status).toBe(200);
    await waitCaughtUp(http, ['$by_category']);
    expect((await readRawStream(http, `$ce-${category}`))?.map((e) => e.data)).toEqual([`0@${stream}`]);
    const info = await http('GET', '/info');
    expect(info.json()).toMatchObject({ features: { projections: true } });
  });
});

describe('projections off (RunProjections None, the default)', () => {
  const running = useNode();
  const http = running.http;

  it('serves no projections endpoint and reports the feature off', async () => {
    expect((await http('GET', '/projections/any')).status).toBe(404);
    expect((await http('GET', '/projection/%24by_category')).status).toBe(404);
    expect((await http('GET', '/info')).json()).toMatchObject({ features: { projections: false } });
  });
});
