/**
 * Bad input over gRPC against a real node: each gets a clear status with a message and writes
 * nothing. A connect client built from the project's own .proto types sends what the official
 * clients never would (a malformed UUID, an unknown enum value, an oversized append), and a raw
 * HTTP/2 request sends bytes that are not protobuf at all.
 */
import http2 from 'node:http2';
import { create } from '@bufbuild/protobuf';
import { Code, ConnectError, createClient } from '@connectrpc/connect';
import { createGrpcTransport } from '@connectrpc/connect-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { AppendReqSchema, ReadReqSchema, Streams, type AppendReq, type ReadReq_Options_ReadDirection } from '../../node/src/grpc/gen/eventdb/grpc/streams_pb.js';
import { startNode, type NodeProcess } from '../support/node-process.js';

let node: NodeProcess;
let streams: ReturnType<typeof createClient<typeof Streams>>;
beforeAll(async () => {
  node = await startNode();
  streams = createClient(Streams, createGrpcTransport({ baseUrl: node.baseUrl, readMaxBytes: 32 * 1024 * 1024, writeMaxBytes: 32 * 1024 * 1024 }));
});
afterAll(async () => {
  await node?.stop();
});

const name = (stream: string): { streamName: Uint8Array } => ({ streamName: Buffer.from(stream) });

async function* appendMessages(stream: string, id: string, data: Uint8Array): AsyncGenerator<AppendReq> {
  yield create(AppendReqSchema, { content: { case: 'options', value: { streamIdentifier: name(stream), expectedStreamRevision: { case: 'any', value: {} } } } });
  yield create(AppendReqSchema, {
    content: {
      case: 'proposedMessage',
      value: { id: { value: { case: 'string', value: id } }, metadata: { type: 'T', 'content-type': 'application/octet-stream' }, customMetadata: new Uint8Array(), data },
    },
  });
}

async function codeOf(action: () => Promise<unknown>): Promise<ConnectError> {
  try {
    await action();
  } catch (err) {
    return ConnectError.from(err);
  }
  throw new Error('expected the call to fail');
}

async function streamEventCount(stream: string): Promise<number> {
  let count = 0;
  let notFound = false;
  const request = create(ReadReqSchema, {
    options: { streamOption: { case: 'stream', value: { streamIdentifier: name(stream), revisionOption: { case: 'start', value: {} } } }, countOption: { case: 'count', value: 100n }, uuidOption: { content: { case: 'string', value: {} } } },
  });
  for await (const response of streams.read(request)) {
    if (response.content.case === 'event') count += 1;
    if (response.content.case === 'streamNotFound') notFound = true;
  }
  return notFound ? -1 : count;
}

describe('bad input over gRPC', () => {
  it('a malformed event id: INVALID_ARGUMENT naming it, nothing written', async () => {
    const error = await codeOf(() => streams.append(appendMessages('bad-uuid', 'not-a-uuid', new Uint8Array([1]))));
    expect(error.code).toBe(Code.InvalidArgument);
    expect(error.rawMessage).toContain("'not-a-uuid' is not a valid UUID");
    expect(await streamEventCount('bad-uuid')).toBe(-1);
  });

  it('an unknown read direction: INVALID_ARGUMENT', async () => {
    const request = create(ReadReqSchema, {
      options: { streamOption: { case: 'stream', value: { streamIdentifier: name('x'), revisionOption: { case: 'start', value: {} } } }, readDirection: 7 as ReadReq_Options_ReadDirection, countOption: { case: 'count', value: 1n } },
    });
    const error = await codeOf(async () => { for await (const _ of streams.read(request)) { /* drain */ } });
    expect(error.code).toBe(Code.InvalidArgument);
    expect(error.rawMessage).toContain('unknown read direction 7');
  });

  it('an append over MaxAppendSize (1 MiB): refused with maximum-append-size-exceeded; past the message limit: RESOURCE_EXHAUSTED', async () => {
    const tooBig = await codeOf(() => streams.append(appendMessages('big-1', '2b3f7a0e-6a7c-4e0f-8f7e-0c6b4c1d2e3f', new Uint8Array(1024 * 1024 + 1))));
    expect(tooBig.code).toBe(Code.InvalidArgument);
    expect(tooBig.metadata.get('exception')).toBe('maximum-append-size-exceeded');
    const huge = await codeOf(() => streams.append(appendMessages('big-1', '2b3f7a0e-6a7c-4e0f-8f7e-0c6b4c1d2e40', new Uint8Array(3 * 1024 * 1024))));
    expect(huge.code).toBe(Code.ResourceExhausted);
    expect(await streamEventCount('big-1')).toBe(-1);
    // Just under the limit is accepted.
    await streams.append(appendMessages('big-1', '2b3f7a0e-6a7c-4e0f-8f7e-0c6b4c1d2e41', new Uint8Array(1024 * 1024 - 1)));
    expect(await streamEventCount('big-1')).toBe(1);
  });

  it('bytes that are not protobuf: a non-OK grpc-status with a message', async () => {
    const session = http2.connect(node.baseUrl);
    try {
      const garbage = Buffer.from([0xff, 0xff, 0xff, 0xff, 0xff, 0x0f]);
      const frame = Buffer.concat([Buffer.from([0, 0, 0, 0, garbage.length]), garbage]);
      const request = session.request({ ':method': 'POST', ':path': '/event_store.client.streams.Streams/Read', 'content-type': 'application/grpc', te: 'trailers' });
      const trailers = await new Promise<http2.IncomingHttpHeaders>((resolve, reject) => {
        let headers: http2.IncomingHttpHeaders = {};
        request.on('response', (h) => { headers = h; });
        request.on('trailers', (t) => resolve(t));
        request.on('end', () => resolve(headers));
        request.on('error', reject);
        request.resume();
        request.end(frame);
      });
      expect(trailers['grpc-status']).toBeDefined();
      expect(trailers['grpc-status']).not.toBe('0');
      expect(String(trailers['grpc-message'] ?? '')).not.toBe('');
    } finally {
      session.close();
    }
  });
});
