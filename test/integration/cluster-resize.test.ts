/**
 * A 5-node cluster shrunk to 3 the way the operator does it (operator/ARCHITECTURE.md, "The
 * rollout algorithm"): the survivors restart one at a time with `--cluster-size 3` (followers
 * first, the leader after it resigned), then the two highest members go (a leader among them
 * resigns first). The three that remain keep one leader and accept writes, and every
 * acknowledged event is on each of them. Real processes on disk on 127.0.0.x.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { appendEvents, ATOM_JSON, newEvent, uniqueStream, type Http } from '../support/http-client.js';
import { createCluster, type ClusterMember, type TestCluster } from '../support/cluster.js';
import { ADMIN_AUTHORIZATION } from '../support/credentials.js';

async function eventCount(http: Http, stream: string): Promise<number> {
  const feed = await http('GET', `/streams/${stream}/0/forward/1000`, { headers: { accept: ATOM_JSON } });
  return feed.status === 200 ? feed.json<{ entries: unknown[] }>().entries.length : -1;
}

async function waitUntil(what: string, check: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check().catch(() => false)) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${what}: not within ${timeoutMs} ms`);
}

describe('shrinking a 5-node cluster to 3 (survivors restarted with the new size, then two removed)', () => {
  let cluster: TestCluster;
  const stream = uniqueStream('resize');
  let acknowledged = 0;

  beforeAll(async () => {
    cluster = await createCluster({ size: 5, onDisk: true, firstHost: 41 });
    await cluster.waitForStable(120_000);
  }, 200_000);
  afterAll(async () => cluster?.stop());

  const live = (): ClusterMember[] => cluster.members.filter((m) => m.process !== undefined);

  /** Appends through whichever node leads now (forwarded by a follower); counts what is acknowledged. */
  async function write(n: number): Promise<void> {
    for (let i = 0; i < n; i++) {
      const leader = await cluster.leader(60_000);
      const r = await appendEvents(leader.http, stream, [newEvent('e', { i: acknowledged })]);
      if (r.status === 201) acknowledged++;
    }
  }

  async function resignIfLeading(member: ClusterMember): Promise<void> {
    if ((await cluster.state(member)) !== 'leader') return;
    const r = await member.http('POST', '/admin/node/resign', { headers: { authorization: ADMIN_AUTHORIZATION } });
    expect(r.status).toBeLessThan(300);
    await waitUntil('another leader after the resign', async () => {
      const leader = await cluster.leader(5_000);
      return leader !== member;
    }, 60_000).catch((err: unknown) => {
      // What each node decided, for the report of a leadership that did not move.
      for (const m of live()) {
        const lines = (m.process?.output ?? []).filter((l) => /state changed|election|resign|leader|quorum/i.test(l)).slice(-30);
        process.stdout.write(`--- ${m.spec.name}\n${lines.join('\n')}\n`);
      }
      throw err;
    });
  }

  it('keeps one leader and every acknowledged write through the resize', async () => {
    await write(20);
    const survivors = cluster.members.slice(0, 3);
    const leaderNow = await cluster.leader();
    const order = [...survivors.filter((m) => m !== leaderNow), ...survivors.filter((m) => m === leaderNow)];
    for (const member of order) {
      await resignIfLeading(member);
      await member.process?.stop();
      member.process = undefined;
      await cluster.start(member, { clusterSize: 3 });
      await cluster.waitForStable(120_000);
      await write(10);
    }
    for (const member of [cluster.members[4]!, cluster.members[3]!]) {
      await resignIfLeading(member);
      await member.process?.stop();
      member.process = undefined;
      await cluster.waitForStable(120_000);
      await write(10);
    }
    expect(live()).toHaveLength(3);

    // The three keep a leader: writes go on being acknowledged for a while, by one leader.
    const leader = await cluster.leader();
    const before = acknowledged;
    const until = Date.now() + 10_000;
    for (let n = 0; n < 300 && Date.now() < until; n++) await write(1);
    expect(acknowledged - before).toBeGreaterThan(5);
    expect(await cluster.leader()).toBe(leader);
    for (const m of live()) expect(await cluster.state(m)).toMatch(/^(leader|follower)$/);

    for (const m of live()) await waitUntil(`${m.spec.name} holds all ${acknowledged} events`, async () => (await eventCount(m.http, stream)) === acknowledged, 30_000);
  });
});
