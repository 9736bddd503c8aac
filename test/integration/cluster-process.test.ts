/**
 * Clusters of real node processes on 127.0.0.x: a cluster forms from gossip seeds with one leader;
 * writes on the leader and through a follower are readable on every node; ES-RequireLeader
 * redirects to the leader; resign moves leadership and the old leader follows; a read-only
 * replica follows and refuses writes; a 5-node cluster forms and replicates too.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { appendEvents, ATOM_JSON, newEvent, uniqueStream, type Http } from '../support/http-client.js';
import { createCluster, type ClusterMember, type TestCluster } from '../support/cluster.js';

async function eventData(http: Http, stream: string): Promise<unknown[]> {
  const feed = await http('GET', `/streams/${stream}/0/forward/100?embed=body`, { headers: { accept: ATOM_JSON } });
  if (feed.status !== 200) return [];
  return feed.json<{ entries: { data: string }[] }>().entries.map((e) => JSON.parse(e.data)).reverse();
}

/** Waits until `read` gives `expected` (replication is asynchronous for readers of followers). */
async function eventually<T>(read: () => Promise<T>, expected: T, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last: T | undefined;
  while (Date.now() < deadline) {
    last = await read();
    try {
      expect(last).toEqual(expected);
      return;
    } catch {
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  expect(last).toEqual(expected);
}

async function gossipStates(member: ClusterMember): Promise<Map<string, string>> {
  const gossip = await member.http('GET', '/gossip', { auth: false });
  const members = gossip.json<{ members: { httpEndPointIp: string; httpEndPointPort: number; state: string; isAlive: boolean }[] }>().members;
  return new Map(members.filter((m) => m.isAlive).map((m) => [`${m.httpEndPointIp}:${m.httpEndPointPort}`, m.state]));
}

describe('a 3-node cluster with a read-only replica', () => {
  let cluster: TestCluster;
  beforeAll(async () => {
    cluster = await createCluster({ size: 3, readOnlyReplicas: 1 });
    await cluster.waitForStable(120_000);
  }, 200_000);
  afterAll(async () => cluster?.stop());

  it('forms from the seeds: one leader, two followers, a read-only replica, the same view everywhere', async () => {
    const states = await Promise.all(cluster.members.map((m) => cluster.state(m)));
    expect(states.filter((s) => s === 'leader')).toHaveLength(1);
    expect(states.filter((s) => s === 'follower')).toHaveLength(2);
    expect(states[3]).toBe('readonlyreplica');
    const views = await Promise.all(cluster.members.map((m) => gossipStates(m)));
    for (const view of views) expect(view.size).toBe(4);
    await eventually(async () => {
      const latest = await Promise.all(cluster.members.map((m) => gossipStates(m)));
      return latest.map((v) => [...v.values()].sort().join(','));
    }, Array(4).fill('Follower,Follower,Leader,ReadOnlyReplica'));
  });

  it('accepts writes on the leader and through a follower, readable on every node', async () => {
    const leader = await cluster.leader();
    const follower = cluster.members.find((m) => m !== leader && !m.spec.readOnlyReplica)!;
    const stream = uniqueStream('cluster');
    expect((await appendEvents(leader.http, stream, [newEvent('e', { via: 'leader' })])).status).toBe(201);
    const forwarded = await appendEvents(follower.http, stream, [newEvent('e', { via: 'follower' })]);
    expect(forwarded.status).toBe(201);
    expect(forwarded.headers.get('location')).toBe(`${follower.baseUrl}/streams/${stream}/1`);
    for (const m of cluster.members) await eventually(() => eventData(m.http, stream), [{ via: 'leader' }, { via: 'follower' }]);
  });

  it('redirects to the leader with ES-RequireLeader (and SVC-RequiresMaster) on a follower', async () => {
    const leader = await cluster.leader();
    const follower = cluster.members.find((m) => m !== leader && !m.spec.readOnlyReplica)!;
    const stream = uniqueStream('redirect');
    for (const header of ['ES-RequireLeader', 'ES-RequiresMaster', 'SVC-RequiresMaster']) {
      const response = await appendEvents(follower.http, stream, [newEvent('e', {})], { [header]: 'True' });
      expect(response.status, header).toBe(307);
      expect(response.headers.get('location')).toBe(`${leader.baseUrl}/streams/${stream}`);
    }
    const onLeader = await appendEvents(leader.http, stream, [newEvent('e', {})], { 'ES-RequireLeader': 'True' });
    expect(onLeader.status).toBe(201);
  });

  it('serves persistent subscriptions and projections through a follower and the read-only replica (forwarded to the leader)', async () => {
    const leader = await cluster.leader();
    const follower = cluster.members.find((m) => m !== leader && !m.spec.readOnlyReplica)!;
    const replica = cluster.members[3]!;
    const stream = uniqueStream('competing');
    const created = await follower.http('PUT', `/subscriptions/${stream}/billing`, {
      headers: { 'content-type': 'application/json' }, body: JSON.stringify({ startFrom: 0 }),
    });
    expect(created.status, created.text).toBe(201);
    expect(created.headers.get('location')).toBe(`${follower.baseUrl}/subscriptions/${stream}/billing`);
    for (let n = 0; n < 3; n++) expect((await appendEvents(leader.http, stream, [newEvent('e', { n })])).status).toBe(201);
    const accept = { accept: 'application/vnd.eventstore.competingatom+json' };
    let entries: { eventId: string; data: string }[] = [];
    const deadline = Date.now() + 10_000;
    while (entries.length < 3 && Date.now() < deadline) {
      const page = await replica.http('GET', `/subscriptions/${stream}/billing/3?embed=body`, { headers: accept });
      expect(page.status, page.text).toBe(200);
      entries = [...entries, ...page.json<{ entries: { eventId: string; data: string }[] }>().entries];
    }
    expect(entries.map((e) => JSON.parse(e.data).n).sort()).toEqual([0, 1, 2]);
    const acked = await follower.http('POST', `/subscriptions/${stream}/billing/ack?ids=${entries.map((e) => e.eventId).join(',')}`);
    expect(acked.status).toBe(202);
    const info = (await follower.http('GET', `/subscriptions/${stream}/billing/info`, { headers: { accept: 'application/json' } }));
    expect(info.status).toBe(200);
    expect(info.json<{ groupName: string }>().groupName).toBe('billing');
    // Projections: the follower answers what the leader answers.
    const onLeader = await leader.http('GET', '/projections/any', { headers: { accept: 'application/json' } });
    const onFollower = await follower.http('GET', '/projections/any', { headers: { accept: 'application/json' } });
    expect([onFollower.status, onFollower.text]).toEqual([onLeader.status, onLeader.text]);
  });

  it('lets the read-only replica follow and refuses writes there, naming the leader', async () => {
    const replica = cluster.members[3]!;
    const leader = await cluster.leader();
    const stream = uniqueStream('replica');
    expect((await appendEvents(leader.http, stream, [newEvent('e', { n: 1 })])).status).toBe(201);
    await eventually(() => eventData(replica.http, stream), [{ n: 1 }]);
    const refused = await appendEvents(replica.http, stream, [newEvent('e', { n: 2 })]);
    expect(refused.status).toBe(400);
    expect(refused.text).toBe(`This node is a read-only replica and accepts no writes; send them to the leader at ${leader.baseUrl}.`);
    const stats = (await replica.http('GET', '/stats', { headers: { accept: 'application/json' } })).json();
    expect(stats.svc?.replication ?? stats.es?.replication).toMatchObject({ state: 'ReadOnlyReplica', replicaSubscribed: true });
  });

  it('moves leadership on resign; the old leader follows the new one and writes go on', async () => {
    const old = await cluster.leader();
    const ops = { authorization: `Basic ${Buffer.from('ops:changeit').toString('base64')}` };
    const refused = await cluster.members.find((m) => m !== old)!.http('POST', '/admin/node/resign', { headers: ops });
    expect(refused.status).toBe(400);
    expect((await old.http('POST', '/admin/node/resign', { auth: false })).status).toBe(401);
    expect((await old.http('POST', '/admin/node/resign', { headers: ops })).status).toBe(200);
    let next: ClusterMember = old;
    const deadline = Date.now() + 20_000;
    while (next === old && Date.now() < deadline) next = await cluster.leader();
    expect(next).not.toBe(old);
    await eventually(() => cluster.state(old), 'follower');
    const stream = uniqueStream('after-resign');
    expect((await appendEvents(old.http, stream, [newEvent('e', { n: 1 })])).status).toBe(201);
    for (const m of cluster.members) await eventually(() => eventData(m.http, stream), [{ n: 1 }]);
    const stats = (await next.http('GET', '/stats', { headers: { accept: 'application/json' } })).json();
    const replication = stats.svc?.replication ?? stats.es?.replication;
    expect(replication.state).toBe('Leader');
    expect(Object.keys(replication.replicas)).toHaveLength(3);
  });

  it('changes a node\'s priority at runtime, visible in gossip', async () => {
    const member = cluster.members[1]!;
    const ops = { authorization: `Basic ${Buffer.from('ops:changeit').toString('base64')}` };
    expect((await member.http('POST', '/admin/node/priority/7', { headers: ops })).status).toBe(200);
    expect((await member.http('POST', '/admin/node/priority/high', { headers: ops })).status).toBe(400);
    await eventually(async () => {
      const gossip = (await cluster.members[0]!.http('GET', '/gossip', { auth: false })).json<{ members: { httpEndPointPort: number; nodePriority: number }[] }>();
      return gossip.members.find((m) => m.httpEndPointPort === member.spec.httpPort)?.nodePriority;
    }, 7);
  });
});

describe('a 5-node cluster', () => {
  let cluster: TestCluster;
  beforeAll(async () => {
    cluster = await createCluster({ size: 5, firstHost: 21 });
    await cluster.waitForStable(120_000);
  }, 200_000);
  afterAll(async () => cluster?.stop());

  it('forms with one leader and four followers and replicates to all of them', async () => {
    const states = await Promise.all(cluster.members.map((m) => cluster.state(m)));
    expect(states.sort()).toEqual(['follower', 'follower', 'follower', 'follower', 'leader']);
    const leader = await cluster.leader();
    const stream = uniqueStream('five');
    for (let i = 0; i < 5; i++) expect((await appendEvents(cluster.members[i]!.http, stream, [newEvent('e', { i })])).status).toBe(201);
    for (const m of cluster.members) await eventually(() => eventData(m.http, stream), [0, 1, 2, 3, 4].map((i) => ({ i })));
    expect(leader).toBeDefined();
  });
});
