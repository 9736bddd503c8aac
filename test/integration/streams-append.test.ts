import { connect } from 'node:net';
import { once } from 'node:events';
import { Readable } from 'node:stream';
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  appendEvents,
  EVENTS_JSON,
  newEvent,
  uniqueStream,
} from '../support/http-client.js';
import { ADMIN_AUTHORIZATION } from '../support/credentials.js';
import { EXPECTED_VERSION_MATRIX, type StreamState } from '../support/expected-version-matrix.js';
import { useNode } from '../support/use-node.js';

const running = useNode();
const http = running.http;

async function eventCount(stream: string): Promise<number> {
  const feed = await http('GET', `/streams/${stream}/0/forward/4096`, {
    headers: { accept: 'application/json' },
  });
  return feed.status === 200 ? (feed.json().entries as unknown[]).length : 0;
}

describe('POST /streams/{stream}', () => {
  it('appends an events+json batch and answers 201 with the Location of the first event', async () => {
    const stream = uniqueStream('append');
    const response = await appendEvents(http, stream, [
      newEvent('a', { n: 1 }),
      newEvent('b', { n: 2 }, { m: 1 }),
    ]);
    expect(response.status).toBe(201);
    expect(response.statusText).toBe('Created');
    expect(response.headers.get('location')).toBe(`${running.node.baseUrl}/streams/${stream}/0`);
    expect(response.headers.get('content-type')).toBe('text/plain; charset=utf-8');
    const second = await appendEvents(http, stream, [newEvent('c', { n: 3 })]);
    expect(second.headers.get('location')).toBe(`${running.node.baseUrl}/streams/${stream}/2`);
    const event = await http('GET', `/streams/${stream}/1`, {
      headers: { accept: 'application/vnd.eventstore.event+json' },
    });
    expect(event.json()).toMatchObject({
      eventStreamId: stream,
      eventNumber: 1,
      eventType: 'b',
      data: { n: 2 },
      metadata: { m: 1 },
    });
  });

  it('appends an events+xml batch, converting the data to JSON', async () => {
    const stream = uniqueStream('xml');
    const body = `<?xml version="1.0" encoding="utf-8"?><Events><Event><EventId>${randomUUID()}</EventId>
      <EventType>xml-type</EventType><Data><MyEvent><Something>1</Something></MyEvent></Data>
      </Event></Events>`;
    const response = await http('POST', `/streams/${stream}`, {
      headers: { 'content-type': 'application/vnd.eventstore.events+xml' },
      body,
    });
    expect(response.status).toBe(201);
    const read = await http('GET', `/streams/${stream}/0`, {
      headers: { accept: 'application/json' },
    });
    expect(read.json()).toEqual({ MyEvent: { Something: '1' } });
  });

  it('matches batch property names case-insensitively', async () => {
    const stream = uniqueStream('case');
    const body = JSON.stringify([{ EventId: randomUUID(), EventType: 'T', Data: { x: 1 } }]);
    const response = await http('POST', `/streams/${stream}`, {
      headers: { 'content-type': EVENTS_JSON },
      body,
    });
    expect(response.status).toBe(201);
  });

  it('redirects a JSON event without an event id to an idempotent incoming URI (307)', async () => {
    const stream = uniqueStream('redirect');
    const headers = { 'content-type': 'application/json', 'ES-EventType': 'thing-happened' };
    const first = await http('POST', `/streams/${stream}`, { headers, body: '{"a":"1"}' });
    expect(first.status).toBe(307);
    expect(first.statusText).toBe('Temporary Redirect');
    expect(first.text).toBe('Forwarding to idempotent URI');
    const location = first.headers.get('location') ?? '';
    expect(location).toMatch(
      new RegExp(`^${running.node.baseUrl}/streams/${stream}/incoming/[0-9a-f-]{36}$`),
    );
    expect(await eventCount(stream)).toBe(0);

    const created = await http('POST', location, { headers, body: '{"a":"1"}' });
    expect(created.status).toBe(201);
    expect(created.headers.get('location')).toBe(`${running.node.baseUrl}/streams/${stream}/0`);
    const retried = await http('POST', location, { headers, body: '{"a":"1"}' });
    expect(retried.status).toBe(201);
    expect(retried.headers.get('location')).toBe(`${running.node.baseUrl}/streams/${stream}/0`);
    expect(await eventCount(stream)).toBe(1);
    const event = await http('GET', `/streams/${stream}/0`, {
      headers: { accept: 'application/vnd.eventstore.event+json' },
    });
    expect(event.json()).toMatchObject({
      eventType: 'thing-happened',
      eventId: location.split('/').pop(),
      data: { a: '1' },
    });
  });

  it('takes type and id from SVC- or ES- headers for single JSON and binary events', async () => {
    const stream = uniqueStream('single');
    const json = await http('POST', `/streams/${stream}`, {
      headers: {
        'content-type': 'application/json',
        'SVC-EventType': 'j',
        'SVC-EventId': randomUUID(),
      },
      body: '{"k":true}',
    });
    expect(json.status).toBe(201);
    const bytes = Buffer.from([0, 1, 2, 255]);
    const raw = await http('POST', `/streams/${stream}`, {
      headers: {
        'content-type': 'application/octet-stream',
        'ES-EventType': 'bin',
        'ES-EventId': randomUUID(),
      },
      body: bytes,
    });
    expect(raw.status).toBe(201);
    expect(raw.headers.get('location')).toBe(`${running.node.baseUrl}/streams/${stream}/1`);
    const read = await http('GET', `/streams/${stream}/1`, {
      headers: { accept: 'application/octet-stream' },
    });
    expect(read.headers.get('content-type')).toBe('application/octet-stream; charset=utf-8');
    expect(read.bytes.equals(bytes)).toBe(true);
  });

  it('rejects an incoming URI with a batch body (415) and a missing content type (415)', async () => {
    const stream = uniqueStream('incoming');
    const batch = await http('POST', `/streams/${stream}/incoming/${randomUUID()}`, {
      headers: { 'content-type': EVENTS_JSON },
      body: JSON.stringify([newEvent('a', {})]),
    });
    expect(batch.status).toBe(415);
    const none = await http('POST', `/streams/${stream}`, { body: 'x' });
    expect(none.status).toBe(415);
    expect(none.statusText).toBe('Invalid or missing Content-Type');
  });

  it('answers 400 with a message and writes nothing for invalid requests', async () => {
    const stream = uniqueStream('invalid');
    const cases: {
      headers: Record<string, string>;
      body: string | Buffer;
      message: string | RegExp;
    }[] = [
      {
        headers: { 'content-type': EVENTS_JSON },
        body: '[{"eventId": ',
        message: 'Write request body invalid.',
      },
      {
        headers: { 'content-type': EVENTS_JSON },
        body: '[]',
        message: 'Write request body invalid.',
      },
      {
        headers: { 'content-type': EVENTS_JSON },
        body: '[{"eventId":"not-a-guid","eventType":"a","data":{}}]',
        message: 'Write request body invalid.',
      },
      {
        headers: { 'content-type': EVENTS_JSON },
        body: '[{"eventType":"a","data":{}}]',
        message: "Empty eventId provided. (Parameter 'eventId')",
      },
      {
        headers: { 'content-type': EVENTS_JSON },
        body: `[{"eventId":"${randomUUID()}","data":{}}]`,
        message: 'Empty eventType provided.',
      },
      {
        headers: { 'content-type': 'application/json' },
        body: '{}',
        message: /^Must include an event type/,
      },
      {
        headers: { 'content-type': 'application/json', 'ES-EventType': 'a', 'ES-EventId': 'nope' },
        body: '{}',
        message: 'ES-EventId header in wrong format.',
      },
      {
        headers: { 'content-type': EVENTS_JSON, 'ES-ExpectedVersion': 'abc' },
        body: JSON.stringify([newEvent('a', {})]),
        message: 'ES-ExpectedVersion header in wrong format.',
      },
      {
        headers: { 'content-type': EVENTS_JSON, 'SVC-ExpectedVersion': '-5' },
        body: JSON.stringify([newEvent('a', {})]),
        message: 'SVC-ExpectedVersion header in wrong format.',
      },
      {
        headers: { 'content-type': EVENTS_JSON, 'ES-RequiresMaster': 'maybe' },
        body: JSON.stringify([newEvent('a', {})]),
        message: 'ES-RequiresMaster header in wrong format.',
      },
    ];
    for (const testCase of cases) {
      const response = await http('POST', `/streams/${stream}`, {
        headers: testCase.headers,
        body: testCase.body,
      });
      expect(response.status, testCase.body.toString()).toBe(400);
      expect(response.headers.get('content-type')).toBe('text/plain; charset=utf-8');
      if (typeof testCase.message === 'string') expect(response.text).toBe(testCase.message);
      else expect(response.text).toMatch(testCase.message);
    }
    expect(await eventCount(stream)).toBe(0);
    expect(
      (await http('GET', `/streams/${stream}`, { headers: { accept: 'application/json' } })).status,
    ).toBe(404);
  });

  it('rejects an event larger than max-event-size with 400 and writes nothing', async () => {
    const stream = uniqueStream('large');
    const big = 'x'.repeat(4 * 1024 * 1024 + 1);
    const response = await http('POST', `/streams/${stream}`, {
      headers: {
        'content-type': 'application/octet-stream',
        'ES-EventType': 'big',
        'ES-EventId': randomUUID(),
      },
      body: big,
    });
    expect(response.status).toBe(400);
    expect(response.text).toBe('Too large events received. Limit is 4194304 bytes.');
    const batch = await appendEvents(http, stream, [
      newEvent('ok', { a: 1 }),
      newEvent('big', big),
    ]);
    expect(batch.status).toBe(400);
    expect(await eventCount(stream)).toBe(0);
  });

  it('answers 413 with the limit to a body over it, and writes nothing', async () => {
    const stream = uniqueStream('huge');
    const limitBytes = 2 * 4 * 1024 * 1024; // twice --max-event-size (a batch), at least 1 MiB
    const response = await http('POST', `/streams/${stream}`, {
      headers: { 'content-type': EVENTS_JSON },
      body: Buffer.alloc(limitBytes + 1, 0x20),
    });
    expect(response.status).toBe(413);
    expect(response.headers.get('content-type')).toBe('text/plain; charset=utf-8');
    expect(response.text).toBe(`Request body too large: at most ${limitBytes} bytes are accepted here.`);
    expect(await eventCount(stream)).toBe(0);
  });

  it('answers 413 to a body far over the limit, chunked or with a Content-Length', async () => {
    const stream = uniqueStream('huger');
    const limitBytes = 2 * 4 * 1024 * 1024;
    const body = Buffer.alloc(8 * limitBytes, 0x20); // 64 MiB: still being sent when the answer is ready
    for (const chunked of [false, true]) {
      const response = await http('POST', `/streams/${stream}`, {
        headers: { 'content-type': EVENTS_JSON },
        // a stream body has no Content-Length: the limit is found while reading
        body: chunked ? (Readable.from([body.subarray(0, limitBytes), body.subarray(limitBytes)]) ) : body,
      });
      expect(response.status, chunked ? 'chunked' : 'with Content-Length').toBe(413);
      expect(response.text).toBe(`Request body too large: at most ${limitBytes} bytes are accepted here.`);
    }
    expect(await eventCount(stream)).toBe(0);
  });

  it('answers 413 to a client that sends its whole body before it reads (the answer is not lost to a reset)', async () => {
    // A client busy sending (or slow to be scheduled, as on a loaded machine) reads the answer
    // only after its last byte: a server that closed the connection early would have answered
    // those bytes with a reset, which discards the 413 unread in the client's socket.
    const stream = uniqueStream('slow-reader');
    const limitBytes = 2 * 4 * 1024 * 1024;
    const { hostname, port } = new URL(running.node.baseUrl);
    const socket = connect({ host: hostname, port: Number(port) });
    try {
      await once(socket, 'connect');
      socket.on('error', () => {}); // a reset fails the write below, which is what this test reports
      socket.pause();
      const bodyBytes = 4 * limitBytes;
      socket.write(
        `POST /streams/${stream} HTTP/1.1\r\nHost: ${hostname}\r\nAuthorization: ${ADMIN_AUTHORIZATION}\r\n` +
          `Content-Type: ${EVENTS_JSON}\r\nContent-Length: ${bodyBytes}\r\n\r\n`,
      );
      const chunk = Buffer.alloc(1024 * 1024, 0x20);
      for (let sent = 0; sent < bodyBytes; sent += chunk.length) {
        await new Promise<void>((resolve, reject) => socket.write(chunk, (err) => (err ? reject(err) : resolve())));
      }
      await new Promise((resolve) => setTimeout(resolve, 300));
      const chunks: Buffer[] = [];
      socket.on('data', (data: Buffer) => chunks.push(data));
      socket.resume();
      await new Promise<void>((resolve, reject) => {
        socket.once('end', resolve);
        socket.once('error', reject);
        const poll = setInterval(() => {
          if (Buffer.concat(chunks).includes('accepted here.')) { clearInterval(poll); resolve(); }
        }, 20);
        socket.once('close', () => clearInterval(poll));
      });
      const answer = Buffer.concat(chunks).toString('utf8');
      expect(answer.split('\r\n')[0]).toBe('HTTP/1.1 413 Payload Too Large');
      expect(answer).toContain(`Request body too large: at most ${limitBytes} bytes are accepted here.`);
    } finally {
      socket.destroy();
    }
    expect(await eventCount(stream)).toBe(0);
  });

  it('is idempotent for retried batches with expected version Any and with explicit versions', async () => {
    const stream = uniqueStream('idem');
    const events = [newEvent('a', { n: 1 }), newEvent('b', { n: 2 })];
    expect((await appendEvents(http, stream, events)).status).toBe(201);
    const retry = await appendEvents(http, stream, events);
    expect(retry.status).toBe(201);
    expect(retry.headers.get('location')).toBe(`${running.node.baseUrl}/streams/${stream}/0`);
    const explicit = await appendEvents(http, stream, events, { 'ES-ExpectedVersion': '-1' });
    expect(explicit.status).toBe(201);
    expect(explicit.headers.get('location')).toBe(`${running.node.baseUrl}/streams/${stream}/0`);
    expect(await eventCount(stream)).toBe(2);
  });
});

describe('expected version matrix', () => {
  /** Streams in the existing and deleted states have events 0 and 1 before deletion. */
  async function prepare(state: StreamState): Promise<string> {
    const stream = uniqueStream(`ev-${state}`);
    if (state === 'new') return stream;
    expect((await appendEvents(http, stream, [newEvent('a', {}), newEvent('b', {})])).status).toBe(
      201,
    );
    if (state === 'soft-deleted')
      expect((await http('DELETE', `/streams/${stream}`)).status).toBe(204);
    if (state === 'hard-deleted') {
      expect(
        (await http('DELETE', `/streams/${stream}`, { headers: { 'ES-HardDelete': 'true' } }))
          .status,
      ).toBe(204);
    }
    return stream;
  }

  const matrix = EXPECTED_VERSION_MATRIX;

  it.each(matrix)(
    '$state stream, expected version $expected -> $status',
    async ({ state, expected, status, result }) => {
      const stream = await prepare(state);
      const response = await appendEvents(http, stream, [newEvent('c', { c: 1 })], {
        'ES-ExpectedVersion': expected,
      });
      expect(response.status).toBe(status);
      if (status === 201) {
        expect(response.headers.get('location')).toBe(
          `${running.node.baseUrl}/streams/${stream}/${result}`,
        );
      } else if (status === 400) {
        expect(response.statusText).toBe('Wrong expected EventNumber');
        expect(response.text).toBe(`Wrong expected EventNumber: the stream's current version is ${result}.`);
        expect(response.headers.get('ES-CurrentVersion')).toBe(String(result));
        expect(response.headers.get('SVC-CurrentVersion')).toBe(String(result));
      } else {
        expect(response.statusText).toBe('Stream deleted');
      }
    },
  );

  it('a soft-deleted stream recreated by an append shows only the new events, numbered on', async () => {
    const stream = await prepare('soft-deleted');
    expect((await appendEvents(http, stream, [newEvent('again', { v: 2 })])).status).toBe(201);
    const feed = await http('GET', `/streams/${stream}`, {
      headers: { accept: 'application/json' },
    });
    expect(feed.status).toBe(200);
    expect(feed.json().entries.map((e: { title: string }) => e.title)).toEqual([`2@${stream}`]);
  });
});
