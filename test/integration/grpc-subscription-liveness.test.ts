/**
 * Liveness messages of gRPC catch-up subscriptions on a real node, as the original sends them:
 * caught_up to every client; fell_behind only to a client that asks for it (control option
 * compatibility 2), when a live subscription finds a page or more of events it has not sent; then
 * caught_up again once it has sent them. A connect client built from the project's .proto types
 * sets the compatibility level that the official clients set or leave out.
 */
import { create } from '@bufbuild/protobuf';
import { createClient } from '@connectrpc/connect';
import { createGrpcTransport } from '@connectrpc/connect-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { ReadReqSchema, Streams, type ReadReq, type ReadResp } from '../../node/src/grpc/gen/eventdb/grpc/streams_pb.js';
import { ADMIN_AUTHORIZATION } from '../support/credentials.js';
import { startNode, type NodeProcess } from '../support/node-process.js';

const BURST_EVENTS = 2000;
const TIMEOUT_MS = 30_000;

let node: NodeProcess;
let streams: ReturnType<typeof createClient<typeof Streams>>;
beforeAll(async () => {
  node = await startNode();
  streams = createClient(Streams, createGrpcTransport({ baseUrl: node.baseUrl }));
});
afterAll(async () => {
  await node?.stop();
});

/** One write of `count` events to `stream` over HTTP: one commit, a burst for a live subscriber. */
async function burst(stream: string, count: number): Promise<void> {
  const events = Array.from({ length: count }, (_, i) => ({ eventId: crypto.randomUUID(), eventType: 'Burst', data: { i } }));
  const response = await fetch(`${node.baseUrl}/streams/${stream}`, {
    method: 'POST',
    headers: { authorization: ADMIN_AUTHORIZATION, 'content-type': 'application/vnd.eventstore.events+json' },
    body: JSON.stringify(events),
  });
  expect(response.status).toBe(201);
}

/**
 * Subscribes, writes a burst once the subscription has caught up, and returns the kinds of the
 * messages received (events counted, not listed) until it has every event of the burst and is
 * caught up again.
 */
async function liveness(request: ReadReq, stream: string): Promise<string[]> {
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(), TIMEOUT_MS);
  const kinds: string[] = [];
  let events = 0;
  try {
    for await (const response of streams.read(request, { signal: abort.signal }) as AsyncIterable<ReadResp>) {
      const kind = response.content.case ?? 'none';
      if (response.content.case === 'event') {
        const name = response.content.value.event?.streamIdentifier?.streamName;
        if (name !== undefined && Buffer.from(name).toString() === stream) events++;
        if (kinds.at(-1) !== 'event') kinds.push('event');
        continue;
      }
      if (kind === 'checkpoint') continue;
      kinds.push(kind);
      if (kind === 'caughtUp' && kinds.filter((k) => k === 'caughtUp').length === 1) await burst(stream, BURST_EVENTS);
      if (kind === 'caughtUp' && events >= BURST_EVENTS) break;
    }
  } catch (error) {
    throw new Error(`after ${kinds.join(', ')} and ${events} events: ${String(error)}`);
  } finally {
    clearTimeout(timer);
    abort.abort();
  }
  expect(events).toBe(BURST_EVENTS);
  return kinds;
}

function allRequest(compatibility: number | undefined): ReadReq {
  return create(ReadReqSchema, {
    options: {
      streamOption: { case: 'all', value: { allOption: { case: 'end', value: {} } } },
      countOption: { case: 'subscription', value: {} },
      filterOption: { case: 'noFilter', value: {} },
      uuidOption: { content: { case: 'string', value: {} } },
      ...(compatibility === undefined ? {} : { controlOption: { compatibility } }),
    },
  });
}

function streamRequest(stream: string, compatibility: number | undefined): ReadReq {
  return create(ReadReqSchema, {
    options: {
      streamOption: { case: 'stream', value: { streamIdentifier: { streamName: Buffer.from(stream) }, revisionOption: { case: 'end', value: {} } } },
      countOption: { case: 'subscription', value: {} },
      uuidOption: { content: { case: 'string', value: {} } },
      ...(compatibility === undefined ? {} : { controlOption: { compatibility } }),
    },
  });
}

describe('gRPC subscription liveness: caught_up and fell_behind', () => {
  it('$all, compatibility 2: caught up, a burst of 2,000 events puts it behind (fell_behind), it sends them and says caught_up again', async () => {
    expect(await liveness(allRequest(2), 'burst-all-2')).toEqual(['confirmation', 'caughtUp', 'fellBehind', 'event', 'caughtUp']);
  });

  it('$all without a compatibility level (as the Node and Python clients): no fell_behind, caught_up again after the burst', async () => {
    expect(await liveness(allRequest(undefined), 'burst-all-0')).toEqual(['confirmation', 'caughtUp', 'event', 'caughtUp']);
  });

  it('a stream, compatibility 2: the same sequence', async () => {
    expect(await liveness(streamRequest('burst-stream-2', 2), 'burst-stream-2')).toEqual(['confirmation', 'caughtUp', 'fellBehind', 'event', 'caughtUp']);
  });

  it('a live subscriber that keeps up with writes smaller than a page never falls behind', async () => {
    const abort = new AbortController();
    const timer = setTimeout(() => abort.abort(), TIMEOUT_MS);
    const kinds: string[] = [];
    let events = 0;
    try {
      for await (const response of streams.read(streamRequest('small-writes', 2), { signal: abort.signal }) as AsyncIterable<ReadResp>) {
        const kind = response.content.case ?? 'none';
        if (kind === 'event') events++;
        else kinds.push(kind);
        if (kind === 'caughtUp') for (let i = 0; i < 5; i++) await burst('small-writes', 100);
        if (events >= 500) break;
      }
    } finally {
      clearTimeout(timer);
      abort.abort();
    }
    expect(kinds).toEqual(['confirmation', 'caughtUp']);
  });
});
