/**
 * Operations over gRPC on a real 3-node cluster (insecure), through the stubs the official
 * Node client bundles (its generated grpc-js code, unchanged): the leader resigns and another
 * member is elected; a follower cannot resign; a node's priority is set.
 */
import { createRequire } from 'node:module';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { createCluster, FAST_CLUSTER_ARGS, type TestCluster } from '../support/cluster.js';

const require = createRequire(import.meta.url);
/* eslint-disable @typescript-eslint/no-explicit-any */
const grpc = require('@grpc/grpc-js') as typeof import('@grpc/grpc-js');
const GENERATED = '@kurrent/kurrentdb-client/generated/kurrentdb/protocols/v1';
const opsGrpc = require(`${GENERATED}/operations_grpc_pb.js`) as any;
const opsPb = require(`${GENERATED}/operations_pb.js`) as any;
const sharedPb = require(`${GENERATED}/shared_pb.js`) as any;

let cluster: TestCluster;
beforeAll(async () => {
  cluster = await createCluster({ size: 3, firstHost: 91, args: FAST_CLUSTER_ARGS });
  await cluster.waitForStable(120_000);
}, 200_000);
afterAll(async () => cluster?.stop());

function call(address: string, method: string, request: unknown): Promise<unknown> {
  const client = new opsGrpc.OperationsClient(address, grpc.credentials.createInsecure());
  return new Promise<unknown>((resolve, reject) => {
    client[method](request, new grpc.Metadata(), { deadline: Date.now() + 20_000 }, (err: unknown, response: unknown) => (err ? reject(err) : resolve(response)));
  }).finally(() => client.close());
}

describe('a 3-node cluster: Operations over gRPC', () => {
  it('a follower refuses to resign; the leader resigns and another member becomes leader', async () => {
    const leader = await cluster.leader();
    const follower = cluster.members.find((m) => m !== leader)!;
    const refused = await call(`${follower.spec.ip}:${follower.spec.httpPort}`, 'resignNode', new sharedPb.Empty()).then(() => undefined, (err: unknown) => err);
    expect(refused).toMatchObject({ code: grpc.status.FAILED_PRECONDITION });
    expect(await cluster.leader()).toBe(leader);

    const priority = new opsPb.SetNodePriorityReq();
    priority.setPriority(3);
    await call(`${follower.spec.ip}:${follower.spec.httpPort}`, 'setNodePriority', priority);

    await call(`${leader.spec.ip}:${leader.spec.httpPort}`, 'resignNode', new sharedPb.Empty());
    const deadline = Date.now() + 60_000;
    let next = leader;
    while (next === leader && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 200));
      next = await cluster.leader().catch(() => leader);
    }
    expect(next).not.toBe(leader);
    await cluster.waitForStable(60_000);
  }, 120_000);
});
