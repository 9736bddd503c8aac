import dgram from 'node:dgram';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { candidateNames, createPeerLookup, parseHosts, parseResolvConf } from './peer-lookup.js';

describe('resolv.conf, hosts and the names asked', () => {
  it('reads search and ndots as getaddrinfo does', () => {
    const config = parseResolvConf('nameserver 10.96.0.10\nsearch ns.svc.cluster.local svc.cluster.local cluster.local # k8s\noptions ndots:5 timeout:1\n');
    expect(config).toEqual({ search: ['ns.svc.cluster.local', 'svc.cluster.local', 'cluster.local'], ndots: 5 });
    expect(parseResolvConf('')).toEqual({ search: [], ndots: 1 });
  });

  it('tries the search domains first below ndots, the name first at or above it, only the name with a trailing dot', () => {
    const config = { search: ['a.example', 'example'], ndots: 2 };
    expect(candidateNames('peer', config)).toEqual(['peer.a.example', 'peer.example', 'peer']);
    expect(candidateNames('peer.x.y', config)).toEqual(['peer.x.y', 'peer.x.y.a.example', 'peer.x.y.example']);
    expect(candidateNames('peer.x.', config)).toEqual(['peer.x']);
  });

  it('reads hosts files', () => {
    const hosts = parseHosts('127.0.0.1 localhost\n::1 localhost ip6-localhost\n# 10.0.0.1 commented\n10.1.2.3 Orders-0.headless orders-0\nnot-an-ip name\n');
    expect(hosts.get('localhost')).toEqual(['127.0.0.1', '::1']);
    expect(hosts.get('orders-0.headless')).toEqual(['10.1.2.3']);
    expect(hosts.has('name')).toBe(false);
  });
});

/** A DNS server on loopback (real UDP): A records for `names`, no answer at all for names starting "slow". */
function dnsServer(names: Record<string, string>): Promise<{ port: number; asked: string[]; close(): void }> {
  const socket = dgram.createSocket('udp4');
  const asked: string[] = [];
  socket.on('message', (query, peer) => {
    let offset = 12;
    const labels: string[] = [];
    while (query[offset]! > 0) {
      labels.push(query.subarray(offset + 1, offset + 1 + query[offset]!).toString('ascii'));
      offset += query[offset]! + 1;
    }
    const question = query.subarray(12, offset + 5);
    const qtype = query.readUInt16BE(offset + 1);
    const name = labels.join('.').toLowerCase();
    asked.push(`${name}/${qtype === 1 ? 'A' : qtype === 28 ? 'AAAA' : qtype}`);
    if (name.startsWith('slow')) return;
    const address = names[name];
    const header = Buffer.alloc(12);
    header.writeUInt16BE(query.readUInt16BE(0), 0);
    header.writeUInt16BE(0x8180 | (address === undefined ? 3 : 0), 2); // response, RD, RA; NXDOMAIN when unknown
    header.writeUInt16BE(1, 4);
    const answers: Buffer[] = [];
    if (address !== undefined && qtype === 1) {
      const rr = Buffer.alloc(16);
      rr.writeUInt16BE(0xc00c, 0); // the question's name
      rr.writeUInt16BE(1, 2);
      rr.writeUInt16BE(1, 4);
      rr.writeUInt32BE(5, 6);
      rr.writeUInt16BE(4, 10);
      address.split('.').forEach((part, i) => rr.writeUInt8(Number(part), 12 + i));
      answers.push(rr);
    }
    header.writeUInt16BE(answers.length, 6);
    socket.send(Buffer.concat([header, question, ...answers]), peer.port, peer.address);
  });
  return new Promise((resolve) => socket.bind(0, '127.0.0.1', () => resolve({ port: socket.address().port, asked, close: () => socket.close() })));
}

describe('the peer lookup against a real DNS server', () => {
  let server: Awaited<ReturnType<typeof dnsServer>>;
  let dir: string;
  beforeAll(async () => {
    server = await dnsServer({ 'orders-1.orders-headless.ns.svc.cluster.local': '10.9.8.7', 'plain.example': '10.1.1.1' });
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'peer-lookup-'));
    fs.writeFileSync(path.join(dir, 'resolv.conf'), 'search ns.svc.cluster.local svc.cluster.local cluster.local\noptions ndots:5\n');
    fs.writeFileSync(path.join(dir, 'hosts'), '10.5.5.5 from-hosts\n');
  });
  afterAll(() => {
    server.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });
  const make = (): ReturnType<typeof createPeerLookup> => createPeerLookup({
    timeoutMs: 300, servers: [`127.0.0.1:${server.port}`], resolvConfPath: path.join(dir, 'resolv.conf'), hostsPath: path.join(dir, 'hosts'),
  });

  it('finds a pod name through the search list, a hosts entry without asking, an IP as it is', async () => {
    const { resolve } = make();
    expect(await resolve('orders-1.orders-headless.ns.svc')).toEqual([{ address: '10.9.8.7', family: 4 }]);
    expect(server.asked).toContain('orders-1.orders-headless.ns.svc.ns.svc.cluster.local/A');
    expect(server.asked.at(-1)).toBe('orders-1.orders-headless.ns.svc.cluster.local/A');
    const before = server.asked.length;
    expect(await resolve('from-hosts')).toEqual([{ address: '10.5.5.5', family: 4 }]);
    expect(await resolve('10.0.0.9')).toEqual([{ address: '10.0.0.9', family: 4 }]);
    expect(server.asked.length).toBe(before);
    await expect(resolve('nowhere.example.')).rejects.toMatchObject({ code: 'ENOTFOUND' });
  });

  it('answers net.connect-style callbacks, single and all', async () => {
    const { lookup } = make();
    const one = await new Promise<unknown[]>((r) => lookup('plain.example.', {}, (...args) => r(args)));
    expect(one).toEqual([null, '10.1.1.1', 4]);
    const all = await new Promise<unknown[]>((r) => lookup('plain.example.', { all: true }, (...args) => r(args)));
    expect(all).toEqual([null, [{ address: '10.1.1.1', family: 4 }]]);
  });

  it('never holds a thread of the pool: file writes go on while lookups of names that get no answer hang', async () => {
    const { resolve } = make();
    const hanging = Array.from({ length: 8 }, (_, i) => resolve(`slow-${i}.removed.example.`).catch((err: NodeJS.ErrnoException) => err.code));
    const file = path.join(dir, 'writes');
    const startedMs = performance.now();
    const handle = await fs.promises.open(file, 'w');
    for (let i = 0; i < 10; i++) {
      await handle.write(Buffer.alloc(512, i));
      await handle.datasync();
    }
    await handle.close();
    const writesMs = performance.now() - startedMs;
    const outcomes = await Promise.all(hanging);
    const lookupsMs = performance.now() - startedMs;
    expect(outcomes.every((code) => code === 'ENOTFOUND')).toBe(true);
    // the lookups took their timeouts (two tries of 300 ms, A then AAAA); the writes did not wait for them
    expect(lookupsMs).toBeGreaterThan(500);
    expect(writesMs).toBeLessThan(lookupsMs);
  });
});
