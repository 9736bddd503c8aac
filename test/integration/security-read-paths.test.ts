/**
 * Issue 29, item 1: no read path shows a user what the ACL of an event's own stream denies it,
 * and none shows a password hash. One real node (projections on); `carol` is a user with no
 * groups. Every read path is walked as carol: the stream with links, a single event through a
 * link, `$all` (read by every authenticated user, as the spec says, and filtered event by event;
 * also once `$$$all` names every user explicitly), a long-poll subscription to `$all`, a
 * persistent subscription with link resolution, a transient projection over a stream of links
 * and over `$all`, and `/projections/read-events`. The same walk as admin does find the secret,
 * so the test would see a leak.
 */
import { randomUUID } from 'node:crypto';

import { beforeAll, describe, expect, it } from 'vitest';

import { basic } from '../support/credentials.js';
import { appendEvents, ATOM_JSON, EVENTS_JSON, newEvent, uniqueStream, type HttpResponse } from '../support/http-client.js';
import { createGroup } from '../support/competing-consumer.js';
import { useNode } from '../support/use-node.js';

const running = useNode({ args: ['--run-projections', 'All'] });
const http = running.http;

const CAROL_PASSWORD = 'carol-pw-29';
const CAROL = { authorization: basic('carol', CAROL_PASSWORD) };
const ADMIN = {};
const SECRET = `TOP-SECRET-${randomUUID()}`;
const secretStream = uniqueStream('secret');
const publicStream = uniqueStream('pub');
const ALL_START = '0'.repeat(32);
const COMPETING_JSON = 'application/vnd.eventstore.competingatom+json';

/** What no response to carol may contain. */
function expectNothingSecret(response: HttpResponse, what: string): void {
  expect(response.text, `${what}: the secret event`).not.toContain(SECRET);
  expect(response.text, `${what}: a password hash`).not.toMatch(/passwordHash/i);
}

function as(headers: Record<string, string>) {
  return (method: string, path: string, init: { headers?: Record<string, string>; body?: string } = {}) =>
    http(method, path, { ...init, headers: { ...init.headers, ...headers } });
}
const carol = as(CAROL);
const admin = as(ADMIN);

/** Every page of `$all` from the start, forward, following `previous` links to the end (bounded). */
async function walkAll(who: typeof carol): Promise<{ statuses: number[]; text: string }> {
  let path = `/streams/%24all/${ALL_START}/forward/50?embed=body`;
  const statuses: number[] = [];
  let text = '';
  for (let page = 0; page < 500; page++) {
    const response = await who('GET', path, { headers: { accept: ATOM_JSON } });
    statuses.push(response.status);
    text += response.text;
    if (response.status !== 200) break;
    const feed = response.json<{ links: Array<{ relation: string; uri: string }> }>();
    // A forward page at the end of the log has no `previous` link.
    const previous = feed.links.find((l) => l.relation === 'previous');
    if (previous === undefined) return { statuses, text };
    const next = `${new URL(previous.uri).pathname}?embed=body`;
    if (next === path) break;
    path = next;
  }
  return { statuses, text };
}

async function waitProjection(name: string, who: typeof carol): Promise<string> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const response = await who('GET', `/projection/${name}/statistics`);
    const status = response.status === 200 ? String(response.json().projections[0].status) : `HTTP ${response.status}`;
    if (status.startsWith('Completed') || status.startsWith('Faulted') || Date.now() > deadline) return status;
    await new Promise((r) => setTimeout(r, 100));
  }
}

beforeAll(async () => {
  const created = await admin('POST', '/users/', {
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ LoginName: 'carol', FullName: 'Carol', Groups: [], Password: CAROL_PASSWORD }),
  });
  expect(created.status).toBe(201);
  const locked = await admin('POST', `/streams/${secretStream}/metadata`, {
    headers: { 'content-type': EVENTS_JSON },
    body: JSON.stringify([newEvent('$metadata', { $acl: { $r: '$admins', $mr: '$admins' } })]),
  });
  expect(locked.status).toBe(201);
  expect((await appendEvents(http, secretStream, [newEvent('Secret', { code: SECRET })])).status).toBe(201);
  expect(
    (await appendEvents(http, publicStream, [newEvent('Public', { v: 1 }), { eventId: randomUUID(), eventType: '$>', data: `0@${secretStream}` }])).status,
  ).toBe(201);
  await createGroup(running.node.baseUrl, publicStream, 'g', { resolveLinktos: true, startFrom: 0 });
});

describe('as a user the ACLs deny, every read path', () => {
  it('stream read: the secret stream is refused; a link to it stays an unresolved link', async () => {
    expect((await carol('GET', `/streams/${secretStream}`, { headers: { accept: ATOM_JSON } })).status).toBe(401);
    const feed = await carol('GET', `/streams/${publicStream}?embed=body`, { headers: { accept: ATOM_JSON } });
    expect(feed.status).toBe(200);
    expectNothingSecret(feed, 'stream feed');
    expect(feed.json<{ entries: unknown[] }>().entries).toHaveLength(2);
    // The admin sees through the link: the check above can fail.
    expect((await admin('GET', `/streams/${publicStream}?embed=body`, { headers: { accept: ATOM_JSON } })).text).toContain(SECRET);
  });

  it('single event through a link: not found, for every representation', async () => {
    for (const accept of ['application/json', ATOM_JSON, 'application/atom+xml', 'application/vnd.eventstore.event+json', 'application/octet-stream']) {
      const response = await carol('GET', `/streams/${publicStream}/1`, { headers: { accept } });
      expect(response.status, accept).toBe(404);
      expectNothingSecret(response, `event as ${accept}`);
    }
    expect((await admin('GET', `/streams/${publicStream}/1`, { headers: { accept: 'application/json' } })).text).toContain(SECRET);
  });

  it('$all: read by every authenticated user (the spec), filtered: no secret, no password hash', async () => {
    const head = await carol('GET', '/streams/%24all?embed=body', { headers: { accept: ATOM_JSON } });
    expect(head.status).toBe(200);
    expectNothingSecret(head, '$all head');
    const walked = await walkAll(carol);
    expect(walked.statuses.every((s) => s === 200)).toBe(true);
    expect(walked.text).not.toContain(SECRET);
    expect(walked.text).not.toMatch(/passwordHash/i);
    expect(walked.text).toContain(publicStream);
    const asAdmin = await walkAll(admin);
    expect(asAdmin.text).toContain(SECRET);
    expect(asAdmin.text).toMatch(/passwordHash/);
  });

  it('persistent subscription with resolveLinkTos: the link, never its target', async () => {
    const response = await carol('GET', `/subscriptions/${publicStream}/g/10?embed=body`, { headers: { accept: COMPETING_JSON } });
    expect(response.status).toBe(200);
    expectNothingSecret(response, 'competing feed');
    expect(response.json<{ entries: unknown[] }>().entries).toHaveLength(2);
  });

  it('projections: fromAll is refused to a user outside $admins/$ops; a query over links sees no target it may not read; read-events likewise', async () => {
    const js = { 'content-type': 'application/javascript' };
    const overAll = uniqueStream('q-all');
    const allCreated = await carol('POST', `/projections/transient?name=${overAll}`, {
      headers: js,
      body: 'fromAll().when({ $init: function () { return { seen: [] }; }, $any: function (s, e) { s.seen.push(e.bodyRaw); return s; } })',
    });
    expect(allCreated.status).toBe(201);
    expect(await waitProjection(overAll, carol)).toMatch(/^Faulted/);
    expectNothingSecret(await carol('GET', `/projection/${overAll}/state`), 'fromAll state');

    const overLinks = uniqueStream('q-links');
    const linksCreated = await carol('POST', `/projections/transient?name=${overLinks}`, {
      headers: js,
      body: `fromStream('${publicStream}').when({ $init: function () { return { seen: [] }; }, $any: function (s, e) { s.seen.push(e.bodyRaw); return s; } })`,
    });
    expect(linksCreated.status).toBe(201);
    expect(await waitProjection(overLinks, carol)).toBe('Completed');
    const state = await carol('GET', `/projection/${overLinks}/state`);
    expect(state.status).toBe(200);
    expectNothingSecret(state, 'projection state');
    expect(state.text).toMatch(/\\"v\\": 1/);

    const readEvents = await carol('POST', '/projections/read-events', {
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query: { streams: [publicStream], allEvents: true }, maxEvents: 10 }),
    });
    expect(readEvents.status).toBe(200);
    expectNothingSecret(readEvents, 'read-events');
    const adminReadEvents = await admin('POST', '/projections/read-events', {
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query: { streams: [publicStream], allEvents: true }, maxEvents: 10 }),
    });
    expect(adminReadEvents.text).toContain(SECRET);
  });

  describe('once $$$all lets every user read $all', () => {
    beforeAll(async () => {
      const opened = await admin('POST', '/streams/%24all/metadata', {
        headers: { 'content-type': EVENTS_JSON },
        body: JSON.stringify([newEvent('$metadata', { $acl: { $r: '$all' } })]),
      });
      expect(opened.status).toBe(201);
    });

    it('$all pages show only the events of streams carol may read: no secret, no password hash', async () => {
      const walked = await walkAll(carol);
      expect(walked.statuses.every((s) => s === 200)).toBe(true);
      expect(walked.text).not.toContain(SECRET);
      expect(walked.text).not.toMatch(/passwordHash/i);
      expect(walked.text).not.toContain('$user-');
      // What carol may read is there.
      expect(walked.text).toContain(publicStream);
      const head = await carol('GET', '/streams/%24all?embed=body', { headers: { accept: ATOM_JSON } });
      expect(head.status).toBe(200);
      expectNothingSecret(head, '$all head');
      expect(head.headers.get('cache-control')).not.toContain('public');
    });

    it('a long-poll subscription to $all delivers a new public event, never a new secret one', async () => {
      const head = await carol('GET', '/streams/%24all', { headers: { accept: ATOM_JSON } });
      const previous = head.json<{ links: Array<{ relation: string; uri: string }> }>().links.find((l) => l.relation === 'previous');
      expect(previous).toBeDefined();
      let path = `${new URL(previous!.uri).pathname}?embed=body`;
      const polled = carol('GET', path, { headers: { accept: ATOM_JSON, 'es-longpoll': '10' } });
      await new Promise((r) => setTimeout(r, 300));
      const secretAgain = `${SECRET}-again`;
      expect((await appendEvents(http, secretStream, [newEvent('Secret', { code: secretAgain })])).status).toBe(201);
      const first = await polled;
      expect(first.status).toBe(200);
      expect(first.text).not.toContain(SECRET);
      // Follow the subscription on: the public event written next arrives, the secret never.
      expect((await appendEvents(http, publicStream, [newEvent('Public', { v: 2 })])).status).toBe(201);
      let seen = '';
      const publicTwo = /\\"v\\": 2/; // embedded JSON data is text in the entry
      for (let round = 0; round < 20 && !publicTwo.test(seen); round++) {
        const page = await carol('GET', path, { headers: { accept: ATOM_JSON, 'es-longpoll': '2' } });
        expect(page.status).toBe(200);
        seen += page.text;
        const next = page.json<{ links: Array<{ relation: string; uri: string }> }>().links.find((l) => l.relation === 'previous');
        if (next !== undefined) path = `${new URL(next.uri).pathname}?embed=body`;
      }
      expect(seen).toMatch(publicTwo);
      expect(seen).not.toContain(SECRET);
      expect(seen).not.toMatch(/passwordHash/i);
    });
  });
});
