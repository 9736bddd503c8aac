/**
 * Issue 29, item 4: every error answers with a message, in the type the request accepts
 * (text/plain when nothing matches), while status codes and the headers clients rely on
 * (WWW-Authenticate, Allow, ES-CurrentVersion) stay; a request that is not HTTP is answered
 * as text, not JSON.
 */
import net from 'node:net';
import { describe, expect, it } from 'vitest';
import { appendEvents, newEvent, uniqueStream } from '../support/http-client.js';
import { useNode } from '../support/use-node.js';

const running = useNode();
const http = running.http;

const CASES: Array<{ what: string; method: string; path: () => string; status: number; auth?: boolean; headers?: Record<string, string> }> = [];
const deleted = uniqueStream('gone');
CASES.push(
  { what: 'no credentials', method: 'GET', path: () => '/users', status: 401, auth: false },
  { what: 'wrong credentials', method: 'GET', path: () => '/users', status: 401, headers: { authorization: `Basic ${Buffer.from('admin:wrong').toString('base64')}` } },
  { what: 'unknown route', method: 'GET', path: () => '/no/such/route', status: 404 },
  { what: 'unknown stream', method: 'GET', path: () => `/streams/${uniqueStream('none')}`, status: 404 },
  { what: 'method not allowed', method: 'PATCH', path: () => '/streams/x', status: 405 },
  { what: 'deleted stream', method: 'GET', path: () => `/streams/${deleted}`, status: 410 },
);

async function deleteStream(): Promise<void> {
  expect((await appendEvents(http, deleted, [newEvent('E', {})])).status).toBe(201);
  expect((await http('DELETE', `/streams/${deleted}`, { headers: { 'ES-HardDelete': 'true' } })).status).toBe(204);
}

describe('error bodies', () => {
  it('carry a message as text/plain by default (no Accept, */*, or a type nothing matches)', async () => {
    // A stream read with no feed type accepted is a 406 (or the description document) before
    // anything is looked up: the stream cases are in the JSON and XML test only.
    for (const c of CASES.filter((c) => !c.path().startsWith('/streams/') || c.method !== 'GET')) {
      for (const accept of [undefined, '*/*', 'text/html']) {
        const res = await http(c.method, c.path(), { auth: c.auth !== false, headers: { ...c.headers, ...(accept === undefined ? {} : { accept }) } });
        expect(res.status, c.what).toBe(c.status);
        expect(res.headers.get('content-type'), c.what).toBe('text/plain; charset=utf-8');
        expect(res.text.length, `${c.what}: ${accept}`).toBeGreaterThan(5);
      }
    }
  });

  it('answer JSON for JSON types and well-formed XML for XML types', async () => {
    await deleteStream();
    for (const c of CASES) {
      for (const accept of ['application/json', 'application/vnd.eventstore.atom+json']) {
        const res = await http(c.method, c.path(), { auth: c.auth !== false, headers: { ...c.headers, accept } });
        expect(res.status, c.what).toBe(c.status);
        expect(res.headers.get('content-type'), c.what).toBe('application/json; charset=utf-8');
        const body = res.json<{ status: number; error: string; message: string }>();
        expect(body.status, c.what).toBe(c.status);
        expect(body.message.length, c.what).toBeGreaterThan(5);
      }
      for (const accept of ['application/xml', 'application/atom+xml']) {
        const res = await http(c.method, c.path(), { auth: c.auth !== false, headers: { ...c.headers, accept } });
        expect(res.status, c.what).toBe(c.status);
        expect(res.headers.get('content-type'), c.what).toBe('application/xml; charset=utf-8');
        expect(res.text, c.what).toMatch(new RegExp(`^<\\?xml version="1.0" encoding="utf-8"\\?><error><status>${c.status}</status><reason>[^<]+</reason><message>[^<]{6,}</message></error>$`));
      }
    }
  });

  it('name what is missing and keep the headers clients rely on', async () => {
    const stream = uniqueStream('missing');
    const missing = await http('GET', `/streams/${stream}`, { headers: { accept: 'application/vnd.eventstore.atom+json' } });
    expect(missing.json<{ message: string }>().message).toBe(`Stream '${stream}' not found.`);
    const denied = await http('GET', '/users', { auth: false });
    expect(denied.headers.get('www-authenticate')).toBe('X-Basic realm="ESDB"');
    const notAllowed = await http('PATCH', '/streams/x', { headers: { accept: 'application/json' } });
    expect(notAllowed.headers.get('allow')).toContain('GET');
    expect(notAllowed.json<{ message: string }>().message).toContain('PATCH');
    const gone = await http('GET', `/streams/${deleted}`, { headers: { accept: 'application/json' } });
    expect(gone.json<{ message: string }>().message).toBe(`Stream '${deleted}' has been deleted.`);
    const versioned = uniqueStream('versioned');
    const wrong = await appendEvents(http, versioned, [newEvent('E', {})], { 'ES-ExpectedVersion': '5', accept: 'application/json' });
    expect(wrong.status).toBe(400);
    expect(wrong.headers.get('es-currentversion')).toBe('-1');
  });

  it('answer a request that is not HTTP as text, not JSON', async () => {
    const answer = await new Promise<string>((resolve, reject) => {
      const socket = net.connect(running.node.port, '127.0.0.1');
      let text = '';
      socket.on('data', (chunk) => (text += chunk.toString()));
      socket.on('close', () => resolve(text));
      socket.on('error', reject);
      socket.setTimeout(5000, () => socket.destroy(new Error('no answer in 5 s')));
      socket.write('GARBAGE NONSENSE\r\n\r\n');
    });
    expect(answer).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n/);
    expect(answer).toContain('Content-Type: text/plain; charset=utf-8');
    expect(answer.split('\r\n\r\n')[1]).toMatch(/not valid HTTP/);
  });
});
