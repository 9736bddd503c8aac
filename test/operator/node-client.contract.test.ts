// Contract test: the operator's node client against real node processes (the build in dist/):
// a single node, a three-node cluster on 127.0.0.x whose leader resigns, and nodes serving TLS
// with certificates the operator's own builders made (as for tls.mode SelfSigned), reached at
// 127.0.0.1 as through a port-forward and verified under the pod's DNS name.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NodeClient, NodeClientError, type NodeEndpoint } from '../../operator/src/node-client/node-client.js';
import { nodeCertificateNames } from '../../operator/src/resources/secrets.js';
import { certificateFingerprint, createCertificateAuthority, createSignedCertificate, type KeyPairPem } from '../../operator/src/resources/tls/certificate.js';
import { createCluster, type TestCluster } from '../support/cluster.js';
import { startNode, tempDir, type NodeProcess } from '../support/node-process.js';

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

  it('sets a member\'s election priority, which gossip then reports for it; a wrong password is refused', async () => {
    const member = cluster.members[2]!;
    const priorityOf = async (): Promise<number | undefined> =>
      (await client.gossip(member.baseUrl)).members.find((entry) => entry.httpEndPointPort === member.spec.httpPort)?.nodePriority;
    expect(await client.setPriority(member.baseUrl, ADMIN, 100)).toEqual({ kind: 'done' });
    expect(await priorityOf()).toBe(100);
    expect(await client.setPriority(member.baseUrl, ADMIN, 0)).toEqual({ kind: 'done' });
    expect(await priorityOf()).toBe(0);
    expect(await client.setPriority(member.baseUrl, { ...ADMIN, password: 'wrong' }, 5)).toMatchObject({ kind: 'refused', statusCode: 401 });
  });
});

describe('NodeClient against real nodes serving TLS', () => {
  const dir = tempDir('eventdb-operator-tls-');
  const cluster = { name: 'orders', namespace: 'shop', uid: 'u' };
  const POD_NAME = 'orders-0.orders-headless.shop.svc';
  // The names the operator puts in node certificates, less the loopback ones: only the pod's DNS name can match.
  const names = nodeCertificateNames(cluster).filter((name) => name !== 'localhost' && name !== '127.0.0.1');
  const nowMs = Date.now();
  const ca = createCertificateAuthority({ commonName: 'orders.shop EventDB CA', organization: 'eventdb', validityDays: 30, nowMs });
  const otherCa = createCertificateAuthority({ commonName: 'someone else CA', validityDays: 30, nowMs });
  const client = new NodeClient({ timeoutMs: 5000 });
  let node: NodeProcess;
  let foreign: NodeProcess;
  let nodeCertificate: KeyPairPem;

  /** A node's certificate files and trusted-roots folder, as the pod mounts them (tls.crt, tls.key, ca/ca.crt). */
  function mount(name: string, issuer: KeyPairPem): { args: string[]; certificate: KeyPairPem; certFile: string; keyFile: string } {
    const folder = join(dir.path, name);
    mkdirSync(join(folder, 'ca'), { recursive: true });
    const certificate = createSignedCertificate({ commonName: 'eventdb-node', subjectAltNames: names, validityDays: 30, nowMs }, issuer);
    const certFile = join(folder, 'tls.crt');
    const keyFile = join(folder, 'tls.key');
    writeFileSync(certFile, certificate.certificatePem);
    writeFileSync(keyFile, certificate.privateKeyPem);
    writeFileSync(join(folder, 'ca', 'ca.crt'), issuer.certificatePem);
    return {
      args: ['--certificate-file', certFile, '--certificate-private-key-file', keyFile, '--trusted-root-certificates-path', join(folder, 'ca')],
      certificate,
      certFile,
      keyFile,
    };
  }

  const endpoint = (target: NodeProcess, trusted: KeyPairPem = ca, serverName = POD_NAME): NodeEndpoint => ({
    baseUrl: target.baseUrl,
    tls: { ca: [trusted.certificatePem], serverName },
  });

  let ours: ReturnType<typeof mount>;
  beforeAll(async () => {
    ours = mount('node', ca);
    nodeCertificate = ours.certificate;
    const theirs = mount('foreign', otherCa);
    [node, foreign] = await Promise.all([startNode({ insecure: false, args: ours.args }), startNode({ insecure: false, args: theirs.args })]);
  }, 120_000);
  afterAll(async () => {
    await Promise.all([node?.stop(), foreign?.stop()]);
    dir.remove();
  });

  it('reads gossip and /info, sees the node live and resigns it with credentials, over https verified against the cluster CA under the pod name', async () => {
    expect(node.baseUrl).toMatch(/^https:\/\/127\.0\.0\.1:/);
    const observed = await client.observe(endpoint(node));
    expect(observed.gossip.members).toHaveLength(1);
    expect(observed.gossip.members[0]).toMatchObject({ state: 'Leader', isAlive: true });
    expect(observed.certificateFingerprint).toBe(certificateFingerprint(nodeCertificate.certificatePem));
    expect((await client.info(endpoint(node))).esVersion).toMatch(/\d/);
    expect(await client.live(endpoint(node))).toBe(true);
    const resign = await client.resign(endpoint(node), ADMIN);
    expect(resign).toMatchObject({ kind: 'refused', statusCode: 400 });
    expect(resign.kind === 'refused' ? resign.message : '').toContain('alone');
    expect(await client.resign(endpoint(node), { ...ADMIN, password: 'wrong' })).toMatchObject({ kind: 'refused', statusCode: 401 });
  });

  it('refuses a node whose certificate another CA signed, and a node that does not carry the name asked for', async () => {
    const refused = client.gossip(endpoint(foreign));
    await expect(refused).rejects.toBeInstanceOf(NodeClientError);
    await expect(refused).rejects.toMatchObject({ code: 'EDBOP_NODE_TLS_REFUSED' });
    expect(await client.live(endpoint(foreign))).toBe(false);
    // Trusting only another CA refuses our node too; and the address dialled is not a name it carries.
    await expect(client.gossip(endpoint(node, otherCa))).rejects.toMatchObject({ code: 'EDBOP_NODE_TLS_REFUSED' });
    await expect(client.gossip(endpoint(node, ca, '127.0.0.1'))).rejects.toMatchObject({ code: 'EDBOP_NODE_TLS_REFUSED' });
    await expect(client.gossip(endpoint(node, ca, 'orders-0.billing-headless.shop.svc'))).rejects.toMatchObject({ code: 'EDBOP_NODE_TLS_REFUSED' });
    // Plain http to a TLS node gets no answer the client can read.
    await expect(client.gossip(node.baseUrl.replace('https:', 'http:'))).rejects.toBeInstanceOf(NodeClientError);
  });

  it('sees the certificate a node serves change after the files are renewed and the node gets SIGHUP', async () => {
    const renewed = createSignedCertificate({ commonName: 'eventdb-node', subjectAltNames: names, validityDays: 60, nowMs: Date.now() }, ca);
    writeFileSync(ours.keyFile, renewed.privateKeyPem);
    writeFileSync(ours.certFile, renewed.certificatePem);
    node.child.kill('SIGHUP');
    const expected = certificateFingerprint(renewed.certificatePem);
    const deadline = Date.now() + 30_000;
    let served: string | undefined;
    while (Date.now() < deadline) {
      served = (await client.observe(endpoint(node))).certificateFingerprint;
      if (served === expected) break;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    expect(served).toBe(expected);
  });
});
