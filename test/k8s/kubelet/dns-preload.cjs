'use strict';
// Preloaded into every container process by the local kubelet (NODE_OPTIONS=--require=...).
// Gives Node's dns.lookup the resolver behaviour a Pod has in Kubernetes: the search list
// <ns>.svc.cluster.local svc.cluster.local cluster.local (ndots:5), answered from the records the
// kubelet publishes in /etc/hosts. No lookup leaves the machine: a name that is not there fails with
// ENOTFOUND instead of going to the host's DNS server (EVENTDB_K8S_EXTERNAL_DNS=1 in the kubelet's
// environment lets names outside cluster.local through to the system resolver).
const dns = require('node:dns');
const fs = require('node:fs');
const net = require('node:net');

const hostsFile = process.env.EVENTDB_K8S_HOSTS_FILE;
const ns = process.env.EVENTDB_K8S_POD_NAMESPACE || 'default';
const search = [`${ns}.svc.cluster.local`, 'svc.cluster.local', 'cluster.local'];
const externalDns = process.env.EVENTDB_K8S_EXTERNAL_DNS === '1';
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
  // without external DNS every unknown name stays local
  return !externalDns || n === 'cluster.local' || n.endsWith('.cluster.local');
}

function wantFamily(options) {
  const f = options.family;
  if (f === 4 || f === 'IPv4') return 4;
  if (f === 6 || f === 'IPv6') return 6;
  return 0;
}

const origLookup = dns.lookup;
function lookup(hostname, options, callback) {
  if (typeof options === 'function') {
    callback = options;
    options = {};
  }
  if (typeof options === 'number') options = { family: options };
  options = options || {};
  if (typeof hostname !== 'string' || net.isIP(hostname) || !hostname) {
    return origLookup.call(dns, hostname, options, callback);
  }
  const ips = resolveLocal(hostname);
  const want = wantFamily(options);
  const addrs = (ips || []).map((address) => ({ address, family: net.isIP(address) })).filter((a) => !want || a.family === want);
  if (addrs.length > 0) {
    process.nextTick(() => {
      if (options.all) callback(null, addrs);
      else callback(null, addrs[0].address, addrs[0].family);
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

// dns.resolve4 / resolve(name, 'A') (c-ares, normally straight to the DNS server): same answers for
// cluster names, so DNS-based peer discovery works and never leaves the machine.
function notFound(hostname, syscall) {
  return Object.assign(new Error(`${syscall} ENOTFOUND ${hostname}`), { code: 'ENOTFOUND', errno: undefined, syscall, hostname });
}
function localA(hostname, options) {
  const ips = (resolveLocal(hostname) || []).filter((ip) => net.isIPv4(ip));
  if (ips.length === 0) return undefined;
  return options && options.ttl ? ips.map((address) => ({ address, ttl: 5 })) : ips.slice();
}
function wrapResolve4(orig) {
  return function resolve4(hostname, options, callback) {
    if (typeof options === 'function') {
      callback = options;
      options = {};
    }
    if (typeof hostname === 'string') {
      const a = localA(hostname, options);
      if (a) return void process.nextTick(() => callback(null, a));
      if (clusterName(hostname)) return void process.nextTick(() => callback(notFound(hostname, 'queryA')));
    }
    return orig.call(this, hostname, options, callback);
  };
}
function wrapResolve(orig) {
  return function resolve(hostname, rrtype, callback) {
    if (typeof rrtype === 'function') {
      callback = rrtype;
      rrtype = 'A';
    }
    if ((rrtype === undefined || rrtype === 'A') && typeof hostname === 'string' && (resolveLocal(hostname) || clusterName(hostname))) {
      return wrapResolve4(() => undefined).call(this, hostname, {}, callback);
    }
    return orig.call(this, hostname, rrtype, callback);
  };
}
function wrapPromise4(orig) {
  return function resolve4(hostname, options) {
    if (typeof hostname === 'string') {
      const a = localA(hostname, options);
      if (a) return Promise.resolve(a);
      if (clusterName(hostname)) return Promise.reject(notFound(hostname, 'queryA'));
    }
    return orig.call(this, hostname, options);
  };
}
function wrapPromiseResolve(orig) {
  return function resolve(hostname, rrtype) {
    if ((rrtype === undefined || rrtype === 'A') && typeof hostname === 'string' && (resolveLocal(hostname) || clusterName(hostname))) {
      return wrapPromise4(() => Promise.reject(notFound(hostname, 'queryA'))).call(this, hostname, {});
    }
    return orig.call(this, hostname, rrtype);
  };
}
dns.resolve4 = wrapResolve4(dns.resolve4);
dns.resolve = wrapResolve(dns.resolve);
dns.Resolver.prototype.resolve4 = wrapResolve4(dns.Resolver.prototype.resolve4);
dns.Resolver.prototype.resolve = wrapResolve(dns.Resolver.prototype.resolve);
dns.promises.resolve4 = wrapPromise4(dns.promises.resolve4);
dns.promises.resolve = wrapPromiseResolve(dns.promises.resolve);
dns.promises.Resolver.prototype.resolve4 = wrapPromise4(dns.promises.Resolver.prototype.resolve4);
dns.promises.Resolver.prototype.resolve = wrapPromiseResolve(dns.promises.Resolver.prototype.resolve);
