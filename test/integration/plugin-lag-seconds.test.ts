/**
 * What `kubectl eventdb status` reads for the replication lag in seconds, from real nodes: each
 * node of a 3-node cluster serves the head of its `$all` (without ES-RequireLeader a read is not
 * sent to the leader), and the plugin's newestEventOf/lagSecondsOf turn those documents into
 * 0 for nodes that hold the leader's newest event, and into the created-time gap for a node
 * whose newest event is older (here: a head read before the leader took more writes).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lagSecondsOf, newestEventOf, type NewestEvent } from '../../operator/src/plugin/status-view.js';
import { createCluster, type ClusterMember, type TestCluster } from '../support/cluster.js';
import { waitForConvergence } from '../support/cluster-workload.js';
import { appendEvents, newEvent, readFeed, uniqueStream } from '../support/http-client.js';

async function head(member: ClusterMember): Promise<NewestEvent | undefined> {
  const answer = await readFeed(member.http, '/streams/%24all/head/backward/1', { 'es-requireleader': 'false' });
  expect(answer.status, answer.text.slice(0, 300)).toBe(200);
  return newestEventOf(answer.json());
}

describe('the lag in seconds the kubectl plugin shows, from real nodes\' $all heads', () => {
  let cluster: TestCluster;

  beforeAll(async () => {
    cluster = await createCluster({ size: 3, firstHost: 171 });
  }, 120_000);

  afterAll(async () => {
    await cluster?.stop();
  }, 60_000);

  it('is 0 for every node holding the leader\'s newest event, and the created-time gap for an older head', async () => {
    const leader = await cluster.leader(60_000);
    const stream = uniqueStream('lag');
    expect((await appendEvents(leader.http, stream, [newEvent('First', { n: 1 })])).status).toBe(201);
    await waitForConvergence(cluster, 60_000);
    const heads = await Promise.all(cluster.members.map((member) => head(member)));
    const leaderHead = heads[cluster.members.indexOf(leader)];
    expect(leaderHead?.event).toMatch(/^\d+@/);
    for (const [i, nodeHead] of heads.entries()) {
      expect(nodeHead, cluster.members[i]?.spec.name).toEqual(leaderHead); // the same event, created once, on every node
      expect(lagSecondsOf(leaderHead, nodeHead, 100, 90)).toBe(0);
    }
    const follower = cluster.members.find((member) => member !== leader) as ClusterMember;
    const before = await head(follower);
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect((await appendEvents(leader.http, stream, [newEvent('Second', { n: 2 })])).status).toBe(201);
    const after = await head(leader);
    expect(after?.event).not.toBe(before?.event);
    const lag = lagSecondsOf(after, before, 200, 100) ?? -1;
    expect(lag).toBeGreaterThanOrEqual(1.4);
    expect(lag).toBeLessThan(30);
  }, 120_000);
});
