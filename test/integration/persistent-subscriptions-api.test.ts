/**
 * Every persistent-subscription endpoint of a real node, with EventStoreDB's status codes,
 * reason phrases, messages, media types and ACLs (create/update/delete need $admins, as the
 * spec says; restart/replay $admins or $ops; statistics an authenticated user; reading and acknowledging an
 * authenticated user with read access to the stream).
 */
import { beforeAll, describe, expect, it } from 'vitest';

import {
  appendNumbered,
  COMPETING_JSON,
  createGroup,
  eventually,
  groupInfo,
} from '../support/competing-consumer.js';
import { basic } from '../support/credentials.js';
import { uniqueStream } from '../support/http-client.js';
import { useNode } from '../support/use-node.js';

const running = useNode();
const http = running.http;
const OPS = basic('ops', 'changeit');
const USER = basic('reader', 'reader-pw');
const JSON_TYPE = { 'content-type': 'application/json' };

function path(stream: string, group: string, suffix = ''): string {
  return `/subscriptions/${encodeURIComponent(stream)}/${encodeURIComponent(group)}${suffix}`;
}

function put(stream: string, group: string, body: unknown, headers: Record<string, string> = JSON_TYPE) {
  return http('PUT', path(stream, group), {
    headers,
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

beforeAll(async () => {
  const created = await http('POST', '/users', {
    headers: JSON_TYPE,
    body: JSON.stringify({ LoginName: 'reader', FullName: 'Reader', Groups: [], Password: 'reader-pw' }),
  });
  expect(created.status).toBe(201);
});

describe('PUT /subscriptions/{stream}/{group} (create)', () => {
  it('201 Created with Location and the completion message; 409 for an existing group', async () => {
    const stream = uniqueStream('ps-create');
    const created = await put(stream, 'g', { messageTimeoutMilliseconds: 2500 });
    expect(created.status).toBe(201);
    expect(created.statusText).toBe('Created');
    expect(created.headers.get('location')).toBe(`${running.node.baseUrl}${path(stream, 'g')}`);
    expect(created.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(created.json()).toMatchObject({ reason: '', result: 'Success' });
    expect(created.json().correlationId).toMatch(/^[0-9a-f-]{36}$/);
    const again = await put(stream, 'g', {});
    expect(again.status).toBe(409);
    expect(again.json()).toMatchObject({ result: 'AlreadyExists', reason: "Group 'g' already exists." });
    expect((await groupInfo(running.node.baseUrl, stream, 'g')).config.messageTimeoutMilliseconds).toBe(2500);
  });

  it('uses the defaults for an empty body and reads an XML body', async () => {
    const stream = uniqueStream('ps-defaults');
    expect((await put(stream, 'empty', '')).status).toBe(201);
    const info = await groupInfo(running.node.baseUrl, stream, 'empty');
    expect(info.config).toEqual({
      resolveLinktos: false,
      startFrom: 0,
      startPosition: '0',
      messageTimeoutMilliseconds: 10000,
      extraStatistics: false,
      maxRetryCount: 10,
      liveBufferSize: 500,
      bufferSize: 500,
      readBatchSize: 20,
      preferRoundRobin: true,
      checkPointAfterMilliseconds: 1000,
      minCheckPointCount: 10,
      maxCheckPointCount: 500,
      maxSubscriberCount: 10,
      namedConsumerStrategy: 'RoundRobin',
    });
    const xml =
      '<SubscriptionConfigData><MessageTimeoutMilliseconds>1234</MessageTimeoutMilliseconds>' +
      '<NamedConsumerStrategy>DispatchToSingle</NamedConsumerStrategy><ResolveLinktos>true</ResolveLinktos></SubscriptionConfigData>';
    const created = await put(stream, 'xml', xml, { 'content-type': 'text/xml', accept: 'text/xml' });
    expect(created.status).toBe(201);
    expect(created.headers.get('content-type')).toBe('text/xml; charset=utf-8');
    expect(created.text).toContain('<Result>Success</Result>');
    expect((await groupInfo(running.node.baseUrl, stream, 'xml')).config).toMatchObject({
      messageTimeoutMilliseconds: 1234,
      namedConsumerStrategy: 'DispatchToSingle',
      resolveLinktos: true,
    });
  });

  it("400 with the controller's validation messages, as plain text", async () => {
    const stream = uniqueStream('ps-invalid');
    const cases: [unknown, string][] = [
      [{ bufferSize: 0 }, 'Buffer Size (0) must be positive'],
      [{ liveBufferSize: -1 }, 'Live Buffer Size (-1) must be positive'],
      [{ readBatchSize: 0 }, 'Read Batch Size (0) must be positive'],
      [{ bufferSize: 10, readBatchSize: 11 }, 'BufferSize (10) must be larger than ReadBatchSize (11)'],
    ];
    for (const [body, message] of cases) {
      const response = await put(stream, 'g', body);
      expect(response.status, message).toBe(400);
      expect(response.headers.get('content-type')).toBe('text/plain; charset=utf-8');
      expect(response.text).toBe(message);
    }
    const wrongType = await put(stream, 'g', { maxRetryCount: 'lots' });
    expect(wrongType.status).toBe(400);
    expect(wrongType.text).toContain("'maxRetryCount'");
    expect((await put(stream, 'g', '{not json')).status).toBe(400);
    // Nothing was created by the refused requests.
    expect((await http('GET', path(stream, 'g', '/info'))).status).toBe(404);
  });

  it('400 with result Fail for an unknown strategy, startFrom below -1 and $all', async () => {
    const stream = uniqueStream('ps-fail');
    const strategy = await put(stream, 'g', { namedConsumerStrategy: 'Random' });
    expect(strategy.status).toBe(400);
    expect(strategy.json()).toMatchObject({ result: 'Fail', reason: 'Consumer strategy Random does not exist.' });
    const start = await put(stream, 'g', { startFrom: -2 });
    expect(start.status).toBe(400);
    expect(start.json().reason).toBe(
      'Invalid Start From position: event number must be greater than or equal to -1.',
    );
    const all = await put('$all', 'g', {});
    expect(all.status).toBe(400);
    expect(all.json().reason).toBe(
      'Persistent subscriptions to $all are only supported over gRPC through gRPC clients',
    );
  });

  it('415 without a JSON or XML Content-Type; 406 for an answer type it does not speak', async () => {
    const stream = uniqueStream('ps-415');
    const none = await http('PUT', path(stream, 'g'), { body: '{}' });
    expect(none.status).toBe(415);
    expect(none.statusText).toBe('Invalid or missing Content-Type');
    expect((await put(stream, 'g', '{}', { 'content-type': 'text/plain' })).status).toBe(415);
    const notAcceptable = await put(stream, 'g', '{}', { ...JSON_TYPE, accept: 'application/atom+xml' });
    expect(notAcceptable.status).toBe(406);
  });

  it('needs $admins (the spec, Authentication 4): 401 with a message otherwise, $ops included', async () => {
    const stream = uniqueStream('ps-acl');
    for (const auth of [USER, OPS, undefined]) {
      const response = await http('PUT', path(stream, 'g'), {
        headers: { ...JSON_TYPE, ...(auth === undefined ? {} : { authorization: auth }) },
        auth: auth !== undefined,
        body: '{}',
      });
      expect(response.status).toBe(401);
      expect(response.text).toMatch(/^Not authorized: /);
    }
    await createGroup(running.node.baseUrl, stream, 'g');
    for (const method of ['POST', 'DELETE']) {
      const byOps = await http(method, path(stream, 'g'), {
        headers: { ...JSON_TYPE, authorization: OPS },
        ...(method === 'POST' ? { body: '{}' } : {}),
      });
      expect(byOps.status, `${method} by ops`).toBe(401);
    }
    expect((await groupInfo(running.node.baseUrl, stream, 'g')).groupName).toBe('g');
  });
});

describe('POST (update) and DELETE /subscriptions/{stream}/{group}', () => {
  it('update: 200 with Location; 404 DoesNotExist; 401 for other users; 400 when invalid', async () => {
    const stream = uniqueStream('ps-update');
    await createGroup(running.node.baseUrl, stream, 'g');
    const updated = await http('POST', path(stream, 'g'), {
      headers: JSON_TYPE,
      body: JSON.stringify({ maxRetryCount: 3 }),
    });
    expect(updated.status).toBe(200);
    expect(updated.headers.get('location')).toBe(`${running.node.baseUrl}${path(stream, 'g')}`);
    expect(updated.json()).toMatchObject({ result: 'Success' });
    expect((await groupInfo(running.node.baseUrl, stream, 'g')).config.maxRetryCount).toBe(3);
    const missing = await http('POST', path(stream, 'nope'), { headers: JSON_TYPE, body: '{}' });
    expect(missing.status).toBe(404);
    expect(missing.json()).toMatchObject({ result: 'DoesNotExist', reason: "Group 'nope' does not exist." });
    const denied = await http('POST', path(stream, 'g'), {
      headers: { ...JSON_TYPE, authorization: USER },
      body: '{}',
    });
    expect(denied.status).toBe(401);
    const invalid = await http('POST', path(stream, 'g'), {
      headers: JSON_TYPE,
      body: JSON.stringify({ bufferSize: 5, readBatchSize: 5 }),
    });
    expect(invalid.status).toBe(400);
    expect(invalid.text).toBe('BufferSize (5) must be larger than ReadBatchSize (5)');
  });

  it('delete: 200, then 404; 401 for other users', async () => {
    const stream = uniqueStream('ps-delete');
    await createGroup(running.node.baseUrl, stream, 'g');
    expect((await http('DELETE', path(stream, 'g'), { headers: { authorization: USER } })).status).toBe(401);
    const deleted = await http('DELETE', path(stream, 'g'));
    expect(deleted.status).toBe(200);
    expect(deleted.json()).toMatchObject({ result: 'Success' });
    const again = await http('DELETE', path(stream, 'g'));
    expect(again.status).toBe(404);
    expect(again.json()).toMatchObject({ result: 'DoesNotExist' });
    expect((await http('GET', path(stream, 'g', '/info'))).status).toBe(404);
  });
});

describe('GET /subscriptions/{stream}/{group}[/{count}] (next messages)', () => {
  const stream = uniqueStream('ps-read');
  beforeAll(async () => {
    await appendNumbered(running.node.baseUrl, stream, 5);
    await createGroup(running.node.baseUrl, stream, 'g');
  });

  it('answers competingatom+xml by default and +json when asked, one message unless told', async () => {
    const xml = await http('GET', path(stream, 'g'));
    expect(xml.status).toBe(200);
    expect(xml.headers.get('content-type')).toBe('application/vnd.eventstore.competingatom+xml; charset=utf-8');
    expect(xml.text).toMatch(/^<\?xml version="1.0" encoding="utf-8"\?><feed xmlns="http:\/\/www.w3.org\/2005\/Atom">/);
    expect(xml.text).toContain('<title>0@');
    expect(xml.text).toContain('<retryCount>0</retryCount>');
    expect(xml.text).toMatch(/rel="ackAll"/);
    expect(xml.text).toMatch(/<link href="[^"]+\/ack\/[0-9a-f-]{36}" rel="ack" \/>/);
    const json = await http('GET', path(stream, 'g', '/2'), { headers: { accept: COMPETING_JSON } });
    expect(json.status).toBe(200);
    expect(json.headers.get('content-type')).toBe(`${COMPETING_JSON}; charset=utf-8`);
    const feed = json.json();
    expect(feed.title).toBe(`Messages for '${stream}/g'`);
    expect(feed.headOfStream).toBe(false);
    expect(feed.entries.map((e: { title: string }) => e.title)).toEqual([`2@${stream}`, `1@${stream}`]);
    expect(Object.keys(feed.entries[0])).toEqual(['title', 'id', 'updated', 'author', 'summary', 'retryCount', 'links']);
    expect(feed.links.map((l: { relation: string }) => l.relation)).toEqual(['ackAll', 'nackAll', 'previous', 'self']);
    expect(feed.links[2].uri).toBe(`${running.node.baseUrl}${path(stream, 'g', '/2')}`);
    const kurrent = await http('GET', path(stream, 'g', '/1?embed=body'), {
      headers: { accept: 'application/vnd.kurrent.competingatom+json' },
    });
    expect(kurrent.status).toBe(200);
    const entry = kurrent.json().entries[0];
    expect(entry).toMatchObject({ eventType: 'Numbered', eventNumber: 3, data: '{\n  "i": 3\n}' });
  });

  it('an empty feed has no ackAll/nackAll links', async () => {
    const empty = uniqueStream('ps-empty');
    await createGroup(running.node.baseUrl, empty, 'g');
    const response = await http('GET', path(empty, 'g', '/10'), { headers: { accept: COMPETING_JSON } });
    expect(response.status).toBe(200);
    expect(response.json().entries).toEqual([]);
    expect(response.json().links.map((l: { relation: string }) => l.relation)).toEqual(['previous', 'self']);
    expect(response.json().updated).toBe('0001-01-01T00:00:00Z');
  });

  it('406 for other answer types; 400 for a count outside 1..100; 404 for a missing group', async () => {
    expect((await http('GET', path(stream, 'g'), { headers: { accept: 'application/json' } })).status).toBe(406);
    for (const [count, shown] of [['0', '0'], ['101', '101'], ['-1', '-1'], ['one', '0'], ['10.1', '0']]) {
      const response = await http('GET', path(stream, 'g', `/${count}`), { headers: { accept: COMPETING_JSON } });
      expect(response.status, count).toBe(400);
      // An error answers in the type asked for (JSON here), its message unchanged.
      expect(response.json<{ message: string }>().message).toBe(`Message count must be an integer between 1 and 100 'count' ='${shown}'`);
    }
    const badPoll = await http('GET', path(stream, 'g'), { headers: { accept: COMPETING_JSON, 'es-longpoll': 'soon' } });
    expect(badPoll.status).toBe(400);
    expect(badPoll.json<{ message: string }>().message).toBe('ES-LongPoll header in wrong format.');
    const missing = await http('GET', path(stream, 'nope'), { headers: { accept: COMPETING_JSON } });
    expect(missing.status).toBe(404);
    expect(missing.json()).toBe('Not found.');
  });

  it('needs an authenticated user who may read the stream', async () => {
    expect((await http('GET', path(stream, 'g'), { auth: false })).status).toBe(401);
    expect((await http('GET', path(stream, 'g'), { headers: { authorization: USER } })).status).toBe(200);
    const locked = uniqueStream('ps-locked');
    await appendNumbered(running.node.baseUrl, locked, 1);
    const acl = await http('POST', `/streams/${locked}/metadata`, {
      headers: { 'content-type': 'application/json', 'es-eventid': crypto.randomUUID() },
      body: JSON.stringify({ $acl: { $r: '$admins' } }),
    });
    expect(acl.status).toBe(201);
    await createGroup(running.node.baseUrl, locked, 'g');
    const denied = await http('GET', path(locked, 'g'), { headers: { authorization: USER } });
    expect(denied.status).toBe(401);
    expect(denied.text).toMatch(/^Not authorized: /);
    expect((await http('POST', path(locked, 'g', `/ack/${crypto.randomUUID()}`), { headers: { authorization: USER } })).status).toBe(401);
  });
});

describe('ack and nack', () => {
  it('202 Accepted for well-formed ids (known or not); 400 otherwise; 401 without credentials', async () => {
    const stream = uniqueStream('ps-ack');
    await appendNumbered(running.node.baseUrl, stream, 3);
    await createGroup(running.node.baseUrl, stream, 'g');
    const feed = (await http('GET', path(stream, 'g', '/3'), { headers: { accept: COMPETING_JSON } })).json();
    const [first, second, third] = feed.entries as { links: { uri: string; relation: string }[] }[];
    const link = (entry: typeof first, relation: string) =>
      entry?.links.find((l) => l.relation === relation)?.uri ?? '';
    const ack = await http('POST', link(first, 'ack'));
    expect(ack.status).toBe(202);
    expect(ack.statusText).toBe('Accepted');
    expect(ack.text).toBe('');
    expect((await http('POST', `${link(second, 'nack')}?action=skip`)).status).toBe(202);
    const id3 = link(third, 'ack').split('/').pop() ?? '';
    expect((await http('POST', path(stream, 'g', `/ack?ids=${id3},${crypto.randomUUID()}`))).status).toBe(202);
    expect((await http('POST', path(stream, 'g', `/nack?ids=${crypto.randomUUID()}&action=retry`))).status).toBe(202);
    expect((await http('POST', path(stream, 'nope', `/ack/${crypto.randomUUID()}`))).status).toBe(202);
    for (const bad of ['/ack/not-a-guid', '/ack?ids=', '/ack', `/ack?ids=${id3},x`, '/nack/zzz', '/nack?ids=1,2']) {
      const response = await http('POST', path(stream, 'g', bad));
      expect(response.status, bad).toBe(400);
      expect(response.text).toBe('messageid should be a properly formed guid');
    }
    expect((await http('POST', link(first, 'ack'), { auth: false })).status).toBe(401);
    const info = await groupInfo(running.node.baseUrl, stream, 'g');
    expect(info.outstandingMessagesCount).toBe(0);
    expect(info.totalItemsProcessed).toBe(3);
  });
});

describe('replayParked, viewparkedmessages, restart', () => {
  it('replayParked: 200, 404 for a missing group, 400 for a bad stopAt, 401 for other users', async () => {
    const stream = uniqueStream('ps-replay');
    await createGroup(running.node.baseUrl, stream, 'g');
    const ok = await http('POST', path(stream, 'g', '/replayParked'));
    expect(ok.status).toBe(200);
    expect(ok.json()).toMatchObject({ result: 'Success' });
    const missing = await http('POST', path(stream, 'nope', '/replayParked'));
    expect(missing.status).toBe(404);
    expect(missing.json()).toMatchObject({ result: 'DoesNotExist', reason: `Unable to locate '${stream}::nope'` });
    for (const stopAt of ['-1', 'abc']) {
      const bad = await http('POST', path(stream, 'g', `/replayParked?stopAt=${stopAt}`));
      expect(bad.status).toBe(400);
      expect(bad.text).toBe('stopAt should be a properly formed positive long');
    }
    expect((await http('POST', path(stream, 'g', '/replayParked'), { headers: { authorization: USER } })).status).toBe(401);
    expect((await http('POST', path(stream, 'g', '/replayParked?stopAt=3'), { headers: { authorization: OPS } })).status).toBe(200);
  });

  it('viewparkedmessages reads the parked stream as a competing feed, admins only', async () => {
    const stream = uniqueStream('ps-view');
    await appendNumbered(running.node.baseUrl, stream, 2);
    await createGroup(running.node.baseUrl, stream, 'g');
    const base = `/subscriptions/viewparkedmessages/${stream}/g`;
    expect((await http('GET', `${base}/0/forward/10`, { headers: { accept: COMPETING_JSON } })).status).toBe(404);
    const feed = (await http('GET', path(stream, 'g', '/2'), { headers: { accept: COMPETING_JSON } })).json();
    // Oldest first: parked in that order.
    const ids = feed.entries.map((e: { links: { uri: string }[] }) => e.links[2]?.uri.split('/').pop()).reverse().join(',');
    expect((await http('POST', path(stream, 'g', `/nack?ids=${ids}&action=park`))).status).toBe(202);
    await eventually(async () => ((await groupInfo(running.node.baseUrl, stream, 'g')).parkedMessageCount === 2 ? true : undefined), 'parked');
    const forward = await http('GET', `${base}/0/forward/10?embed=rich`, { headers: { accept: COMPETING_JSON } });
    expect(forward.status).toBe(200);
    const page = forward.json();
    expect(page.title).toBe(`Event stream '$persistentsubscription-${stream}::g-parked'`);
    expect(page.entries.map((e: { title: string }) => e.title)).toEqual([`1@${stream}`, `0@${stream}`]);
    expect(page.entries[0]).toMatchObject({ summary: '$>', eventType: 'Numbered', positionEventNumber: 1 });
    const backward = await http('GET', `${base}/head/backward/1`, { headers: { accept: COMPETING_JSON } });
    expect(backward.json().entries.map((e: { title: string }) => e.title)).toEqual([`1@${stream}`]);
    const xml = await http('GET', `${base}/0/forward/10`);
    expect(xml.headers.get('content-type')).toBe('application/vnd.eventstore.competingatom+xml; charset=utf-8');
    expect((await http('GET', `${base}/0/forward/10`, { headers: { authorization: USER } })).status).toBe(401);
    expect((await http('GET', `${base}/x/forward/10`)).status).toBe(400);
    expect((await http('GET', `${base}/0/forward/10`, { headers: { 'es-resolvelinktos': 'maybe' } })).status).toBe(400);
    expect((await http('GET', `${base}/0/forward/0`)).status).toBe(400);
  });

  it('restart: 200 "Restarting" for $admins/$ops, 401 otherwise; groups work afterwards', async () => {
    const stream = uniqueStream('ps-restart');
    await appendNumbered(running.node.baseUrl, stream, 1);
    await createGroup(running.node.baseUrl, stream, 'g');
    expect((await http('POST', '/subscriptions/restart', { headers: { authorization: USER } })).status).toBe(401);
    const restarted = await http('POST', '/subscriptions/restart', { headers: { authorization: OPS } });
    expect(restarted.status).toBe(200);
    expect(restarted.json()).toBe('Restarting');
    const feed = await eventually<{ entries: { title: string }[] }>(async () => {
      const response = await http('GET', path(stream, 'g'), { headers: { accept: COMPETING_JSON } });
      return response.status === 200 && response.json().entries.length === 1 ? response.json() : undefined;
    }, 'a message after the restart');
    expect(feed.entries[0]?.title).toBe(`0@${stream}`);
  });
});

describe('statistics: GET /subscriptions, /subscriptions/{stream}, .../info', () => {
  it('lists summaries, per stream (404 when none), paged; JSON or XML; authenticated users only', async () => {
    const stream = uniqueStream('ps-stats');
    await appendNumbered(running.node.baseUrl, stream, 3);
    await createGroup(running.node.baseUrl, stream, 'a');
    await createGroup(running.node.baseUrl, stream, 'b', { namedConsumerStrategy: 'Pinned' });
    const all = await http('GET', '/subscriptions', { headers: { authorization: USER } });
    expect(all.status).toBe(200);
    expect(all.headers.get('content-type')).toBe('application/json; charset=utf-8');
    const summary = all.json().find((s: { eventStreamId: string; groupName: string }) => s.eventStreamId === stream && s.groupName === 'a');
    expect(Object.keys(summary)).toEqual([
      'links', 'eventStreamId', 'groupName', 'parkedMessageUri', 'getMessagesUri', 'status',
      'averageItemsPerSecond', 'totalItemsProcessed', 'lastProcessedEventNumber', 'lastKnownEventNumber',
      'lastKnownEventPosition', 'connectionCount', 'totalInFlightMessages',
    ]);
    expect(summary).toMatchObject({
      links: [{ href: `${running.node.baseUrl}${path(stream, 'a', '/info')}`, rel: 'detail' }],
      parkedMessageUri: `${running.node.baseUrl}/streams/%24persistentsubscription-${stream}::a-parked`,
      getMessagesUri: `${running.node.baseUrl}${path(stream, 'a', '/1')}`,
      status: 'Live',
      lastKnownEventNumber: 2,
    });
    const perStream = await http('GET', `/subscriptions/${stream}`);
    expect(perStream.json().map((s: { groupName: string }) => s.groupName)).toEqual(['a', 'b']);
    const none = await http('GET', `/subscriptions/${uniqueStream('ps-none')}`);
    expect(none.status).toBe(404);
    expect(none.json()).toEqual([]);
    const xml = await http('GET', `/subscriptions/${stream}`, { headers: { accept: 'text/xml' } });
    expect(xml.text).toContain('<ArrayOfSubscriptionSummary><SubscriptionSummary><Links><RelLink><Href>');
    expect((await http('GET', '/subscriptions', { auth: false })).status).toBe(401);
    expect((await http('GET', '/subscriptions', { headers: { accept: 'application/atom+xml' } })).status).toBe(406);
    const paged = await http('GET', '/subscriptions?offset=0&count=1');
    expect(paged.status).toBe(200);
    expect(paged.json()).toMatchObject({ offset: 0, count: 1 });
    expect(paged.json().total).toBeGreaterThan(1);
    expect(paged.json().links.map((l: { rel: string }) => l.rel)).toEqual(['self', 'first', 'next']);
    expect(paged.json().subscriptions.length).toBeGreaterThan(0);
    expect((await http('GET', '/subscriptions?offset=-1&count=1')).text).toBe('Offset "-1" must be a non-negative integer');
    expect((await http('GET', '/subscriptions?offset=1&count=0')).text).toBe('Count "0" must be a positive integer');
    expect((await http('GET', '/subscriptions?offset=1')).text).toBe('Count "" must be a positive integer');
  });

  it('info: config, status flags, counts, connections and parked count; 404 for a missing group', async () => {
    const stream = uniqueStream('ps-info');
    await appendNumbered(running.node.baseUrl, stream, 4);
    await createGroup(running.node.baseUrl, stream, 'g', { extraStatistics: true });
    const feed = await http('GET', path(stream, 'g', '/3'), { headers: { accept: COMPETING_JSON, 'user-agent': 'info-test' } });
    expect(feed.json().entries).toHaveLength(3);
    const info = await groupInfo(running.node.baseUrl, stream, 'g');
    expect(info).toMatchObject({
      eventStreamId: stream,
      groupName: 'g',
      status: 'Live',
      totalItemsProcessed: 3,
      lastKnownEventNumber: 3,
      lastKnownEventPosition: '3',
      readBufferCount: 1,
      liveBufferCount: 0,
      retryBufferCount: 0,
      outstandingMessagesCount: 3,
      parkedMessageCount: 0,
      links: [
        { href: `${running.node.baseUrl}${path(stream, 'g', '/info')}`, rel: 'detail' },
        { href: `${running.node.baseUrl}${path(stream, 'g', '/replayParked')}`, rel: 'replayParked' },
      ],
    });
    expect(info.lastCheckpointedEventPosition).toBeUndefined();
    const missing = await http('GET', path(stream, 'nope', '/info'));
    expect(missing.status).toBe(404);
    const xml = await http('GET', path(stream, 'g', '/info'), { headers: { accept: 'text/xml' } });
    expect(xml.text).toContain('<SubscriptionInfo><Links>');
    expect(xml.text).toContain('<NamedConsumerStrategy>RoundRobin</NamedConsumerStrategy>');
  });
});

describe('around the endpoints', () => {
  it("the stream's description document names its groups", async () => {
    const stream = uniqueStream('ps-desc');
    await appendNumbered(running.node.baseUrl, stream, 1);
    const before = await http('GET', `/streams/${stream}`, {
      headers: { accept: 'application/vnd.eventstore.streamdesc+json' },
    });
    expect(before.json()._links.streamSubscription).toBeUndefined();
    await createGroup(running.node.baseUrl, stream, 'g1');
    const after = await http('GET', `/streams/${stream}`, {
      headers: { accept: 'application/vnd.eventstore.streamdesc+json' },
    });
    expect(after.json()._links.streamSubscription).toEqual([
      {
        href: `/subscriptions/${stream}/g1`,
        supportedContentTypes: [
          'application/vnd.eventstore.competingatom+xml',
          'application/vnd.eventstore.competingatom+json',
        ],
      },
    ]);
  });

  it('GET /openapi.json lists every subscription route', async () => {
    const paths = Object.keys((await http('GET', '/openapi.json', { auth: false })).json().paths);
    for (const route of [
      '/subscriptions',
      '/subscriptions/restart',
      '/subscriptions/{stream}',
      '/subscriptions/{stream}/{subscription}',
      '/subscriptions/{stream}/{subscription}/{count}',
      '/subscriptions/{stream}/{subscription}/info',
      '/subscriptions/{stream}/{subscription}/replayParked',
      '/subscriptions/{stream}/{subscription}/ack',
      '/subscriptions/{stream}/{subscription}/ack/{messageid}',
      '/subscriptions/{stream}/{subscription}/nack',
      '/subscriptions/{stream}/{subscription}/nack/{messageid}',
      '/subscriptions/viewparkedmessages/{stream}/{group}/{event}/backward/{count}',
      '/subscriptions/viewparkedmessages/{stream}/{group}/{event}/forward/{count}',
    ]) {
      expect(paths, route).toContain(route);
    }
  });
});
