import { describe, expect, it } from 'vitest';
import {
  appendEvents,
  ATOM_JSON,
  newEvent,
  readFeed,
  uniqueStream,
} from '../support/http-client.js';
import { basic } from '../support/credentials.js';
import { useNode } from '../support/use-node.js';

const running = useNode();
const http = running.http;

interface Feed {
  title: string;
  headOfStream: boolean;
  links: { uri: string; relation: string }[];
  entries: { title: string; summary: string; [key: string]: unknown }[];
  [key: string]: unknown;
}

function link(feed: Feed, relation: string): string | undefined {
  return feed.links.find((l) => l.relation === relation)?.uri;
}

async function streamWith(count: number, prefix = 'read'): Promise<string> {
  const stream = uniqueStream(prefix);
  const events = Array.from({ length: count }, (_, i) => newEvent(`type-${i}`, { i }));
  expect((await appendEvents(http, stream, events)).status).toBe(201);
  return stream;
}

describe('GET /streams/{stream} feeds', () => {
  it('serves the head page as Atom JSON with absolute links built from the Host', async () => {
    const stream = await streamWith(27);
    const response = await readFeed(http, `/streams/${stream}`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe(`${ATOM_JSON}; charset=utf-8`);
    expect(response.headers.get('cache-control')).toBe('max-age=0, no-cache, must-revalidate');
    expect(response.headers.get('vary')).toBe('Accept');
    expect(response.headers.get('etag')).toMatch(/^"26;-?\d+"$/);
    const feed = response.json<Feed>();
    const root = `${running.node.baseUrl}/streams/${stream}`;
    expect(feed).toMatchObject({
      title: `Event stream '${stream}'`,
      id: root,
      streamId: stream,
      author: { name: 'EventStore' },
      headOfStream: true,
      selfUrl: root,
    });
    expect(feed.links).toEqual([
      { uri: root, relation: 'self' },
      { uri: `${root}/head/backward/20`, relation: 'first' },
      { uri: `${root}/0/forward/20`, relation: 'last' },
      { uri: `${root}/6/backward/20`, relation: 'next' },
      { uri: `${root}/27/forward/20`, relation: 'previous' },
      { uri: `${root}/metadata`, relation: 'metadata' },
    ]);
    expect(feed.entries).toHaveLength(20);
    expect(feed.entries[0]).toMatchObject({
      title: `26@${stream}`,
      id: `${root}/26`,
      summary: 'type-26',
    });
    expect(feed.entries[0]?.links).toEqual([
      { uri: `${root}/26`, relation: 'edit' },
      { uri: `${root}/26`, relation: 'alternate' },
    ]);
    expect(feed.entries[0]).not.toHaveProperty('content');
  });

  it('honours X-Forwarded-Host and X-Forwarded-Prefix in links', async () => {
    const stream = await streamWith(1);
    const feed = (
      await readFeed(http, `/streams/${stream}`, {
        'x-forwarded-host': 'example.org:1234',
        'x-forwarded-prefix': 'pre',
      })
    ).json<Feed>();
    expect(link(feed, 'self')).toBe(`http://example.org:1234/pre/streams/${stream}`);
  });

  it('pages with links a client can follow to the end and back', async () => {
    const stream = await streamWith(45);
    const seenBackward: string[] = [];
    let next: string | undefined = `${running.node.baseUrl}/streams/${stream}/head/backward/10`;
    while (next !== undefined) {
      const feed: Feed = (await readFeed(http, next)).json<Feed>();
      seenBackward.push(...feed.entries.map((e) => e.title));
      next = link(feed, 'next');
    }
    expect(seenBackward).toEqual(Array.from({ length: 45 }, (_, i) => `${44 - i}@${stream}`));

    const seenForward: string[] = [];
    let previous: string | undefined = `${running.node.baseUrl}/streams/${stream}/0/forward/10`;
    let lastFeed: Feed | undefined;
    for (let page = 0; previous !== undefined && page < 20; page++) {
      lastFeed = (await readFeed(http, previous)).json<Feed>();
      seenForward.push(...[...lastFeed.entries].reverse().map((e) => e.title));
      previous = link(lastFeed, 'previous');
      if (lastFeed.entries.length === 0) break;
    }
    expect(seenForward).toEqual(Array.from({ length: 45 }, (_, i) => `${i}@${stream}`));
    expect(lastFeed?.entries).toHaveLength(0);
    expect(lastFeed && link(lastFeed, 'previous')).toBeUndefined();
  });

  it('marks forward pages that reach the end as head of stream, newest entry first', async () => {
    const stream = await streamWith(25);
    const notEnd = (await readFeed(http, `/streams/${stream}/0/forward/24`)).json<Feed>();
    expect(notEnd.headOfStream).toBe(false);
    const end = await readFeed(http, `/streams/${stream}/0/forward/25`);
    expect(end.json<Feed>().headOfStream).toBe(true);
    expect(end.json<Feed>().entries[0]?.title).toBe(`24@${stream}`);
    expect(end.headers.get('cache-control')).toBe('max-age=31536000, public');
    const partial = await readFeed(http, `/streams/${stream}/20/forward/20`);
    expect(partial.headers.get('cache-control')).toBe('max-age=0, no-cache, must-revalidate');
    expect(partial.headers.get('etag')).toMatch(/^"24;/);
    const backward = await readFeed(http, `/streams/${stream}/3/backward/2`);
    expect(backward.json<Feed>().entries.map((e) => e.title)).toEqual([
      `3@${stream}`,
      `2@${stream}`,
    ]);
    expect(backward.headers.get('cache-control')).toBe('max-age=31536000, public');
    const implicit = await readFeed(http, `/streams/${stream}/3/2`);
    expect(implicit.json<Feed>().entries.map((e) => e.title)).toEqual([
      `3@${stream}`,
      `2@${stream}`,
    ]);
  });

  it('serves Atom XML when asked', async () => {
    const stream = await streamWith(2);
    const response = await http('GET', `/streams/${stream}`, {
      headers: { accept: 'application/atom+xml' },
    });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('application/atom+xml; charset=utf-8');
    expect(response.text).toContain('<feed xmlns="http://www.w3.org/2005/Atom">');
    expect(response.text).toContain(`<title>1@${stream}</title>`);
    expect(response.text).toContain(
      `<link href="${running.node.baseUrl}/streams/${stream}/head/backward/20" rel="first" />`,
    );
  });

  it('answers 304 to If-None-Match with the current ETag and 200 after a write', async () => {
    const stream = await streamWith(3);
    const first = await readFeed(http, `/streams/${stream}`);
    const etag = first.headers.get('etag') ?? '';
    expect(first.json<Feed>().eTag).toBe(etag.replace(/"/g, ''));
    const notModified = await readFeed(http, `/streams/${stream}`, { 'if-none-match': etag });
    expect(notModified.status).toBe(304);
    await appendEvents(http, stream, [newEvent('more', {})]);
    expect((await readFeed(http, `/streams/${stream}`, { 'if-none-match': etag })).status).toBe(
      200,
    );
  });

  it('embeds event bodies as rich entries with embed=body and tryharder', async () => {
    const stream = uniqueStream('embed');
    await appendEvents(http, stream, [
      newEvent('j', { a: '1' }, { m: 2 }),
      newEvent('t', 'plain text'),
    ]);
    const body = (await readFeed(http, `/streams/${stream}?embed=body`)).json<Feed>();
    const jsonEntry = body.entries[1];
    expect(Object.keys(jsonEntry ?? {}).slice(0, 4)).toEqual([
      'eventId',
      'eventType',
      'eventNumber',
      'data',
    ]);
    expect(JSON.parse(String(jsonEntry?.data))).toEqual({ a: '1' });
    expect(JSON.parse(String(jsonEntry?.metaData))).toEqual({ m: 2 });
    expect(jsonEntry).toMatchObject({
      eventType: 'j',
      eventNumber: 0,
      streamId: stream,
      isJson: true,
      isMetaData: true,
      isLinkMetaData: false,
    });
    expect(body.entries[0]).not.toHaveProperty('data');
    const rich = (await readFeed(http, `/streams/${stream}?embed=rich`)).json<Feed>();
    expect(rich.entries[1]).not.toHaveProperty('data');
    expect(rich.entries[1]).toMatchObject({ eventType: 'j', isJson: true });
    const content = (await readFeed(http, `/streams/${stream}?embed=Content`)).json<Feed>();
    expect(content.entries[1]?.content).toMatchObject({
      eventStreamId: stream,
      eventNumber: 0,
      eventType: 'j',
      data: { a: '1' },
    });
    const pretty = (await readFeed(http, `/streams/${stream}?embed=PrettyBody`)).json<Feed>();
    expect(pretty.entries[1]?.data).toBe('{\n  "a": "1"\n}');
    const harder = (await readFeed(http, `/streams/${stream}?embed=TryHarder`)).json<Feed>();
    expect(harder.entries[0]).toMatchObject({ data: 'plain text', isJson: false });
  });

  it('serves the description document: 200 when asked for, 406 without Accept', async () => {
    const stream = await streamWith(1);
    const asked = await http('GET', `/streams/${stream}`, {
      headers: { accept: 'application/vnd.eventstore.streamdesc+json' },
    });
    expect(asked.status).toBe(200);
    expect(asked.json().title).toBe(`Description document for '${stream}'`);
    const none = await http('GET', `/streams/${stream}`);
    expect(none.status).toBe(406);
    expect(none.headers.get('content-type')).toBe(
      'application/vnd.eventstore.streamdesc+json; charset=utf-8',
    );
    const unsupported = await http('GET', `/streams/${stream}`, {
      headers: { accept: 'image/png' },
    });
    expect(unsupported.status).toBe(406);
  });

  it('answers 404 for a missing stream and 400 for bad numbers, counts and page sizes', async () => {
    const missing = uniqueStream('missing');
    for (const path of ['', '/0/5', '/head/backward/5', '/0/forward/5', '/0']) {
      const response = await readFeed(http, `/streams/${missing}${path}`);
      expect(response.status, path).toBe(404);
      expect(response.statusText).toBe('Not Found');
      expect(response.json<{ message: string }>().message).toBe(`Stream '${missing}' not found.`);
    }
    const stream = await streamWith(1);
    const bad: [string, string][] = [
      [`/streams/${stream}/x/forward/10`, "'x' is not valid event number"],
      [`/streams/${stream}/head/forward/10`, "'head' is not valid event number"],
      [`/streams/${stream}/0/forward/-1`, "'-1' is not valid count. Should be positive integer"],
      [`/streams/${stream}/0/forward/0`, "'0' is not valid count. Should be positive integer"],
      [`/streams/${stream}/0/forward/4097`, 'Read size too big, should be less than 4096 items'],
      [`/streams/${stream}/-3`, "'-3' is not valid event number"],
    ];
    for (const [path, message] of bad) {
      const response = await readFeed(http, path);
      expect(response.status, path).toBe(400);
      expect(response.json<{ message: string }>().message).toBe(message);
    }
    expect((await readFeed(http, `/streams/${stream}/0/forward/4096`)).status).toBe(200);
  });

  it('waits for new events with SVC-LongPoll and returns them', async () => {
    const stream = await streamWith(2);
    const started = Date.now();
    const waiting = readFeed(http, `/streams/${stream}/2/forward/20`, { 'SVC-LongPoll': '10' });
    await new Promise((resolve) => setTimeout(resolve, 300));
    await appendEvents(http, stream, [newEvent('late', { late: true })]);
    const response = await waiting;
    expect(response.status).toBe(200);
    expect(response.json<Feed>().entries.map((e) => e.title)).toEqual([`2@${stream}`]);
    expect(Date.now() - started).toBeLessThan(5000);

    const timedOut = Date.now();
    const empty = await readFeed(http, `/streams/${stream}/3/forward/20`, { 'ES-LongPoll': '1' });
    expect(empty.status).toBe(200);
    expect(empty.json<Feed>().entries).toHaveLength(0);
    expect(Date.now() - timedOut).toBeGreaterThanOrEqual(900);
    expect(
      (await readFeed(http, `/streams/${stream}/3/forward/20`, { 'ES-LongPoll': 'soon' })).status,
    ).toBe(400);
  });

  it('waits on the head page while If-None-Match names the current version', async () => {
    const stream = await streamWith(1);
    const etag = (await readFeed(http, `/streams/${stream}`)).headers.get('etag') ?? '';
    const waiting = readFeed(http, `/streams/${stream}`, {
      'If-None-Match': etag,
      'ES-LongPoll': '10',
    });
    await new Promise((resolve) => setTimeout(resolve, 300));
    await appendEvents(http, stream, [newEvent('late', {})]);
    const response = await waiting;
    expect(response.status).toBe(200);
    expect(response.json<Feed>().entries[0]?.title).toBe(`1@${stream}`);
    const unchanged = await readFeed(http, `/streams/${stream}`, {
      'If-None-Match': response.headers.get('etag') ?? '',
      'ES-LongPoll': '1',
    });
    expect(unchanged.status).toBe(304);
  });
});

describe('GET /streams/{stream}/{event}', () => {
  it('serves one event in each representation', async () => {
    const stream = uniqueStream('single');
    await appendEvents(http, stream, [newEvent('created', { a: { b: [1, 2] } }, { who: 'me' })]);
    const path = `/streams/${stream}/0`;
    const data = await http('GET', path, { headers: { accept: 'application/json' } });
    expect(data.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(data.headers.get('cache-control')).toBe('max-age=31536000, public');
    expect(data.json()).toEqual({ a: { b: [1, 2] } });
    const dto = await http('GET', path, {
      headers: { accept: 'application/vnd.eventstore.event+json' },
    });
    expect(dto.json()).toMatchObject({
      eventStreamId: stream,
      eventNumber: 0,
      eventType: 'created',
      data: { a: { b: [1, 2] } },
      metadata: { who: 'me' },
    });
    const entry = await http('GET', path, { headers: { accept: ATOM_JSON } });
    expect(entry.json()).toMatchObject({
      title: `0@${stream}`,
      summary: 'created',
      content: { eventType: 'created', data: { a: { b: [1, 2] } } },
    });
    const atom = await http('GET', path);
    expect(atom.headers.get('content-type')).toBe('application/atom+xml; charset=utf-8');
    expect(atom.text).toContain(`<title>0@${stream}</title>`);
    const xml = await http('GET', path, { headers: { accept: 'text/xml' } });
    expect(xml.text).toContain('<data><a><b>1</b><b>2</b></a></data>');
    const head = await http('GET', `/streams/${stream}/head`, {
      headers: { accept: 'application/json' },
    });
    expect(head.json()).toEqual({ a: { b: [1, 2] } });
    expect(head.headers.get('cache-control')).toBe('max-age=0, no-cache, must-revalidate');
  });

  it('answers 404 for a missing event or stream', async () => {
    const stream = await streamWith(1);
    expect(
      (await http('GET', `/streams/${stream}/5`, { headers: { accept: 'application/json' } }))
        .status,
    ).toBe(404);
    expect(
      (
        await http('GET', `/streams/${uniqueStream('none')}/0`, {
          headers: { accept: 'application/json' },
        })
      ).status,
    ).toBe(404);
  });

  it('redirects trailing slashes and answers unknown routes with a 404 that says so', async () => {
    const stream = await streamWith(1);
    const slash = await http('GET', `/streams/${stream}/`, { headers: { accept: ATOM_JSON } });
    expect(slash.status).toBe(307);
    expect(slash.headers.get('location')).toBe(`${running.node.baseUrl}/streams/${stream}`);
    const unknown = await http('GET', '/no/such/route');
    expect(unknown.status).toBe(404);
    expect(unknown.text).toBe('Not found: no endpoint answers GET /no/such/route.');
  });

  it('answers 401 for anonymous and wrong credentials', async () => {
    const stream = await streamWith(1);
    const anonymous = await http('GET', `/streams/${stream}`, {
      auth: false,
      headers: { accept: ATOM_JSON },
    });
    expect(anonymous.status).toBe(401);
    const wrong = basic('admin', 'wrong');
    const rejected = await http('GET', `/streams/${stream}`, {
      headers: { accept: ATOM_JSON, authorization: wrong },
    });
    expect(rejected.status).toBe(401);
    expect(rejected.headers.get('www-authenticate')).toBe('X-Basic realm="ESDB"');
    const write = await appendEvents(http, stream, [newEvent('x', {})], { authorization: wrong });
    expect(write.status).toBe(401);
  });
});
