// Contract test: the operator's node client against a real node process (the build in dist/).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NodeClient, NodeClientError } from '../../operator/src/node-client/node-client.js';
import { startNode, type NodeProcess } from '../support/node-process.js';

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

  it('reports a command the node does not have as unsupported, and a wrong password as refused', async () => {
    const resign = await client.resign(node.baseUrl, { username: 'admin', password: 'changeit' });
    expect(['done', 'unsupported']).toContain(resign.kind);
    const wrong = await client.reloadConfig(node.baseUrl, { username: 'admin', password: 'wrong' });
    expect(wrong.kind === 'refused' || wrong.kind === 'unsupported').toBe(true);
  });

  it('fails clearly when no node answers', async () => {
    await expect(client.gossip('http://127.0.0.1:9')).rejects.toBeInstanceOf(NodeClientError);
    expect(await client.live('http://127.0.0.1:9')).toBe(false);
  });
});
