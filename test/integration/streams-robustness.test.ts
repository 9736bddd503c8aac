/**
 * No client input may produce a 500: odd names, encodings, numbers, media types and bodies
 * (including JSON nested deeply enough to overflow a recursive serializer) against a real node.
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { EVENTS_JSON, type HttpOptions } from '../support/http-client.js';
import { useNode } from '../support/use-node.js';

const running = useNode();
const http = running.http;

const json = { accept: 'application/json' };
const batch = (data: string): string =>
  `[{"eventId":"${randomUUID()}","eventType":"t","data":${data}}]`;
const deep = (levels: number): string => '['.repeat(levels) + ']'.repeat(levels);

describe('hostile and malformed requests', () => {
  it('never answer 5xx and always carry a content type', async () => {
    const longName = 'a'.repeat(5000);
    const requests: [string, string, HttpOptions][] = [
      ['GET', '/streams/%ZZ', { headers: json }],
      ['GET', '/streams/a%2Fb', { headers: json }],
      ['GET', '/streams/$$', { headers: json }],
      ['GET', '/streams/%E2%82%AC%F0%9F%98%80', { headers: json }],
      ['GET', `/streams/${longName}`, { headers: json }],
      [
        'POST',
        `/streams/${longName}`,
        { headers: { 'content-type': EVENTS_JSON }, body: batch('{}') },
      ],
      ['GET', '/streams/x?embed=a&embed=b', { headers: json }],
      ['GET', '/streams/x', { headers: { accept: '*/*;q=abc, ;;;' } }],
      ['GET', '/streams/x/0/forward/99999999999999999999999', { headers: json }],
      ['GET', '/streams/x/99999999999999999999999/forward/5', { headers: json }],
      ['GET', '/streams/x/9007199254740991/forward/4096', { headers: json }],
      ['GET', '/streams/$all/FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF/forward/5', { headers: json }],
      ['GET', '/streams/$all/001FFFFFFFFFFFFF001FFFFFFFFFFFFF/backward/5', { headers: json }],
      ['POST', '/streams/x', { headers: { 'content-type': EVENTS_JSON }, body: batch(deep(5000)) }],
      ['POST', '/streams/x', { headers: { 'content-type': EVENTS_JSON }, body: deep(100_000) }],
      [
        'POST',
        '/streams/x',
        { headers: { 'content-type': EVENTS_JSON, 'ES-ExpectedVersion': '-3' }, body: batch('{}') },
      ],
      [
        'POST',
        '/streams/x',
        { headers: { 'content-type': 'application/vnd.eventstore.events+xml' }, body: '<Events/>' },
      ],
      [
        'POST',
        '/streams/x',
        { headers: { 'content-type': 'application/json; charset=latin1' }, body: '{}' },
      ],
      [
        'POST',
        '/streams/x/metadata',
        { headers: { 'content-type': 'application/json' }, body: deep(5000) },
      ],
      [
        'POST',
        '/streams/x/incoming/nope',
        { headers: { 'content-type': 'application/json', 'ES-EventType': 'a' }, body: '{}' },
      ],
      ['DELETE', '/streams/$$', {}],
      ['PUT', '/streams/x', { body: '{}' }],
    ];
    for (const [method, path, options] of requests) {
      const response = await http(method, path, options);
      expect(response.status, `${method} ${path.slice(0, 80)}`).toBeLessThan(500);
      expect(response.headers.get('content-type'), `${method} ${path.slice(0, 80)}`).toMatch(
        /charset=utf-8/,
      );
    }
  });

  it('stores deep JSON sent as a raw single event and reads it back as text', async () => {
    const stream = `deep-${randomUUID().slice(0, 8)}`;
    const headers = {
      'content-type': 'application/json',
      'ES-EventType': 'deep',
      'ES-EventId': randomUUID(),
    };
    expect((await http('POST', `/streams/${stream}`, { headers, body: deep(20_000) })).status).toBe(
      201,
    );
    for (const accept of [
      'application/json',
      'text/xml',
      'application/vnd.eventstore.event+json',
      'application/atom+xml',
    ]) {
      expect(
        (await http('GET', `/streams/${stream}/0`, { headers: { accept } })).status,
        accept,
      ).toBe(200);
    }
    for (const embed of ['content', 'body', 'prettybody', 'tryharder']) {
      expect(
        (await http('GET', `/streams/${stream}?embed=${embed}`, { headers: json })).status,
        embed,
      ).toBe(200);
    }
  });

  it('accepts stream names longer than a hundred characters', async () => {
    const stream = `long-${'x'.repeat(300)}`;
    const response = await http('POST', `/streams/${stream}`, {
      headers: { 'content-type': EVENTS_JSON },
      body: batch('{"a":1}'),
    });
    expect(response.status).toBe(201);
    expect((await http('GET', `/streams/${stream}/0`, { headers: json })).json()).toEqual({ a: 1 });
  });
});
