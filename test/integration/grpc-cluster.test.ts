/**
 * The official Node client against a real 3-node cluster over gRPC: given every member's
 * address it finds the leader through Gossip.Read and writes there; a follower serves reads
 * but answers a requires-leader call (and any write) with NotLeader carrying the leader's
 * endpoint, which the client reports.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KurrentDBClient, jsonEvent, type ResolvedEvent } from '@kurrent/kurrentdb-client';

import { createCluster, FAST_CLUSTER_ARGS, type TestCluster } from '../support/cluster.js';

let cluster: TestCluster;
beforeAll(async () => {
  cluster = await createCluster({ size: 3, firstHost: 61, args: FAST_CLUSTER_ARGS });
  await cluster.waitForStable(120_000);
}, 200_000);
afterAll(async () => cluster?.stop());

async function collect(iterable: AsyncIterable<ResolvedEvent>): Promise<ResolvedEvent[]> {
  const out: ResolvedEvent[] = [];
  for await (const event of iterable) out.push(event);
  return out;
}

describe('a 3-node cluster over gRPC', () => {
  it('a client given all three addresses finds the leader and appends; every member then serves the read', async () => {
    const hosts = cluster.members.map((m) => `${m.spec.ip}:${m.spec.httpPort}`).join(',');
    const client = KurrentDBClient.connectionString(`kurrentdb://${hosts}?tls=false&nodePreference=leader`);
    try {
      const result = await client.appendToStream('cluster-grpc-1', [jsonEvent({ type: 'C1', data: {} }), jsonEvent({ type: 'C2', data: {} })]);
      expect(result.nextExpectedRevision).toBe(1n);
    } finally {
      await client.dispose();
    }
    for (const member of cluster.members) {
      const single = KurrentDBClient.connectionString(`kurrentdb://${member.spec.ip}:${member.spec.httpPort}?tls=false`);
      try {
        const deadline = Date.now() + 20_000;
        let seen: string[] = [];
        // A follower serves what replication has brought it so far.
        while (seen.length < 2 && Date.now() < deadline) {
          seen = (await collect(single.readStream('cluster-grpc-1')).catch(() => [])).map((e) => e.event!.type);
          if (seen.length < 2) await new Promise((resolve) => setTimeout(resolve, 100));
        }
        expect(seen).toEqual(['C1', 'C2']);
      } finally {
        await single.dispose();
      }
    }
  });

  it('a follower answers requires-leader with NotLeader and the leader endpoint', async () => {
    const leader = await cluster.leader();
    const follower = cluster.members.find((m) => m !== leader)!;
    const client = KurrentDBClient.connectionString(`kurrentdb://${follower.spec.ip}:${follower.spec.httpPort}?tls=false`);
    try {
      let error: unknown;
      try {
        await client.appendToStream('cluster-grpc-2', jsonEvent({ type: 'X', data: {} }), { requiresLeader: true });
      } catch (err) {
        error = err;
      }
      expect(error).toMatchObject({ type: 'not-leader', leader: { address: leader.spec.ip, port: leader.spec.httpPort } });
    } finally {
      await client.dispose();
    }
  });
});
