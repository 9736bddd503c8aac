/**
 * A network partition of a 3-node cluster on disk, each node in a network namespace of its own
 * joined by a bridge (test/support/netns.ts), the partition a real packet filter. The leader is
 * cut off while writers append through every node: the isolated node acknowledges nothing, the
 * other two elect a leader and go on acknowledging; after healing, the old leader truncates what
 * only it held and every node holds the same log with every acknowledged event.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { createCluster, type ClusterMember, type TestCluster } from '../support/cluster.js';
import { checkAcknowledged, readStream, sleep, startWriters, waitForConvergence } from '../support/cluster-workload.js';
import { EVENTS_JSON, uniqueStream } from '../support/http-client.js';
import { createTestNetwork, type TestNetwork } from '../support/netns.js';

const WRITERS = 8;

async function until(what: string, check: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await sleep(100);
  }
  throw new Error(`${what}: not within ${timeoutMs} ms`);
}

describe('a network partition', () => {
  let network: TestNetwork | undefined;
  let cluster: TestCluster | undefined;
  afterAll(async () => {
    await cluster?.stop();
    network?.destroy();
  });

  it('the isolated leader acknowledges nothing; the majority goes on; after healing the old leader truncates and converges', { timeout: 300_000 }, async () => {
    // a retry starts afresh: the first attempt's processes, files and namespaces go
    await cluster?.stop();
    network?.destroy();
    network = createTestNetwork(3);
    cluster = await createCluster({ size: 3, onDisk: true, network, args: ['--chunk-size', String(1024 * 1024)] });
    const c = cluster;
    await c.waitForStable(60_000);
    const workload = startWriters(c, WRITERS, 'partition');
    try {
      await until('writes acknowledged before the partition', async () => workload.acknowledged.length >= 100, 60_000);
      const oldLeader = await c.leader();
      const majority = c.members.filter((m) => m !== oldLeader);
      network.isolate([c.members.indexOf(oldLeader)]);

      // Writes sent straight to the isolated node: it cannot reach a quorum, so none is acknowledged.
      const minorityStreams = Array.from({ length: 5 }, (_, i) => uniqueStream(`minority-${i}`));
      const answers = await Promise.all(minorityStreams.map(async (stream) => {
        try {
          const response = await oldLeader.http('POST', `/streams/${stream}`, {
            headers: { 'content-type': EVENTS_JSON },
            body: JSON.stringify([{ eventId: crypto.randomUUID(), eventType: 'minority', data: { stream } }]),
          });
          return response.status;
        } catch (err) {
          return String(err);
        }
      }));
      expect(answers.filter((a) => a === 201), `answers of the isolated node: ${answers.join(', ')}`).toEqual([]);

      // The majority elects a leader of its own and acknowledges writes.
      let newLeader: ClusterMember | undefined;
      await until('a leader among the majority', async () => {
        const states = await Promise.all(majority.map((m) => c.state(m)));
        newLeader = majority[states.indexOf('leader')];
        return newLeader !== undefined;
      }, 30_000).catch((err: unknown) => {
        // What each node decided, for the report of a majority that elected no leader.
        for (const m of c.members) {
          const lines = (m.process?.output ?? []).filter((l) => /state changed|election|leader|quorum|replication/i.test(l)).slice(-30);
          process.stdout.write(`--- ${m.spec.name}\n${lines.map((l) => l.slice(0, 300)).join('\n')}\n`);
        }
        throw err;
      });
      const duringPartition = workload.acknowledged.length;
      await until('writes acknowledged by the majority', async () => workload.acknowledged.length >= duringPartition + 100, 60_000);
      // The isolated node gave up leading (no quorum).
      await until('the isolated node stops leading', async () => (await c.state(oldLeader)) !== 'leader', 30_000);

      network.heal();
      await c.waitForStable(60_000);
      expect(await c.state(oldLeader)).toBe('follower');
      await until('more writes after healing', async () => workload.acknowledged.length >= duringPartition + 200, 60_000);
      await workload.stop();
      await waitForConvergence(c);
      await checkAcknowledged(c, workload.acknowledged);
      // What only the isolated node held is gone: it truncated its log to the new leader's.
      expect(oldLeader.process!.output.some((line) => line.includes('truncating and reopening the storage'))).toBe(true);
      for (const member of c.members) {
        for (const stream of minorityStreams) expect((await readStream(member, stream)).size, `${member.spec.name} ${stream}`).toBe(0);
      }
    } finally {
      await workload.stop();
    }
  });
});
