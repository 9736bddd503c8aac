/**
 * A 3-node cluster on disk, 16 writers appending through any node, and SIGKILL: ten times the
 * leader, ten times a follower, each at a random moment, each restarted. After every round every
 * acknowledged event is readable on every node at its number with its data, every node holds the
 * same events, and no epoch number was ever held by two leaders.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { createCluster, type ClusterMember, type TestCluster } from '../support/cluster.js';
import { checkAcknowledged, sleep, startWriters, waitForConvergence } from '../support/cluster-workload.js';

const ROUNDS_PER_KIND = 10;
const WRITERS = 16;

/** Watches gossip: which node led which epoch. */
function watchEpochs(cluster: TestCluster): { leadersByEpoch: Map<number, Set<string>>; stop(): void } {
  const leadersByEpoch = new Map<number, Set<string>>();
  let stopped = false;
  const poll = async (): Promise<void> => {
    while (!stopped) {
      for (const m of cluster.members) {
        if (m.process === undefined || m.process.child.exitCode !== null) continue;
        try {
          const gossip = (await m.http('GET', '/gossip', { auth: false })).json<{ members: { state: string; epochNumber: number; instanceId: string; isAlive: boolean }[] }>();
          for (const member of gossip.members) {
            if (member.state !== 'Leader' || !member.isAlive) continue;
            const leaders = leadersByEpoch.get(member.epochNumber) ?? new Set<string>();
            leaders.add(member.instanceId);
            leadersByEpoch.set(member.epochNumber, leaders);
          }
        } catch {
          // a node being killed or restarted
        }
      }
      await sleep(100);
    }
  };
  void poll();
  return { leadersByEpoch, stop: () => { stopped = true; } };
}

describe('cluster under SIGKILL', () => {
  let cluster: TestCluster | undefined;
  afterAll(async () => cluster?.stop());

  it(`keeps every acknowledged write through ${ROUNDS_PER_KIND} leader and ${ROUNDS_PER_KIND} follower kills`, { timeout: 900_000 }, async () => {
    await cluster?.stop(); // a retry starts a new cluster: the first attempt's processes and files go
    cluster = await createCluster({ size: 3, onDisk: true, args: ['--chunk-size', String(1024 * 1024)] });
    const c = cluster;
    await c.waitForStable(60_000);
    const epochs = watchEpochs(c);
    const workload = startWriters(c, WRITERS, 'kill');
    const kinds: Array<'leader' | 'follower'> = [];
    for (let i = 0; i < ROUNDS_PER_KIND; i++) kinds.push('leader', 'follower');
    try {
      for (const [round, kind] of kinds.entries()) {
        await sleep(300 + Math.random() * 1200);
        const leader = await c.leader();
        const victim: ClusterMember = kind === 'leader' ? leader : c.members.find((m) => m !== leader)!;
        const before = workload.acknowledged.length;
        const roundStartMs = Date.now();
        await victim.process!.stop('SIGKILL');
        // The writers go on while the victim is down (a new leader is elected if it led).
        await sleep(500 + Math.random() * 1000);
        await c.start(victim);
        const restartedMs = Date.now();
        await c.waitForStable(60_000);
        const stableMs = Date.now();
        await workload.pause();
        await waitForConvergence(c);
        await checkAcknowledged(c, workload.acknowledged);
        expect(workload.acknowledged.length, `round ${round} (${kind}) acknowledged writes`).toBeGreaterThan(before);
        process.stdout.write(`round ${round} ${kind}: restart ${restartedMs - roundStartMs} ms, stable ${stableMs - restartedMs} ms, checked ${Date.now() - stableMs} ms, acknowledged ${workload.acknowledged.length}, failures ${workload.failures}\n`);
        workload.resume();
      }
    } finally {
      await workload.stop();
      epochs.stop();
    }
    await waitForConvergence(c);
    await checkAcknowledged(c, workload.acknowledged);
    for (const [epoch, leaders] of epochs.leadersByEpoch) expect([...leaders], `epoch ${epoch}`).toHaveLength(1);
    expect(epochs.leadersByEpoch.size).toBeGreaterThanOrEqual(ROUNDS_PER_KIND);
    expect(workload.acknowledged.length).toBeGreaterThan(WRITERS * ROUNDS_PER_KIND);
  });
});
