/**
 * Name resolution for connections to other nodes, off libuv's thread pool.
 *
 * Node's default `dns.lookup` runs getaddrinfo on one of libuv's four pool threads, the same
 * threads that do every file write and fsync of the log. A name whose lookup hangs (a removed
 * member still in gossip, in a Kubernetes pod whose search list ends at an upstream server that
 * does not answer: seconds per name) holds a pool thread for that long; gossip asks for such
 * names every interval, the pool fills, and the node's own writes wait behind DNS. Seen on kind
 * after a scale-down: replication answers came seconds late, every leader stepped down for want
 * of a quorum and no leader lasted.
 *
 * This lookup asks the DNS servers through c-ares (asynchronous, no pool thread) and applies
 * what getaddrinfo would: /etc/hosts first, then the `search` list and `ndots` of
 * /etc/resolv.conf (names with fewer dots than ndots try the search domains first, a trailing
 * dot means the name as it is), each query bounded by a timeout.
 */
import dns from 'node:dns';
import fs from 'node:fs';
import net from 'node:net';

export interface ResolverConfig {
  readonly search: readonly string[];
  readonly ndots: number;
}

/** The parts of resolv.conf that decide which names are asked (servers: c-ares reads them itself). */
export function parseResolvConf(text: string): ResolverConfig {
  let search: string[] = [];
  let ndots = 1;
  for (const raw of text.split('\n')) {
    const line = raw.replace(/[#;].*$/, '').trim();
    const [keyword, ...rest] = line.split(/\s+/);
    if (keyword === 'search' || keyword === 'domain') search = rest.filter((d) => d !== '');
    if (keyword === 'options') {
      for (const option of rest) {
        const m = /^ndots:(\d+)$/.exec(option);
        if (m) ndots = Math.min(Number(m[1]), 15);
      }
    }
  }
  return { search, ndots };
}

/** name → addresses, from a hosts file. */
export function parseHosts(text: string): Map<string, string[]> {
  const hosts = new Map<string, string[]>();
  for (const raw of text.split('\n')) {
    const [address, ...names] = raw.replace(/#.*$/, '').trim().split(/\s+/);
    if (address === undefined || address === '' || net.isIP(address) === 0) continue;
    for (const name of names) {
      const key = name.toLowerCase();
      const list = hosts.get(key) ?? [];
      if (!list.includes(address)) list.push(address);
      hosts.set(key, list);
    }
  }
  return hosts;
}

/** The names asked for `name`, in getaddrinfo's order. */
export function candidateNames(name: string, config: ResolverConfig): string[] {
  if (name.endsWith('.')) return [name.slice(0, -1)];
  const dots = name.split('.').length - 1;
  const searched = config.search.map((domain) => `${name}.${domain}`);
  return dots >= config.ndots ? [name, ...searched] : [...searched, name];
}

export interface PeerLookupOptions {
  /** Per query to a DNS server. */
  readonly timeoutMs?: number;
  readonly resolvConfPath?: string;
  readonly hostsPath?: string;
  /** DNS servers (`ip` or `ip:port`); default: those of resolv.conf. */
  readonly servers?: readonly string[];
}

type LookupAddress = { address: string; family: number };
export type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;
export type PeerLookup = (hostname: string, options: dns.LookupOptions, callback: LookupCallback) => void;

function readOr(path: string, fallback: string): string {
  try {
    return fs.readFileSync(path, 'utf8');
  } catch {
    return fallback;
  }
}

/** A `lookup` for net.connect / http.request options (and a promise form for discovery). */
export function createPeerLookup(options: PeerLookupOptions = {}): { lookup: PeerLookup; resolve: (name: string) => Promise<LookupAddress[]> } {
  const config = parseResolvConf(readOr(options.resolvConfPath ?? '/etc/resolv.conf', ''));
  const hosts = parseHosts(readOr(options.hostsPath ?? '/etc/hosts', ''));
  const resolver = new dns.promises.Resolver({ timeout: options.timeoutMs ?? 2000, tries: 2 });
  if (options.servers !== undefined) resolver.setServers([...options.servers]);

  const ask = async (name: string, family: number): Promise<LookupAddress[]> => {
    const v4 = family === 6 ? [] : await resolver.resolve4(name).catch((): string[] => []);
    if (v4.length > 0) return v4.map((address) => ({ address, family: 4 }));
    const v6 = family === 4 ? [] : await resolver.resolve6(name).catch((): string[] => []);
    return v6.map((address) => ({ address, family: 6 }));
  };

  const resolve = async (hostname: string, family = 0): Promise<LookupAddress[]> => {
    const ipFamily = net.isIP(hostname);
    if (ipFamily !== 0) return [{ address: hostname, family: ipFamily }];
    const fromHosts = hosts.get(hostname.toLowerCase().replace(/\.$/, ''));
    if (fromHosts) {
      const found = fromHosts.map((address) => ({ address, family: net.isIP(address) })).filter((a) => family === 0 || a.family === family);
      if (found.length > 0) return found;
    }
    for (const name of candidateNames(hostname, config)) {
      const found = await ask(name, family);
      if (found.length > 0) return found;
    }
    const err: NodeJS.ErrnoException = new Error(`getaddrinfo ENOTFOUND ${hostname}`);
    err.code = 'ENOTFOUND';
    return Promise.reject(err);
  };

  const lookup: PeerLookup = (hostname, lookupOptions, callback) => {
    resolve(hostname, lookupOptions.family === 4 || lookupOptions.family === 6 ? lookupOptions.family : 0).then(
      (addresses) => {
        if (lookupOptions.all === true) callback(null, addresses);
        else callback(null, addresses[0]!.address, addresses[0]!.family);
      },
      (err: NodeJS.ErrnoException) => callback(err, lookupOptions.all === true ? [] : ''),
    );
  };
  return { lookup, resolve: (name) => resolve(name) };
}

let shared: ReturnType<typeof createPeerLookup> | undefined;

/** The process's peer lookup (resolv.conf and hosts read once, at first use). */
export function peerLookup(): ReturnType<typeof createPeerLookup> {
  shared ??= createPeerLookup();
  return shared;
}
