/**
 * A slow gRPC subscriber applies back-pressure: the node sends what HTTP/2 flow control lets
 * through and reads the log on only as the subscriber takes it, instead of buffering the rest.
 * Eight subscriptions to $all from the start that read nothing, over a log of ~50 MB: the node's
 * resident memory stays flat (buffering would take ~400 MB); resumed, one of them receives the
 * whole log.
 */
import http2 from 'node:http2';
import { readFileSync } from 'node:fs';
import { create, toBinary } from '@bufbuild/protobuf';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { ReadReqSchema } from '../../node/src/grpc/gen/eventdb/grpc/streams_pb.js';
import { ADMIN_AUTHORIZATION } from '../support/credentials.js';
import { startNode, type NodeProcess } from '../support/node-process.js';

const EVENT_PAD_BYTES = 1000;
const BATCHES = 100;
const EVENTS_PER_BATCH = 500;
const SUBSCRIBERS = 8;

let node: NodeProcess;
beforeAll(async () => {
  node = await startNode();
});
afterAll(async () => {
  await node?.stop();
});

function residentMiB(): number {
  const kb = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${node.child.pid ?? 0}/status`, 'utf8'))?.[1];
  return Number(kb ?? 0) / 1024;
}

function subscribeFrame(): Buffer {
  const request = create(ReadReqSchema, {
    options: {
      streamOption: { case: 'all', value: { allOption: { case: 'start', value: {} } } },
      countOption: { case: 'subscription', value: {} },
      filterOption: { case: 'noFilter', value: {} },
      uuidOption: { content: { case: 'string', value: {} } },
    },
  });
  const message = toBinary(ReadReqSchema, request);
  const frame = Buffer.alloc(5 + message.length);
  frame.writeUInt32BE(message.length, 1);
  frame.set(message, 5);
  return frame;
}

describe('gRPC back-pressure', () => {
  it('eight subscribers that read nothing leave the node\'s memory flat; resumed, one receives the whole log', async () => {
    const pad = 'x'.repeat(EVENT_PAD_BYTES);
    for (let batch = 0; batch < BATCHES; batch++) {
      const events = Array.from({ length: EVENTS_PER_BATCH }, (_, i) => ({ eventId: crypto.randomUUID(), eventType: 'Fill', data: { i, pad } }));
      const response = await fetch(`${node.baseUrl}/streams/fill-${batch % 10}`, {
        method: 'POST',
        headers: { authorization: ADMIN_AUTHORIZATION, 'content-type': 'application/vnd.eventstore.events+json' },
        body: JSON.stringify(events),
      });
      expect(response.status).toBe(201);
      await response.arrayBuffer();
    }
    const logBytes = BATCHES * EVENTS_PER_BATCH * EVENT_PAD_BYTES;
    const before = residentMiB();
    const sessions: http2.ClientHttp2Session[] = [];
    const requests: http2.ClientHttp2Stream[] = [];
    try {
      for (let i = 0; i < SUBSCRIBERS; i++) {
        const session = http2.connect(node.baseUrl);
        sessions.push(session);
        const request = session.request({ ':method': 'POST', ':path': '/event_store.client.streams.Streams/Read', 'content-type': 'application/grpc', te: 'trailers', authorization: ADMIN_AUTHORIZATION });
        request.end(subscribeFrame());
        request.pause();
        requests.push(request);
      }
      let peak = before;
      for (let second = 0; second < 8; second++) {
        await new Promise((resolve) => setTimeout(resolve, 1000));
        peak = Math.max(peak, residentMiB());
      }
      process.stdout.write(`[grpc-back-pressure] log ${Math.round(logBytes / 1e6)} MB, ${SUBSCRIBERS} paused subscribers: RSS ${before.toFixed(0)} -> peak ${peak.toFixed(0)} MiB\n`);
      // Buffering the log for each subscriber would add SUBSCRIBERS x ~50 MB.
      expect(peak - before).toBeLessThan(64);
      // Resumed, a subscriber gets everything (at least the padding of every event).
      const first = requests[0] as http2.ClientHttp2Stream;
      let received = 0;
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`received ${received} of ${logBytes} bytes`)), 60_000);
        first.on('data', (chunk: Buffer) => {
          received += chunk.length;
          if (received >= logBytes) { clearTimeout(timer); resolve(); }
        });
        first.on('error', reject);
        first.resume();
      });
      expect(received).toBeGreaterThanOrEqual(logBytes);
    } finally {
      for (const request of requests) request.close();
      for (const session of sessions) session.destroy();
    }
  });
});
