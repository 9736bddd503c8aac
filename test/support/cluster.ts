/**
 * Real clusters of node processes for tests and benches: each node on its own loopback address
 * (127.0.0.11, .12, ...) with its own HTTP and replication ports, all seeded with each other's
 * HTTP endpoints. Nodes can be stopped, SIGKILLed and started again with the same identity
 * (address, ports, directories).
 */
import { join } from 'node:path';
import { httpClient, type Http } from './http-client.js';
import { freePort, startNode, tempDir, type NodeProcess } from './node-process.js';

export interface ClusterMemberSpec {
  readonly name: string;
  readonly ip: string;
  readonly httpPort: number;
  readonly replicationPort: number;
  readonly readOnlyReplica: boolean;
  /** The command the member is started through (empty: directly). */
  readonly prefix: readonly string[];
  /** Data and index directories (undefined with --mem-db). */
  readonly db: string | undefined;
  readonly index: string | undefined;
}

export interface ClusterMember {
  readonly spec: ClusterMemberSpec;
  process: NodeProcess | undefined;
  readonly baseUrl: string;
  readonly http: Http;
}

export interface TestCluster {
  readonly members: readonly ClusterMember[];
  /**
   * Starts (or restarts) a member; resolves once it logs ready. `clusterSize` restarts it with
   * another size (a resize, as the operator rolls one).
   */
  start(member: ClusterMember, overrides?: { readonly clusterSize?: number }): Promise<void>;
  /** The member whose /info says leader, waiting until exactly one voting member does. */
  leader(timeoutMs?: number): Promise<ClusterMember>;
  /** Waits until every running member reports one of the stable states. */
  waitForStable(timeoutMs?: number): Promise<void>;
  state(member: ClusterMember): Promise<string>;
  stop(): Promise<void>;
}

export interface ClusterOptions {
  readonly size: number;
  readonly readOnlyReplicas?: number;
  /** Keep data on disk (SIGKILL tests); default in memory. */
  readonly onDisk?: boolean;
  readonly args?: readonly string[];
  /** First address: 127.0.0.<firstHost>, the next ones above it. */
  readonly firstHost?: number;
  /**
   * Members in network namespaces of their own (test/support/netns.ts) instead of on loopback:
   * their addresses, and the command each is started through. Ports are then the defaults
   * (2113, 1112), as on separate machines.
   */
  readonly network?: { readonly ips: readonly string[]; readonly prefix: (index: number) => readonly string[] };
}

/**
 * Timings for tests: a cluster forms and fails over in a second or two. Shorter timeouts (500 ms)
 * kept a loaded 2-core machine (CI runs a kind cluster beside these tests) in elections.
 */
export const FAST_CLUSTER_ARGS = [
  '--gossip-interval-ms', '250', '--gossip-timeout-ms', '1000', '--leader-election-timeout-ms', '1000',
  '--commit-timeout-ms', '4000', '--prepare-timeout-ms', '2000',
];

const STABLE = new Set(['leader', 'follower', 'readonlyreplica']);

export async function createCluster(options: ClusterOptions): Promise<TestCluster> {
  const dir = options.onDisk === true ? tempDir('edb-cluster-') : undefined;
  const count = options.size + (options.readOnlyReplicas ?? 0);
  const first = options.firstHost ?? 11;
  const specs: ClusterMemberSpec[] = [];
  for (let i = 0; i < count; i++) {
    const network = options.network;
    const ip = network === undefined ? `127.0.0.${first + i}` : network.ips[i]!;
    const name = `node${i + 1}`;
    specs.push({
      name, ip, readOnlyReplica: i >= options.size,
      httpPort: network === undefined ? await freePort(ip) : 2113,
      replicationPort: network === undefined ? await freePort(ip) : 1112,
      prefix: network?.prefix(i) ?? [],
      db: dir === undefined ? undefined : join(dir.path, name, 'db'),
      index: dir === undefined ? undefined : join(dir.path, name, 'index'),
    });
  }
  const seeds = specs.map((s) => `${s.ip}:${s.httpPort}`).join(',');
  const members: ClusterMember[] = specs.map((spec) => {
    const baseUrl = `http://${spec.ip}:${spec.httpPort}`;
    return { spec, process: undefined, baseUrl, http: httpClient(baseUrl) };
  });

  const start = async (member: ClusterMember, overrides: { readonly clusterSize?: number } = {}): Promise<void> => {
    const s = member.spec;
    const args = [
      '--node-ip', s.ip, '--http-port', String(s.httpPort), '--replication-port', String(s.replicationPort),
      '--cluster-size', String(overrides.clusterSize ?? options.size), '--gossip-seed', seeds, ...FAST_CLUSTER_ARGS,
      ...(s.readOnlyReplica ? ['--read-only-replica'] : []),
      ...(s.db === undefined ? [] : ['--db', s.db, '--index', s.index!]),
      ...(options.args ?? []),
    ];
    member.process = await startNode({ memDb: s.db === undefined, args, prefix: s.prefix });
  };

  const state = async (member: ClusterMember): Promise<string> => {
    try {
      const info = await member.http('GET', '/info', { auth: false });
      return String(info.json<{ state: string }>().state);
    } catch {
      return 'unreachable';
    }
  };

  /** The leader's default users have reached every running member (until then they answer 503). */
  const usersEverywhere = async (): Promise<boolean> => {
    const answers = await Promise.all(running().map(async (m) => {
      try {
        return (await m.http('GET', '/users/admin', { headers: { accept: 'application/json' } })).status;
      } catch {
        return 0;
      }
    }));
    return answers.every((status) => status === 200);
  };

  const running = (): ClusterMember[] => members.filter((m) => m.process !== undefined && m.process.child.exitCode === null && m.process.child.signalCode === null);

  const cluster: TestCluster = {
    members,
    start,
    state,
    async leader(timeoutMs = 30_000) {
      const deadline = Date.now() + timeoutMs;
      let seen: string[] = [];
      while (Date.now() < deadline) {
        const live = running();
        const states = await Promise.all(live.map((m) => state(m)));
        seen = states;
        const leaders = live.filter((_, i) => states[i] === 'leader');
        if (leaders.length === 1) return leaders[0]!;
        await new Promise((r) => setTimeout(r, 100));
      }
      throw new Error(`no single leader within ${timeoutMs} ms; states: ${seen.join(', ')}`);
    },
    async waitForStable(timeoutMs = 30_000) {
      const deadline = Date.now() + timeoutMs;
      let seen: string[] = [];
      while (Date.now() < deadline) {
        const states = await Promise.all(running().map((m) => state(m)));
        seen = states;
        if (states.every((s) => STABLE.has(s)) && states.filter((s) => s === 'leader').length === 1 && await usersEverywhere()) return;
        await new Promise((r) => setTimeout(r, 100));
      }
      const tails = members.map((m) => `--- ${m.spec.name} (exit ${String(m.process?.child.exitCode)} ${String(m.process?.child.signalCode)}):\n${(m.process?.output ?? []).slice(-15).join('\n')}`);
      throw new Error(`cluster not stable within ${timeoutMs} ms; states: ${seen.join(', ')}\n${tails.join('\n')}`);
    },
    async stop() {
      await Promise.all(members.map(async (m) => {
        await m.process?.stop('SIGKILL');
        m.process = undefined;
      }));
      dir?.remove();
    },
  };
  await Promise.all(members.map((m) => start(m)));
  return cluster;
}
