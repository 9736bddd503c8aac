/**
 * The spec's rolling certificate renewal on a real 3-node cluster over TLS (node processes on
 * 127.0.0.x): gossip, elections and replication authenticate both ends by
 * certificate (data in memory). While a client keeps appending, every node's certificate and CA are replaced (a
 * new CA instead of the old one in each trusted-roots folder, a certificate with another common
 * name); one node reloads by a real SIGHUP, the two others by POST /admin/reloadconfig. Each
 * serves its new certificate to the next connection at once, the cluster keeps accepting writes,
 * and after the connection-reset interval (seconds here) every node-to-node link uses the new
 * certificates on both ends. No acknowledged write is lost: every node holds every one.
 */
import { X509Certificate } from 'node:crypto';
import { copyFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

import { createCa, issueNodeCertificate, type CertificateFiles } from '../support/certificates.js';
import { basic } from '../support/credentials.js';
import { httpsRequest, type HttpsResponse } from '../support/https-client.js';
import { newEvent } from '../support/http-client.js';
import { freePort, startNode, tempDir, type NodeProcess } from '../support/node-process.js';

const RESET_INTERVAL_SEC = 6;
/**
 * Cluster timings: faster than the defaults, but slower than FAST_CLUSTER_ARGS so that a member
 * is declared dead after 2.1 s of silence, not 0.9 s: with links reset every few seconds, each
 * reconnection costs TLS handshakes, and on a machine shared with other work a shorter window
 * makes the test about scheduling rather than TLS.
 */
const CLUSTER_TIMINGS = [
  '--gossip-interval-ms', '300', '--gossip-timeout-ms', '1500', '--leader-election-timeout-ms', '1000',
  '--commit-timeout-ms', '4000', '--prepare-timeout-ms', '2000',
];
const FIRST_HOST = 41;
const dir = tempDir('eventdb-tls-cluster-');
afterAll(() => dir.remove());

const ca1 = createCa(join(dir.path, 'ca'), 'ca1', 'Cluster CA One');
const ca2 = createCa(join(dir.path, 'ca'), 'ca2', 'Cluster CA Two');
const TRUST = [ca1.certPem, ca2.certPem];

interface Member {
  readonly name: string;
  readonly ip: string;
  readonly httpPort: number;
  readonly replicationPort: number;
  readonly certFile: string;
  readonly keyFile: string;
  readonly roots: string;
  readonly configFile: string;
  readonly baseUrl: string;
  process?: NodeProcess;
}

function fingerprint(cert: CertificateFiles): string {
  return new X509Certificate(cert.certPem).fingerprint256;
}

interface NodeLink {
  direction: string;
  remoteAddress: string;
  remotePort: number;
  localFingerprintSha256: string;
  peerFingerprintSha256: string;
  peerCommonName: string;
}

async function info(member: Member): Promise<{ state: string; certificate: { fingerprintSha256: string; nodeLinks: NodeLink[] } }> {
  return (await httpsRequest(`${member.baseUrl}/info`, { ca: TRUST, auth: false, timeoutMs: 5_000 })).json();
}

async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (let i = 0; i < 100_000 && Date.now() < deadline; i++) {
    try {
      const value = await probe();
      if (value !== undefined) return value;
    } catch (err: unknown) {
      last = err;
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last === undefined ? '' : `: ${String(last)}`}`);
}

describe('rolling certificate renewal on a 3-node cluster over TLS', () => {
  it('forms and replicates over TLS; new CA and certificates reach every node-to-node link after the reset interval; no acknowledged write lost', async () => {
    const members: Member[] = [];
    for (let i = 0; i < 3; i++) {
      const name = `node${i + 1}`;
      const ip = `127.0.0.${FIRST_HOST + i}`;
      const httpPort = await freePort(ip);
      const base = join(dir.path, name);
      mkdirSync(join(base, 'live'), { recursive: true });
      mkdirSync(join(base, 'roots'), { recursive: true });
      members.push({
        name, ip, httpPort, replicationPort: await freePort(ip),
        certFile: join(base, 'live', 'node.crt'), keyFile: join(base, 'live', 'node.key'), roots: join(base, 'roots'),
        configFile: join(base, 'eventdb.yaml'), baseUrl: `https://${ip}:${httpPort}`,
      });
    }
    const issue = (m: Member, ca: CertificateFiles, commonName: string, generation: string): CertificateFiles =>
      issueNodeCertificate(join(dir.path, 'issued'), `${m.name}-${generation}`, ca, commonName, { ipAddresses: [m.ip], dnsNames: ['localhost'] });
    const oldCerts = members.map((m) => issue(m, ca1, 'eventdb-node', 'old'));
    const newCerts = members.map((m) => issue(m, ca2, 'eventdb-node.renewed.test', 'new'));
    const seeds = members.map((m) => `${m.ip}:${m.httpPort}`).join(',');
    members.forEach((m, i) => {
      copyFileSync(oldCerts[i]!.certPath, m.certFile);
      copyFileSync(oldCerts[i]!.keyPath, m.keyFile);
      copyFileSync(ca1.certPath, join(m.roots, 'ca.crt'));
      writeFileSync(m.configFile, `CertificateFile: ${m.certFile}\nCertificatePrivateKeyFile: ${m.keyFile}\nTrustedRootCertificatesPath: ${m.roots}\n`);
    });
    const oldPrints = new Set(oldCerts.map(fingerprint));
    const newPrints = new Set(newCerts.map(fingerprint));

    let stopWriting = false;
    const acknowledged: string[] = [];
    const failures: Array<{ atMs: number; error: string }> = [];
    const ackTimes: number[] = [];
    let writer: Promise<void> = Promise.resolve();
    try {
      await Promise.all(
        members.map(async (m) => {
          m.process = await startNode({
            insecure: false,
            args: [
              '--config', m.configFile,
              '--node-ip', m.ip, '--http-port', String(m.httpPort), '--replication-port', String(m.replicationPort),
              '--cluster-size', '3', '--gossip-seed', seeds, ...CLUSTER_TIMINGS,
              '--connection-reset-interval-sec', String(RESET_INTERVAL_SEC),
            ],
          });
        }),
      );

      // The cluster forms over TLS: one leader, two followers, links with the old certificates.
      const leaderOf = async (): Promise<Member | undefined> => {
        const states = await Promise.all(members.map(async (m) => (await info(m)).state));
        const leaders = members.filter((_, i) => states[i] === 'leader');
        return leaders.length === 1 && states.filter((s) => s === 'follower').length === 2 ? leaders[0] : undefined;
      };
      let leader = await until('a leader and two followers', leaderOf, 60_000);
      const linksOf = async (m: Member): Promise<NodeLink[]> => (await info(m)).certificate.nodeLinks;
      for (const m of members) {
        const links = await until(`${m.name}'s node-to-node links`, async () => {
          const l = await linksOf(m);
          return l.length > 0 ? l : undefined;
        }, 20_000);
        for (const link of links) {
          expect(oldPrints.has(link.localFingerprintSha256)).toBe(true);
          expect(oldPrints.has(link.peerFingerprintSha256)).toBe(true);
          expect(link.peerCommonName).toBe('eventdb-node');
        }
      }
      expect((await linksOf(leader)).some((l) => l.direction === 'incoming')).toBe(true);

      // Gossip and election messages are taken only from nodes of this cluster: a client without
      // a certificate, or with one of the trusted CA but another common name, gets 401 and
      // changes nothing (a ViewChange of a far view would otherwise start an election).
      const intruder = issueNodeCertificate(join(dir.path, 'issued'), 'intruder', ca1, 'intruder', { ipAddresses: ['127.0.0.1'] });
      const viewChange = JSON.stringify({ type: 'ViewChange', from: '00000000-0000-0000-0000-0000000000aa', view: 100_000 });
      for (const clientCertificate of [undefined, { cert: intruder.certPem, key: intruder.keyPem }]) {
        for (const [path, body] of [['/gossip', JSON.stringify({ members: [] })], ['/elections', viewChange]] as const) {
          const refused = await httpsRequest(`${leader.baseUrl}${path}`, {
            ca: TRUST, method: 'POST', auth: false, headers: { 'content-type': 'application/json' }, body,
            ...(clientCertificate === undefined ? {} : { clientCertificate }),
          });
          expect(refused.status, `${path} ${clientCertificate === undefined ? 'without' : 'with a foreign'} certificate`).toBe(401);
          expect(refused.text).toMatch(clientCertificate === undefined ? /^Not a node of this cluster: the peer presented no certificate/ : /^Not a node of this cluster: .*common name 'intruder'/);
        }
      }
      await new Promise((r) => setTimeout(r, 2_000));
      for (const m of members) expect(m.process!.output.filter((l) => l.includes('"view":100000'))).toEqual([]);

      // A writer appends all along, every other write through a follower (forwarded to the leader
      // over the replication link, which the reset interval re-establishes again and again); a
      // write that fails is retried as a new event.
      const stream = 'tls-cluster-writes';
      writer = (async () => {
        for (let i = 0; !stopWriting && i < 100_000; i++) {
          const event = newEvent('tick', { i });
          const target = i % 2 === 0 ? leader : (members.find((m) => m !== leader) ?? leader);
          try {
            const res: HttpsResponse = await httpsRequest(`${target.baseUrl}/streams/${stream}`, {
              ca: TRUST,
              method: 'POST',
              headers: { 'content-type': 'application/vnd.eventstore.events+json' },
              body: JSON.stringify([event]),
              timeoutMs: 10_000,
            });
            if (res.status === 201) {
              acknowledged.push(event.eventId);
              ackTimes.push(Date.now());
            } else {
              failures.push({ atMs: Date.now(), error: `${target.name}: HTTP ${res.status} ${res.text.slice(0, 200)}` });
              leader = (await leaderOf().catch(() => undefined)) ?? leader;
            }
          } catch (err: unknown) {
            failures.push({ atMs: Date.now(), error: `${target.name}: ${err instanceof Error ? err.message : String(err)}` });
            leader = (await leaderOf().catch(() => undefined)) ?? leader;
          }
          await new Promise((r) => setTimeout(r, 20));
        }
      })();
      // Replication: the followers hold what the leader acknowledged.
      await until('20 acknowledged writes', async () => (acknowledged.length >= 20 ? true : undefined), 30_000);
      leader = await until('a leader and two followers', leaderOf, 30_000);
      const followers = members.filter((m) => m !== leader);
      for (const f of followers) {
        await until(`${f.name} to hold the first writes`, async () => {
          const page = await httpsRequest(`${f.baseUrl}/streams/${stream}/0/forward/20`, { ca: TRUST, headers: { accept: 'application/vnd.eventstore.atom+json' } });
          return page.status === 200 && (page.json().entries as unknown[]).length === 20 ? true : undefined;
        }, 30_000);
      }
      // A write through a follower is forwarded to the leader over the TLS replication link; with
      // ES-RequireLeader the follower redirects to the leader's https address instead.
      const viaFollower = newEvent('tick', { via: 'follower' });
      const forwarded = await httpsRequest(`${followers[0]!.baseUrl}/streams/${stream}`, {
        ca: TRUST, method: 'POST', headers: { 'content-type': 'application/vnd.eventstore.events+json' }, body: JSON.stringify([viaFollower]),
      });
      expect(forwarded.status, forwarded.text).toBe(201);
      acknowledged.push(viaFollower.eventId);
      const redirected = await httpsRequest(`${followers[1]!.baseUrl}/streams/${stream}`, {
        ca: TRUST, method: 'POST', headers: { 'content-type': 'application/vnd.eventstore.events+json', 'es-requireleader': 'True' },
        body: JSON.stringify([newEvent('tick', { via: 'redirect' })]),
      });
      expect(redirected.status, redirected.text).toBe(307);
      expect(redirected.headers.location).toBe(`${leader.baseUrl}/streams/${stream}`);

      // Renewal: new certificate (new CA, other common name) and the new CA instead of the old one.
      members.forEach((m, i) => {
        copyFileSync(newCerts[i]!.certPath, m.certFile);
        copyFileSync(newCerts[i]!.keyPath, m.keyFile);
        copyFileSync(ca2.certPath, join(m.roots, 'ca.crt'));
      });
      const renewedAt = Date.now();
      const indexOf = (m: Member): number => members.indexOf(m);
      const serving = async (m: Member, timeoutMs: number): Promise<void> => {
        const served = await until(`${m.name} to serve its new certificate`, async () => {
          const res = await httpsRequest(`${m.baseUrl}/info`, { ca: TRUST, auth: false });
          return res.fingerprint === fingerprint(newCerts[indexOf(m)]!) ? res : undefined;
        }, timeoutMs);
        expect(served.json().certificate.fingerprintSha256).toBe(fingerprint(newCerts[indexOf(m)]!));
      };
      // A follower first, by SIGHUP: it serves its new certificate to the next connection.
      const [early, ...late] = [followers[0]!, leader, followers[1]!];
      expect(new Set([early, ...late]).size).toBe(3);
      early.process!.child.kill('SIGHUP');
      await serving(early, 5_000);
      // Until the others reload, new connections between it and them fail (it trusts only the new
      // CA, they only the old one): logged as a partial chain once its links are reset. The
      // leader and the other follower keep the quorum, so writes go on.
      const partial = await until(
        `${early.name} to log a partial chain`,
        async () => early.process!.output.find((l) => l.includes('node-to-node TLS connection failed: partial chain')),
        (RESET_INTERVAL_SEC + 20) * 1000,
      );
      expect(JSON.parse(partial)).toMatchObject({ level: 50, component: 'tls' });
      const windowAcks = ackTimes.filter((t) => t > renewedAt).length;
      // Then the others, by the endpoint.
      const answers = await Promise.all(
        late.map((m) =>
          httpsRequest(`${m.baseUrl}/admin/reloadconfig`, { ca: TRUST, method: 'POST', headers: { authorization: basic('admin', 'changeit') } }),
        ),
      );
      for (const [i, answer] of answers.entries()) {
        expect(answer.status).toBe(200);
        expect(answer.json().certificateFingerprintSha256).toBe(fingerprint(newCerts[indexOf(late[i]!)]!));
        await serving(late[i]!, 1_000);
      }
      const reloadedAt = Date.now();
      process.stderr.write(`tls-cluster: ${windowAcks} writes acknowledged while only ${early.name} had reloaded (${reloadedAt - renewedAt} ms)\n`);
      expect(windowAcks).toBeGreaterThan(0);

      // Writes are still accepted, and after the reset interval every link is on the new certificates.
      await until('writes after the reloads', async () => (ackTimes.filter((t) => t > reloadedAt).length >= 20 ? true : undefined), 60_000);
      for (const m of members) {
        const links = await until(
          `${m.name}'s links on the new certificates`,
          async () => {
            const l = await linksOf(m);
            const renewed = l.length > 0 && l.every((x) => newPrints.has(x.localFingerprintSha256) && newPrints.has(x.peerFingerprintSha256));
            return renewed ? l : undefined;
          },
          (RESET_INTERVAL_SEC + 20) * 1000,
        );
        for (const link of links) expect(link.peerCommonName).toBe('eventdb-node.renewed.test');
      }
      const afterLinks = Date.now();
      await until('writes once every link is renewed', async () => (ackTimes.filter((t) => t > afterLinks).length >= 20 ? true : undefined), 60_000);

      stopWriting = true;
      await writer;
      // No acknowledged write lost: every node holds every acknowledged event.
      const expected = new Set(acknowledged);
      for (const m of members) {
        await until(`${m.name} to hold every acknowledged write`, async () => {
          const page = await httpsRequest(`${m.baseUrl}/streams/${stream}/0/forward/${acknowledged.length + failures.length + 10}?embed=body`, {
            ca: TRUST,
            headers: { accept: 'application/vnd.eventstore.atom+json' },
          });
          if (page.status !== 200) return undefined;
          const ids = new Set((page.json().entries as Array<{ eventId: string }>).map((e) => e.eventId));
          const missing = [...expected].filter((id) => !ids.has(id));
          if (missing.length > 0) throw new Error(`${m.name} (${(await info(m)).state}) has ${ids.size} events, misses ${missing.length} of ${expected.size} acknowledged`);
          return true;
        }, 30_000);
      }
      // Report what the writer saw (a renewal may cost a few writes while links switch over).
      process.stderr.write(
        `tls-cluster: ${acknowledged.length} writes acknowledged, ${failures.length} failed` +
          `${failures.length === 0 ? '' : `: ${failures.slice(0, 8).map((f) => `${f.atMs - renewedAt} ms after renewal: ${f.error}`).join('; ')}`}\n`,
      );
      for (const m of members) {
        const count = (text: string): number => (m.process?.output ?? []).filter((l) => l.includes(text)).length;
        process.stderr.write(
          `tls-cluster: ${m.name}: ${count('node-to-node connection reset')} links reset, ` +
            `${count('node-to-node TLS connection failed')} failed TLS connections and ${count('node-to-node TLS handshake failed')} failed handshakes logged, ` +
            `${count('"msg":"node state changed"')} state changes\n`,
        );
      }
      expect(failures.length).toBeLessThan(acknowledged.length / 10);
    } catch (err: unknown) {
      for (const m of members) {
        const tail = (m.process?.output ?? []).filter((l) => !l.includes('"level":20')).slice(-25);
        process.stderr.write(`--- ${m.name} (${m.ip}) exit ${m.process?.child.exitCode ?? 'running'}\n${tail.join('\n')}\n`);
      }
      process.stderr.write(`writer: ${acknowledged.length} acknowledged, ${failures.length} failed: ${JSON.stringify(failures.slice(0, 5))}\n`);
      throw err;
    } finally {
      stopWriting = true;
      await writer.catch(() => undefined);
      await Promise.all(members.map(async (m) => m.process?.stop('SIGKILL')));
    }
  });
});
