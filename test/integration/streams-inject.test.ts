/**
 * The streams routes in-process (fastify inject) over the in-memory EventDb: the same
 * expected-version matrix as against the real node, which keeps the fake honest, plus the
 * server-level answers (CORS headers, OPTIONS, 404 with a message).
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXPECTED_VERSION_MATRIX, type StreamState } from '../support/expected-version-matrix.js';
import { ADMIN_AUTHORIZATION } from '../support/credentials.js';
import { startInjectServer, type InjectServer } from '../support/inject-server.js';

let server: InjectServer;

beforeAll(async () => {
  server = await startInjectServer();
});

afterAll(async () => {
  await server.close();
});

function append(stream: string, expected: string) {
  return server.app.inject({
    method: 'POST',
    url: `/streams/${stream}`,
    headers: {
      authorization: ADMIN_AUTHORIZATION,
      'content-type': 'application/vnd.eventstore.events+json',
      'ES-ExpectedVersion': expected,
    },
    payload: JSON.stringify([{ eventId: randomUUID(), eventType: 't', data: {} }]),
  });
}

async function prepare(state: StreamState): Promise<string> {
  const stream = `inject-${state}-${randomUUID().slice(0, 8)}`;
  if (state === 'new') return stream;
  await append(stream, '-2');
  await append(stream, '-2');
  if (state !== 'existing') {
    const headers = {
      authorization: ADMIN_AUTHORIZATION,
      'ES-HardDelete': String(state === 'hard-deleted'),
    };
    const deleted = await server.app.inject({
      method: 'DELETE',
      url: `/streams/${stream}`,
      headers,
    });
    expect(deleted.statusCode).toBe(204);
  }
  return stream;
}

describe('streams routes over the in-memory engine', () => {
  it.each(EXPECTED_VERSION_MATRIX)(
    '$state stream, expected version $expected -> $status',
    async ({ state, expected, status, result }) => {
      const stream = await prepare(state);
      const response = await append(stream, expected);
      expect(response.statusCode).toBe(status);
      if (status === 201) expect(response.headers.location).toMatch(new RegExp(`/${result}$`));
      if (status === 400) expect(response.headers['es-currentversion']).toBe(String(result));
    },
  );

  it('sends CORS headers, answers OPTIONS with 200 and unknown routes with a 404 that says so', async () => {
    const options = await server.app.inject({ method: 'OPTIONS', url: '/streams/x' });
    expect(options.statusCode).toBe(200);
    expect(options.headers['access-control-allow-origin']).toBe('*');
    expect(options.headers['access-control-expose-headers']).toContain('ES-CurrentVersion');
    const feed = await server.app.inject({ method: 'GET', url: '/streams/x' });
    expect(feed.headers['access-control-allow-methods']).toBe('GET, POST, DELETE, OPTIONS');
    expect(options.headers['access-control-allow-methods']).toBe('GET, POST, DELETE, OPTIONS');
    const put = await server.app.inject({ method: 'PUT', url: '/streams/x' });
    expect(put.statusCode).toBe(405);
    expect(put.statusMessage).toBe('Method Not Allowed');
    expect(put.headers.allow).toBe('GET, POST, DELETE, OPTIONS');
    const missing = await server.app.inject({ method: 'GET', url: '/nowhere' });
    expect(missing.statusCode).toBe(404);
    expect(missing.body).toBe('Not found: no endpoint answers GET /nowhere.');
    expect(put.body).toBe('Method not allowed: /streams/x answers GET, POST, DELETE, OPTIONS, not PUT.');
  });
});
