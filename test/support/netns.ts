/**
 * A small private network for cluster fault tests: one Linux network namespace per node, each
 * with a veth pair into a bridge that this test creates on the host (the host keeps an address on
 * the bridge, so the test process reaches every node). A partition is a real packet filter
 * (nftables) inside the namespaces of the isolated nodes, dropping traffic to and from the other
 * nodes; healing removes it. Needs root (CI runs as root); nothing routes off the machine.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';

export interface TestNetwork {
  /** The nodes' addresses (10.77.x.11, .12, ...). */
  readonly ips: readonly string[];
  /** The command that runs a program inside node `index`'s namespace. */
  prefix(index: number): readonly string[];
  /** Cuts the given nodes off from every other node (the test process still reaches all). */
  isolate(indexes: readonly number[]): void;
  /** Removes every partition. */
  heal(): void;
  destroy(): void;
}

function ip(...args: string[]): string {
  return execFileSync('ip', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

function nft(namespace: string, script: string): void {
  execFileSync('ip', ['netns', 'exec', namespace, 'nft', '-f', '-'], { input: script, stdio: ['pipe', 'pipe', 'pipe'] });
}

/** A /24 under 10.77.0.0/16 that no interface on this host uses yet. */
function freeSubnet(): number {
  const used = ip('-4', '-o', 'addr', 'show');
  for (let attempt = 0; attempt < 50; attempt++) {
    const third = 1 + Math.floor(Math.random() * 250);
    if (!used.includes(`10.77.${third}.`)) return third;
  }
  throw new Error('no free 10.77.x.0/24 subnet for the test network');
}

export function createTestNetwork(count: number): TestNetwork {
  if (process.getuid?.() !== 0) throw new Error('the partition test needs root (network namespaces, veth, nftables)');
  const tag = randomBytes(2).toString('hex');
  const third = freeSubnet();
  const bridge = `edb${tag}`;
  const namespaces = Array.from({ length: count }, (_, i) => `edb${tag}n${i}`);
  const ips = Array.from({ length: count }, (_, i) => `10.77.${third}.${11 + i}`);
  const isolated = new Set<number>();
  const destroy = (): void => {
    for (const ns of namespaces) {
      try { ip('netns', 'del', ns); } catch { /* not created */ }
    }
    try { ip('link', 'del', bridge); } catch { /* not created */ }
  };
  try {
    ip('link', 'add', bridge, 'type', 'bridge');
    ip('addr', 'add', `10.77.${third}.1/24`, 'dev', bridge);
    ip('link', 'set', bridge, 'up');
    namespaces.forEach((ns, i) => {
      const host = `edb${tag}h${i}`;
      const inner = `edb${tag}v${i}`;
      ip('netns', 'add', ns);
      ip('link', 'add', host, 'type', 'veth', 'peer', 'name', inner);
      ip('link', 'set', host, 'master', bridge);
      ip('link', 'set', host, 'up');
      ip('link', 'set', inner, 'netns', ns);
      ip('-n', ns, 'addr', 'add', `${ips[i]}/24`, 'dev', inner);
      ip('-n', ns, 'link', 'set', inner, 'up');
      ip('-n', ns, 'link', 'set', 'lo', 'up');
    });
  } catch (err) {
    destroy();
    throw err;
  }
  return {
    ips,
    prefix: (index) => ['ip', 'netns', 'exec', namespaces[index]!],
    isolate(indexes) {
      for (const index of indexes) {
        const others = ips.filter((_, i) => !indexes.includes(i));
        const set = `{ ${others.join(', ')} }`;
        nft(namespaces[index]!, [
          'table inet edbpartition {',
          `  chain in { type filter hook input priority 0; ip saddr ${set} drop; }`,
          `  chain out { type filter hook output priority 0; ip daddr ${set} drop; }`,
          '}',
        ].join('\n'));
        isolated.add(index);
      }
    },
    heal() {
      for (const index of isolated) nft(namespaces[index]!, 'delete table inet edbpartition');
      isolated.clear();
    },
    destroy,
  };
}
