'use strict';
// Preloaded into every container process by the local kubelet (NODE_OPTIONS=--require=...).
// Gives Node's dns.lookup the resolver behaviour a Pod has in Kubernetes: the search list
// <ns>.svc.cluster.local svc.cluster.local cluster.local (ndots:5), answered from the pod records the
// kubelet publishes (also in /etc/hosts). Names under cluster.local never leave the machine: an unknown
// one fails with ENOTFOUND instead of going to the host's DNS server. Everything else is untouched.
const dns = require('node:dns');
const fs = require('node:fs');
const net = require('node:net');

const hostsFile = process.env.EVENTDB_K8S_HOSTS_FILE;
const ns = process.env.EVENTDB_K8S_POD_NAMESPACE || 'default';
const search = [`${ns}.svc.cluster.local`, 'svc.cluster.local', 'cluster.local'];
let cache = { mtimeMs: -1, map: new Map() };

function records() {
  if (!hostsFile) return cache.map;
  try {
    const st = fs.statSync(hostsFile);
    if (st.mtimeMs !== cache.mtimeMs) {
      const map = new Map();
      for (const line of fs.readFileSync(hostsFile, 'utf8').split('\n')) {
        const [ip, ...names] = line.trim().split(/\s+/);
        if (!ip || ip.startsWith('#')) continue;
        for (const n of names) {
          const k = n.toLowerCase();
          if (!map.has(k)) map.set(k, []);
          map.get(k).push(ip);
        }
      }
      cache = { mtimeMs: st.mtimeMs, map };
    }
  } catch {
    /* keep the last view */
  }
  return cache.map;
}

function candidates(name) {
  const n = name.toLowerCase();
  if (n.endsWith('.')) return [n.slice(0, -1)];
  const dots = (n.match(/\./g) || []).length;
  const expanded = search.map((s) => `${n}.${s}`);
  return dots >= 5 ? [n, ...expanded] : [...expanded, n];
}

function resolveLocal(name) {
  const map = records();
  for (const c of candidates(name)) {
    const ips = map.get(c);
    if (ips && ips.length > 0) return ips;
  }
  return undefined;
}

function clusterName(name) {
  const n = name.toLowerCase().replace(/\.$/, '');
  return n === 'cluster.local' || n.endsWith('.cluster.local');
}

const origLookup = dns.lookup;
function lookup(hostname, options, callback) {
  if (typeof options === 'function') {
    callback = options;
    options = {};
  }
  if (typeof options === 'number') options = { family: options };
  options = options || {};
  if (typeof hostname !== 'string' || net.isIP(hostname) || hostname === 'localhost' || !hostname) {
    return origLookup.call(dns, hostname, options, callback);
  }
  const ips = resolveLocal(hostname);
  if (ips && (options.family === undefined || options.family === 0 || options.family === 4 || options.family === 'IPv4')) {
    const addrs = ips.map((address) => ({ address, family: 4 }));
    process.nextTick(() => {
      if (options.all) callback(null, addrs);
      else callback(null, addrs[0].address, 4);
    });
    return {};
  }
  if (clusterName(hostname)) {
    const err = Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), {
      code: 'ENOTFOUND',
      errno: -3008,
      syscall: 'getaddrinfo',
      hostname,
    });
    process.nextTick(() => callback(err));
    return {};
  }
  return origLookup.call(dns, hostname, options, callback);
}
dns.lookup = lookup;
const origPromiseLookup = dns.promises.lookup;
dns.promises.lookup = function promisesLookup(hostname, options) {
  if (typeof hostname === 'string' && !net.isIP(hostname) && (resolveLocal(hostname) || clusterName(hostname))) {
    return new Promise((resolve, reject) => {
      lookup(hostname, options, (err, address, family) => {
        if (err) reject(err);
        else if (Array.isArray(address)) resolve(address);
        else resolve({ address, family });
      });
    });
  }
  return origPromiseLookup.call(dns.promises, hostname, options);
};
