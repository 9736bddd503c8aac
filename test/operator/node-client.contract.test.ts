// Contract test: the operator's node client against real node processes (the build in dist/):
// a single node, and a three-node cluster on 127.0.0.x whose leader resigns.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NodeClient, NodeClientError } from '../../operator/src/node-client/node-client.js';
import { createCluster, type TestCluster } from '../support/cluster.js';
import { startNode, type NodeProcess } from '../support/node-process.js';

const ADMIN = { username: 'admin', password: 'changeit' };

describe('NodeClient against a real node', () => {
  let node: NodeProcess;
  const client = new NodeClient({ timeoutMs: 5000 });

  beforeAll(async () => {
    node = await startNode();
  });
  afterAll(async () => {
    await node.stop();
  });

  it('reads the gossip of a single node: one alive member, the leader', async () => {
    const gossip = await client.gossip(node.baseUrl);
    expect(gossip.members).toHaveLength(1);
    expect(gossip.members[0]).toMatchObject({ state: 'Leader', isAlive: true });
    expect(typeof gossip.members[0]?.writerCheckpoint).toBe('number');
  });

  it('reads /info and sees the node live', async () => {
    expect((await client.info(node.baseUrl)).esVersion).toMatch(/\d/);
    expect(await client.live(node.baseUrl)).toBe(true);
  });

  it('reports a resign of a node that runs alone as refused with the node\'s reason, and a wrong password as refused', async () => {
    const resign = await client.resign(node.baseUrl, ADMIN);
    expect(resign).toMatchObject({ kind: 'refused', statusCode: 400 });
    expect(resign.kind === 'refused' ? resign.message : '').toContain('alone');
    const wrong = await client.reloadConfig(node.baseUrl, { username: 'admin', password: 'wrong' });
    expect(wrong.kind === 'refused' || wrong.kind === 'unsupported').toBe(true);
  });

  it('fails clearly when no node answers', async () => {
    await expect(client.gossip('http://127.0.0.1:9')).rejects.toBeInstanceOf(NodeClientError);
    expect(await client.live('http://127.0.0.1:9')).toBe(false);
  });
});

describe('NodeClient against a three-node cluster', () => {
  let cluster: TestCluster;
  const client = new NodeClient({ timeoutMs: 5000 });

  beforeAll(async () => {
    cluster = await createCluster({ size: 3, firstHost: 61 });
    await cluster.waitForStable();
  }, 120_000);
  afterAll(async () => {
    await cluster?.stop();
  });

  it('reads three alive members with one leader from gossip, and a resign of the leader hands leadership to another node', async () => {
    const leader = await cluster.leader();
    const gossip = await client.gossip(leader.baseUrl);
    expect(gossip.members.filter((member) => member.isAlive)).toHaveLength(3);
    expect(gossip.members.filter((member) => member.state === 'Leader')).toHaveLength(1);
    // The default users exist once the new leader has written them: until then the node answers 401.
    let resign = await client.resign(leader.baseUrl, { ...ADMIN, password: 'wrong' });
    expect(resign).toMatchObject({ kind: 'refused', statusCode: 401 });
    const follower = cluster.members.find((member) => member !== leader)!;
    for (let attempt = 0; attempt < 100; attempt++) {
      resign = await client.resign(follower.baseUrl, ADMIN);
      if (!(resign.kind === 'refused' && resign.statusCode === 401)) break;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    expect(resign).toMatchObject({ kind: 'refused', statusCode: 400 });
    expect(await client.resign(leader.baseUrl, ADMIN)).toEqual({ kind: 'done' });
    const deadline = Date.now() + 30_000;
    let next = leader;
    while (Date.now() < deadline && next === leader) {
      await new Promise((resolve) => setTimeout(resolve, 200));
      next = await cluster.leader().catch(() => leader);
    }
    expect(next).not.toBe(leader);
    const after = await client.gossip(next.baseUrl);
    expect(after.members.find((member) => member.state === 'Leader')?.httpEndPointPort).toBe(next.spec.httpPort);
  });
});
