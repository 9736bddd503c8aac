import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  appendEvents,
  ATOM_JSON,
  EVENTS_JSON,
  newEvent,
  readFeed,
  uniqueStream,
} from '../support/http-client.js';
import { basic } from '../support/credentials.js';
import { useNode } from '../support/use-node.js';

const OPS_AUTHORIZATION = basic('ops', 'changeit');
const running = useNode();
const http = running.http;

interface Feed {
  links: { uri: string; relation: string }[];
  entries: { title: string; summary: string }[];
}

async function streamWith(count: number, prefix: string): Promise<string> {
  const stream = uniqueStream(prefix);
  const events = Array.from({ length: count }, (_, i) => newEvent('e', { i }));
  expect((await appendEvents(http, stream, events)).status).toBe(201);
  return stream;
}

function setMetadata(
  stream: string,
  data: Record<string, unknown>,
  headers: Record<string, string> = {},
) {
  return http('POST', `/streams/${stream}/metadata`, {
    headers: { 'content-type': EVENTS_JSON, ...headers },
    body: JSON.stringify([{ eventId: randomUUID(), eventType: '$user-updated', data }]),
  });
}

async function titles(path: string): Promise<string[]> {
  const response = await readFeed(http, path);
  expect(response.status, path).toBe(200);
  return response.json<Feed>().entries.map((e) => e.title);
}

describe('stream metadata', () => {
  it('reads {} for a stream without metadata and 404 for no stream', async () => {
    const stream = await streamWith(1, 'meta-none');
    const empty = await http('GET', `/streams/${stream}/metadata`, {
      headers: { accept: 'application/json' },
    });
    expect(empty.status).toBe(200);
    expect(empty.json()).toEqual({});
    expect(
      (
        await http('GET', `/streams/${uniqueStream('nothing')}/metadata`, {
          headers: { accept: 'application/json' },
        })
      ).status,
    ).toBe(404);
  });

  it('writes metadata (201, Location in the metastream) and reads it back', async () => {
    const stream = await streamWith(1, 'meta-write');
    const written = await setMetadata(stream, { $maxCount: 5, custom: 'kept' });
    expect(written.status).toBe(201);
    expect(written.headers.get('location')).toBe(`${running.node.baseUrl}/streams/%24%24${stream}/0`);
    const read = await http('GET', `/streams/${stream}/metadata`, {
      headers: { accept: 'application/json' },
    });
    expect(read.json()).toEqual({ $maxCount: 5, custom: 'kept' });
    const single = await http('POST', `/streams/${stream}/metadata`, {
      headers: { 'content-type': 'application/json', 'ES-EventId': randomUUID() },
      body: JSON.stringify({ $maxCount: 7 }),
    });
    expect(single.status).toBe(201);
    const entry = await http('GET', `/streams/${stream}/metadata`, {
      headers: { accept: ATOM_JSON },
    });
    expect(entry.json()).toMatchObject({
      summary: '$metadata',
      content: { data: { $maxCount: 7 } },
    });
    // The metastream reads like a stream under /metadata/..., showing only its latest event.
    const latest = await http('GET', `/streams/${stream}/metadata/1`, {
      headers: { accept: 'application/json' },
    });
    expect(latest.json()).toEqual({ $maxCount: 7 });
    expect(await titles(`/streams/${stream}/metadata/0/forward/10`)).toEqual([`1@$$${stream}`]);
  });

  it('takes the spec\'s item shape ({eventId, eventType, data: {maxCount, acl, ...}}) as the system keys', async () => {
    const stream = await streamWith(5, 'meta-item');
    const eventId = randomUUID();
    const item = {
      eventId,
      eventType: 'metadata-item',
      data: { maxCount: 2, truncateBefore: 1, cacheControl: 30, acl: { r: 'admin', mr: ['$admins'] }, owner: 'team-a' },
    };
    const written = await http('POST', `/streams/${stream}/metadata`, {
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(item),
    });
    expect(written.status).toBe(201);
    const read = await http('GET', `/streams/${stream}/metadata`, { headers: { accept: ATOM_JSON } });
    expect(read.json()).toMatchObject({
      content: {
        eventId,
        data: { $maxCount: 2, $tb: 1, $cacheControl: 30, $acl: { $r: 'admin', $mr: ['$admins'] }, owner: 'team-a' },
      },
    });
    // In effect: $maxCount keeps the last two, and the ACL keeps $ops out.
    expect(await titles(`/streams/${stream}/0/forward/10`)).toEqual([`4@${stream}`, `3@${stream}`]);
    const asOps = await http('GET', `/streams/${stream}`, { headers: { accept: ATOM_JSON, authorization: OPS_AUTHORIZATION } });
    expect(asOps.status).toBe(401);

    const invalid = await http('POST', `/streams/${stream}/metadata`, {
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ data: { maxAge: -5 } }),
    });
    expect(invalid.status).toBe(400);
    expect(invalid.text).toBe('Invalid stream metadata: data.maxAge: Too small: expected number to be >0.');
    const unchanged = await http('GET', `/streams/${stream}/metadata`, { headers: { accept: 'application/json' } });
    expect(unchanged.json()).toMatchObject({ $maxCount: 2 });
  });

  it('rejects another event type and invalid bodies with 400', async () => {
    const stream = await streamWith(1, 'meta-bad');
    const typed = await http('POST', `/streams/${stream}/metadata`, {
      headers: { 'content-type': 'application/json', 'ES-EventType': 'other' },
      body: '{}',
    });
    expect(typed.status).toBe(400);
    expect(typed.text).toBe('Bad Request. You should not include an event type for metadata.');
    const broken = await http('POST', `/streams/${stream}/metadata`, {
      headers: { 'content-type': 'application/json' },
      body: '{nope',
    });
    expect(broken.status).toBe(400);
    const wrongVersion = await setMetadata(stream, { $maxCount: 1 }, { 'ES-ExpectedVersion': '3' });
    expect(wrongVersion.status).toBe(400);
    expect(wrongVersion.headers.get('ES-CurrentVersion')).toBe('-1');
  });

  it('enforces $maxCount, $tb and $maxAge on reads', async () => {
    const counted = await streamWith(5, 'meta-count');
    await setMetadata(counted, { $maxCount: 2 });
    expect(await titles(`/streams/${counted}`)).toEqual([`4@${counted}`, `3@${counted}`]);
    expect(
      (await http('GET', `/streams/${counted}/0`, { headers: { accept: 'application/json' } }))
        .status,
    ).toBe(404);

    const truncated = await streamWith(5, 'meta-tb');
    await setMetadata(truncated, { $tb: 3 });
    expect(await titles(`/streams/${truncated}/0/forward/10`)).toEqual([
      `4@${truncated}`,
      `3@${truncated}`,
    ]);

    const aged = await streamWith(2, 'meta-age');
    await setMetadata(aged, { $maxAge: 1 });
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(await titles(`/streams/${aged}`)).toEqual([]);
    // Expired events stay visible in $all until a scavenge removes them.
    const all = await titles('/streams/$all/head/backward/50');
    expect(all).toContain(`0@${aged}`);
    expect(all).toContain(`1@${aged}`);
  });

  it('uses $cacheControl for the head of the stream', async () => {
    const stream = await streamWith(1, 'meta-cache');
    await setMetadata(stream, { $cacheControl: 30 });
    const head = await readFeed(http, `/streams/${stream}`);
    expect(head.headers.get('cache-control')).toBe('max-age=30, public');
  });

  it('enforces $acl through the authorizer (401 when not permitted)', async () => {
    const stream = await streamWith(1, 'meta-acl');
    expect(
      (await readFeed(http, `/streams/${stream}`, { authorization: OPS_AUTHORIZATION })).status,
    ).toBe(200);
    await setMetadata(stream, { $acl: { $r: '$admins', $w: '$admins' } });
    expect(
      (await readFeed(http, `/streams/${stream}`, { authorization: OPS_AUTHORIZATION })).status,
    ).toBe(401);
    expect(
      (await appendEvents(http, stream, [newEvent('x', {})], { authorization: OPS_AUTHORIZATION }))
        .status,
    ).toBe(401);
    expect((await readFeed(http, `/streams/${stream}`)).status).toBe(200);
  });
});

describe('DELETE /streams/{stream}', () => {
  it('soft-deletes by default: 204, reads 404, metadata holds $tb', async () => {
    const stream = await streamWith(2, 'del-soft');
    const deleted = await http('DELETE', `/streams/${stream}`);
    expect(deleted.status).toBe(204);
    expect(deleted.statusText).toBe('Stream deleted');
    expect((await readFeed(http, `/streams/${stream}`)).status).toBe(404);
    expect(
      (await http('GET', `/streams/${stream}/0`, { headers: { accept: 'application/json' } }))
        .status,
    ).toBe(404);
    const metadata = await http('GET', `/streams/${stream}/metadata`, {
      headers: { accept: 'application/json' },
    });
    expect(metadata.text).toContain('"$tb"');
  });

  it('hard-deletes with SVC-HardDelete or ES-HardDelete: reads, writes, metadata and deletes answer 410', async () => {
    for (const header of ['SVC-HardDelete', 'ES-HardDelete']) {
      const stream = await streamWith(2, 'del-hard');
      expect(
        (await http('DELETE', `/streams/${stream}`, { headers: { [header]: 'True' } })).status,
      ).toBe(204);
      const read = await readFeed(http, `/streams/${stream}`);
      expect(read.status).toBe(410);
      expect(read.statusText).toBe('Deleted');
      expect(
        (await http('GET', `/streams/${stream}/0`, { headers: { accept: 'application/json' } }))
          .status,
      ).toBe(410);
      expect((await appendEvents(http, stream, [newEvent('x', {})])).status).toBe(410);
      expect((await setMetadata(stream, { $maxCount: 1 })).status).toBe(410);
      expect(
        (
          await http('GET', `/streams/${stream}/metadata`, {
            headers: { accept: 'application/json' },
          })
        ).status,
      ).toBe(410);
      expect((await http('DELETE', `/streams/${stream}`)).status).toBe(410);
    }
  });

  it('checks the expected version and refuses $all', async () => {
    const stream = await streamWith(2, 'del-version');
    const wrong = await http('DELETE', `/streams/${stream}`, {
      headers: { 'ES-ExpectedVersion': '0' },
    });
    expect(wrong.status).toBe(400);
    expect(wrong.headers.get('ES-CurrentVersion')).toBe('1');
    expect(
      (await http('DELETE', `/streams/${stream}`, { headers: { 'ES-ExpectedVersion': '1' } }))
        .status,
    ).toBe(204);
    const missing = await http('DELETE', `/streams/${uniqueStream('del-missing')}`);
    expect(missing.status).toBe(400);
    expect(missing.headers.get('ES-CurrentVersion')).toBe('-1');
    expect(
      (
        await http('DELETE', `/streams/${uniqueStream('del-missing-hard')}`, {
          headers: { 'ES-HardDelete': 'true' },
        })
      ).status,
    ).toBe(204);
    expect((await http('DELETE', '/streams/$all')).status).toBe(401);
    expect(
      (await http('DELETE', `/streams/${stream}`, { headers: { 'ES-HardDelete': 'perhaps' } }))
        .status,
    ).toBe(400);
  });
});

describe('GET /streams/$all', () => {
  it('needs credentials', async () => {
    expect((await readFeed(http, '/streams/$all', { authorization: '' })).status).toBe(401);
    expect(
      (await http('GET', '/streams/%24all', { auth: false, headers: { accept: ATOM_JSON } }))
        .status,
    ).toBe(401);
    // Any user's credentials will do (spec: "Reading $all requires user credentials").
    expect(
      (await readFeed(http, '/streams/$all', { authorization: OPS_AUTHORIZATION })).status,
    ).toBe(200);
  });

  it('pages forward and backward with position tokens, including system events and deleted streams', async () => {
    const kept = await streamWith(3, 'all-kept');
    const deleted = await streamWith(2, 'all-deleted');
    expect((await http('DELETE', `/streams/${deleted}`)).status).toBe(204);

    const head = await readFeed(http, '/streams/$all');
    expect(head.status).toBe(200);
    const headFeed = head.json<Feed & { title: string }>();
    expect(headFeed.title).toBe('All events');
    expect(headFeed.links.find((l) => l.relation === 'last')?.uri).toBe(
      `${running.node.baseUrl}/streams/%24all/00000000000000000000000000000000/forward/20`,
    );

    const forward: string[] = [];
    let previous: string | undefined =
      `${running.node.baseUrl}/streams/%24all/00000000000000000000000000000000/forward/7`;
    for (let page = 0; previous !== undefined && page < 500; page++) {
      const feed: Feed = (await readFeed(http, previous)).json<Feed>();
      if (feed.entries.length === 0) break;
      forward.push(...[...feed.entries].reverse().map((e) => e.title));
      previous = feed.links.find((l) => l.relation === 'previous')?.uri;
    }
    expect(forward).toContain('0@$user-admin');
    expect(forward.filter((t) => t.endsWith(`@${kept}`))).toEqual([
      `0@${kept}`,
      `1@${kept}`,
      `2@${kept}`,
    ]);
    expect(forward.filter((t) => t.endsWith(`@${deleted}`))).toEqual([
      `0@${deleted}`,
      `1@${deleted}`,
    ]);
    expect(forward).toContain(`0@$$${deleted}`);
    expect(new Set(forward).size).toBe(forward.length);

    const backward: string[] = [];
    let next: string | undefined = `${running.node.baseUrl}/streams/%24all/head/backward/7`;
    for (let page = 0; next !== undefined && page < 500; page++) {
      const feed: Feed = (await readFeed(http, next)).json<Feed>();
      backward.push(...feed.entries.map((e) => e.title));
      next =
        feed.entries.length === 0 ? undefined : feed.links.find((l) => l.relation === 'next')?.uri;
    }
    expect(backward.slice(-forward.length)).toEqual([...forward].reverse());
  });

  it('links the head page to a forward page that shows later writes', async () => {
    const head = (await readFeed(http, '/streams/$all/head/backward/5')).json<Feed>();
    const previous = head.links.find((l) => l.relation === 'previous')?.uri ?? '';
    const stream = await streamWith(1, 'all-later');
    const later = (await readFeed(http, previous)).json<Feed>();
    expect(later.entries.map((e) => e.title)).toContain(`0@${stream}`);
    expect(later.entries.map((e) => e.title)).not.toContain(head.entries[0]?.title);
  });

  it('answers 304 on the head while nothing was written', async () => {
    const head = await readFeed(http, '/streams/$all');
    const etag = head.headers.get('etag') ?? '';
    expect(etag).toMatch(/^"\d+;-?\d+"$/);
    expect((await readFeed(http, '/streams/$all', { 'If-None-Match': etag })).status).toBe(304);
    await streamWith(1, 'all-etag');
    expect((await readFeed(http, '/streams/$all', { 'If-None-Match': etag })).status).toBe(200);
  });

  it('rejects invalid positions', async () => {
    const response = await readFeed(http, '/streams/$all/xyz/forward/10');
    expect(response.status).toBe(400);
    expect(response.json<{ message: string }>().message).toBe('Invalid position argument: xyz');
    expect((await readFeed(http, '/streams/$all/head/forward/10')).status).toBe(400);
  });
});

describe('authorization on every streams endpoint', () => {
  it('answers 401 without credentials on each endpoint of the spec', async () => {
    const stream = await streamWith(2, 'auth-all');
    const batch = JSON.stringify([newEvent('x', {})]);
    const single = { 'content-type': 'application/json', 'ES-EventType': 'x' };
    const endpoints: [string, string, Record<string, string>, string?][] = [
      ['GET', `/streams/${stream}`, { accept: ATOM_JSON }],
      ['POST', `/streams/${stream}`, { 'content-type': EVENTS_JSON }, batch],
      ['DELETE', `/streams/${stream}`, {}],
      ['POST', `/streams/${stream}/incoming/${randomUUID()}`, single, '{}'],
      ['GET', `/streams/${stream}/0`, { accept: 'application/json' }],
      ['GET', `/streams/${stream}/1/2`, { accept: ATOM_JSON }],
      ['GET', `/streams/${stream}/1/backward/2`, { accept: ATOM_JSON }],
      ['GET', `/streams/${stream}/0/forward/2`, { accept: ATOM_JSON }],
      ['GET', `/streams/${stream}/metadata`, { accept: 'application/json' }],
      ['POST', `/streams/${stream}/metadata`, { 'content-type': EVENTS_JSON }, batch],
      ['GET', '/streams/$all', { accept: ATOM_JSON }],
    ];
    for (const [method, path, headers, body] of endpoints) {
      const response = await http(method, path, {
        auth: false,
        headers,
        ...(body ? { body } : {}),
      });
      expect(response.status, `${method} ${path}`).toBe(401);
      expect(response.statusText).toBe('Unauthorized');
    }
    expect(await titles(`/streams/${stream}`)).toEqual([`1@${stream}`, `0@${stream}`]);
  });
});
