/**
 * Issue 29, items 3 and 5 against a real node: stream and group names are checked once at the
 * edge. Empty names and names with control characters (NUL, other C0, DEL, C1) are refused with
 * 400 and a message naming the problem, and nothing is written; Atom XML stays well-formed for a
 * strict XML 1.0 parser (saxes) even when an event type holds a control character.
 */
import { SaxesParser } from 'saxes';
import { describe, expect, it } from 'vitest';

import { appendEvents, newEvent, uniqueStream } from '../support/http-client.js';
import { useNode } from '../support/use-node.js';

const running = useNode();
const http = running.http;
const ATOM_XML = 'application/atom+xml';

function xmlProblem(text: string): string | undefined {
  const parser = new SaxesParser();
  let problem: string | undefined;
  parser.on('error', (err) => {
    problem ??= err.message;
  });
  parser.write(text).close();
  return problem;
}

describe('stream names', () => {
  it.each([
    ['NUL', 'nul%00x', 'U+0000'],
    ['unit separator', 'a%1Fb', 'U+001F'],
    ['newline', 'line%0Abreak', 'U+000A'],
    ['DEL', 'del%7F', 'U+007F'],
    ['C1 NEL', 'nel%C2%85', 'U+0085'],
  ])('with a %s are refused with 400 and a message; nothing is written', async (_what, encoded, codePoint) => {
    const written = await appendEvents(http, decodeURIComponent(encoded), [newEvent('t', { a: 1 })]);
    expect(written.status).toBe(400);
    expect(written.text).toContain('Stream name must not contain control characters');
    expect(written.text).toContain(codePoint);
    const read = await http('GET', `/streams/${encoded}`, { headers: { accept: 'application/json' } });
    expect(read.status).toBe(400);
    const metadata = await http('GET', `/streams/${encoded}/metadata`, { headers: { accept: 'application/json' } });
    expect(metadata.status).toBe(400);
  });

  it('$all and the stream stay well-formed XML, also with a control character in an event type', async () => {
    const stream = uniqueStream('xml');
    expect((await appendEvents(http, stream, [newEvent('ok', { a: 1 }), newEvent('bad\u0001type', { a: 2 })])).status).toBe(201);
    for (const path of [`/streams/${stream}`, `/streams/${stream}/1`, '/streams/%24all', `/streams/%24all/head/backward/50?embed=body`]) {
      const response = await http('GET', path, { headers: { accept: ATOM_XML } });
      expect(response.status, path).toBe(200);
      expect(xmlProblem(response.text), path).toBeUndefined();
    }
    // The test's parser does see what used to break the feeds.
    expect(xmlProblem('<a>\u0000</a>')).toMatch(/disallowed character/);
  });
});

describe('subscription group routes', () => {
  it.each([
    ['an empty stream', 'PUT', '/subscriptions//g1', 'Stream name must not be empty'],
    ['an empty group', 'PUT', '/subscriptions/s1/', 'Group name must not be empty'],
    ['a NUL in the group', 'PUT', '/subscriptions/s1/g%00', 'Group name must not contain control characters'],
    ['an empty stream, update', 'POST', '/subscriptions//g1', 'Stream name must not be empty'],
    ['an empty group, read', 'GET', '/subscriptions/s1/', 'Group name must not be empty'],
    ['an empty stream, info', 'GET', '/subscriptions//g1/info', 'Stream name must not be empty'],
    ['an empty stream, delete', 'DELETE', '/subscriptions//g1', 'Stream name must not be empty'],
  ])('with %s are refused with 400 and a message', async (_what, method, path, message) => {
    const response = await http(method, path, {
      headers: { 'content-type': 'application/json', accept: 'application/json' },
      ...(method === 'PUT' || method === 'POST' ? { body: '{}' } : {}),
    });
    expect(response.status, `${method} ${path}`).toBe(400);
    expect(response.text).toContain(message);
  });

  it('no group was created by those requests', async () => {
    const list = await http('GET', '/subscriptions', { headers: { accept: 'application/json' } });
    expect(list.status).toBe(200);
    const groups = list.json<Array<{ eventStreamId: string; groupName: string }>>();
    expect(groups.filter((g) => g.eventStreamId === '' || g.groupName === '' || g.eventStreamId === 's1')).toEqual([]);
  });
});
