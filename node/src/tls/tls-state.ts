/**
 * The node's TLS state: the material in force, swapped whole on a successful reload, and what
 * every TLS endpoint of the node is built from. This is the API the node's transports use:
 *
 * Serving
 * - `httpsServerOptions()`: options for the HTTP API's https server. Clients are not asked to
 *   authenticate by certificate (`rejectUnauthorized: false`), but a certificate is requested,
 *   so another node calling the HTTP port (gossip, elections) presents its own and
 *   `verifyPeer(request.socket)` tells whether it is a node of this cluster.
 * - `createPeerServer(onPeer)`: a TLS server for a node-to-node channel (replication): peers must
 *   present a certificate that chains to a trusted root (the handshake fails otherwise and the
 *   failure is logged) and carries the reserved node common name (`verifyPeer`); `onPeer` gets
 *   only accepted sockets. The link is tracked and reset after the connection-reset interval.
 * - `attachServer(server)`: every attached server gets the new material for new connections at
 *   once on reload (`server.setSecureContext`); `serverSecureContext()` is the context itself.
 *
 * Connecting to another node
 * - `clientConnectOptions(host)`: options for `tls.connect` / `https.request`: the trusted roots
 *   as CA, this node's certificate and key (mutual authentication), the host name checked
 *   against the peer's SANs and the peer checked by `verifyPeer`.
 * - `connectPeer({ host, port })`: `tls.connect` with those options, logged when it fails (a
 *   partial chain during a CA migration, a refused common name), tracked and reset after the
 *   interval (the socket is ended: the caller reconnects on 'close', as after any drop).
 * - `createPeerAgent()`: an `https.Agent` for peer HTTP requests: keep-alive connections made
 *   with the material in force when each is opened, never reused once older than the interval.
 *
 * Reload
 * - `replace(material)` (called by the reload step) swaps the material, updates attached
 *   servers and calls the `onReload` listeners. Established node-to-node connections keep the
 *   certificates they were authenticated with until the connection-reset interval ends them, so
 *   every node can be given its new certificate within that window (the spec's rolling renewal).
 * - `links()`: the node-to-node connections open now, with the certificates each side used.
 */
import { X509Certificate } from 'node:crypto';
import type { Duplex } from 'node:stream';
import { isIP } from 'node:net';
import https from 'node:https';
import tls from 'node:tls';

import type { Logger } from '../logging.js';
import {
  buildChain,
  commonNameOf,
  distinguishedName,
  nodeUsageProblem,
  notAfterMs,
  notBeforeMs,
  subjectAltNamesOf,
} from './certificate.js';
import type { TlsMaterial } from './material.js';
import { commonNameMatchesReserved } from './names.js';
import { peerLookup } from '../platform/peer-lookup.js';

export type PeerRejection = 'no-certificate' | 'partial-chain' | 'invalid-chain' | 'common-name' | 'no-san' | 'key-usage';

export type PeerVerdict =
  | { readonly ok: true; readonly commonName: string; readonly fingerprintSha256: string }
  | { readonly ok: false; readonly rejection: PeerRejection; readonly reason: string };

export interface NodeLink {
  readonly direction: 'incoming' | 'outgoing';
  readonly remoteAddress: string;
  readonly remotePort: number;
  /** This node's certificate when the link was established. */
  readonly localFingerprintSha256: string;
  readonly peerFingerprintSha256: string;
  readonly peerCommonName: string;
  readonly establishedAt: string;
}

export interface CertificateInfo {
  readonly fingerprintSha256: string;
  readonly subject: string;
  readonly commonName: string | null;
  readonly issuer: string;
  readonly subjectAltNames: string[];
  readonly serialNumber: string;
  readonly notBefore: string;
  readonly notAfter: string;
  readonly loadedAt: string;
  readonly reservedNodeCommonName: string;
  readonly trustedRoots: { readonly fingerprintSha256: string; readonly subject: string; readonly notAfter: string }[];
  readonly trustedRootsLoadedAt: string;
  readonly connectionResetIntervalSec: number;
  readonly nodeLinks: NodeLink[];
}

export type ReloadListener = (material: TlsMaterial, previous: TlsMaterial) => void;

export interface TlsState {
  material(): TlsMaterial;
  /** For GET /info: the certificate served, the trusted roots, the node-to-node links. */
  describe(): CertificateInfo;
  /** Key, certificate chain and trusted roots for secure contexts. */
  secureContextOptions(): tls.SecureContextOptions;
  serverSecureContext(): tls.SecureContext;
  httpsServerOptions(): https.ServerOptions;
  attachServer(server: tls.Server): void;
  createPeerServer(onPeer: (socket: tls.TLSSocket, peer: Extract<PeerVerdict, { ok: true }>) => void): tls.Server;
  clientConnectOptions(host: string): tls.ConnectionOptions;
  /** `onExpire`: called instead of ending the socket once the reset interval has passed (the owner ends it). */
  connectPeer(target: { readonly host: string; readonly port: number }, onExpire?: () => void): tls.TLSSocket;
  createPeerAgent(options?: https.AgentOptions): https.Agent;
  /** Whether a peer (a certificate, or the TLS socket it came on) is a node of this cluster. */
  verifyPeer(peer: X509Certificate | tls.TLSSocket): PeerVerdict;
  /**
   * verifyPeer for a request's connection to the HTTP API, decided once per connection (it keeps
   * the certificates it was set up with); a refusal is logged once per connection.
   */
  verifyConnection(socket: tls.TLSSocket): PeerVerdict;
  /** The replication transport of the cluster (cluster-node.ts PeerTransport): createPeerServer and connectPeer. */
  peerTransport(): {
    createServer(onSocket: (socket: tls.TLSSocket) => void): tls.Server;
    connect(host: string, port: number, onExpire: () => void): tls.TLSSocket;
  };
  /** Registers a node-to-node connection: listed by links(), ended after the reset interval. */
  trackLink(socket: tls.TLSSocket, direction: NodeLink['direction'], onExpire?: () => void): void;
  links(): NodeLink[];
  replace(material: TlsMaterial): void;
  onReload(listener: ReloadListener): () => void;
  readonly connectionResetIntervalMs: number;
}

export interface TlsStateOptions {
  readonly material: TlsMaterial;
  readonly connectionResetIntervalMs: number;
  readonly log: Logger;
  readonly nowMs?: () => number;
}

/**
 * When links are reset, as fractions of the connection-reset interval after they were opened:
 * the connecting side between 0.7 and 0.9 (spread, so that links opened together are not all
 * re-established at once), the accepting side only as a backstop between 0.95 and 1. So the
 * connecting side, which knows what is in flight on the link (writes forwarded to the leader),
 * normally ends it, and every link is gone by the end of the interval all the same.
 */
const RESET_WINDOW = { outgoing: [0.7, 0.9], incoming: [0.95, 1] } as const;

/** How long an expired link may take to close after `end()` before it is destroyed. */
const LINK_CLOSE_GRACE_MS = 5_000;

interface LinkRecord {
  readonly info: NodeLink;
  readonly timer: NodeJS.Timeout;
  expired: boolean;
}

function peerChainOf(socket: tls.TLSSocket): { leaf?: X509Certificate; intermediates: X509Certificate[] } {
  const leaf = socket.getPeerX509Certificate();
  if (leaf === undefined) return { intermediates: [] };
  const intermediates: X509Certificate[] = [];
  let node: tls.DetailedPeerCertificate | undefined = socket.getPeerCertificate(true);
  const seen = new Set<string>();
  while (node !== undefined && node.raw !== undefined && !seen.has(node.fingerprint256)) {
    seen.add(node.fingerprint256);
    if (node.fingerprint256 !== leaf.fingerprint256) intermediates.push(new X509Certificate(node.raw));
    node = node.issuerCertificate;
  }
  return { leaf, intermediates };
}

/** A readable sentence for a failed node-to-node TLS handshake. */
export function describeTlsFailure(err: unknown): string {
  const code = (err as { code?: unknown }).code;
  const message = err instanceof Error ? err.message : String(err);
  switch (code) {
    case 'UNABLE_TO_GET_ISSUER_CERT_LOCALLY':
    case 'UNABLE_TO_GET_ISSUER_CERT':
    case 'UNABLE_TO_VERIFY_LEAF_SIGNATURE':
    case 'SELF_SIGNED_CERT_IN_CHAIN':
    case 'DEPTH_ZERO_SELF_SIGNED_CERT':
      return `partial chain: the peer's certificate was not issued by a trusted root of this node (${message})`;
    case 'CERT_HAS_EXPIRED':
      return `the peer's certificate has expired (${message})`;
    case 'ERR_TLS_CERT_ALTNAME_INVALID':
      return `the peer's certificate does not name the host connected to (${message})`;
    case 'ECONNRESET':
      return `the peer closed the connection during the handshake: it may not trust this node's certificate yet (partial chain) or its common name (${message})`;
    default:
      if (/socket hang up/i.test(message))
        return `the peer closed the connection during the handshake: it may not trust this node's certificate yet (partial chain) or its common name (${message})`;
      if (/unknown ca|certificate unknown|bad certificate|certificate required/i.test(message))
        return `the peer refused this node's certificate (it does not trust its issuer yet, or the common name): ${message}`;
      return message;
  }
}

/**
 * Whether a failed connection is about certificates (logged as an error) rather than the network
 * (a peer down, a timeout: the caller's business). A reset during the handshake counts: a peer
 * that does not trust this node's certificate may just hang up.
 */
export function isCertificateFailure(err: unknown, tcpConnected: boolean): boolean {
  const code = String((err as { code?: unknown }).code ?? '');
  const message = err instanceof Error ? err.message : String(err);
  if (/^(UNABLE_TO_|CERT_|SELF_SIGNED|DEPTH_ZERO|ERR_TLS_CERT|ERR_SSL_|EDB_PEER_|HOSTNAME_MISMATCH)/.test(code)) return true;
  if (/alert|certificate|handshake/i.test(message)) return true;
  return tcpConnected && (code === 'ECONNRESET' || /socket hang up|before secure TLS connection/i.test(message));
}

/** How often the same kind of node-to-node failure with the same peer is logged again. */
const REPEAT_LOG_MS = 10_000;

export function createTlsState(options: TlsStateOptions): TlsState {
  const log = options.log;
  const nowMs = options.nowMs ?? Date.now;
  const resetMs = options.connectionResetIntervalMs;
  let current = options.material;
  let context: tls.SecureContext | undefined;
  const servers = new Set<tls.Server>();
  const listeners = new Set<ReloadListener>();
  const links = new Map<tls.TLSSocket, LinkRecord>();

  // Failures repeat with every gossip round during a CA migration: the first is logged, then one
  // line per peer and kind every REPEAT_LOG_MS with the count of those not logged.
  const lastLogged = new Map<string, { atMs: number; suppressed: number }>();
  const logFailure = (level: 'error' | 'warn', key: string, fields: Record<string, unknown>, message: string): void => {
    const now = nowMs();
    const last = lastLogged.get(key);
    if (last !== undefined && now - last.atMs < REPEAT_LOG_MS) {
      last.suppressed += 1;
      return;
    }
    lastLogged.set(key, { atMs: now, suppressed: 0 });
    log[level]({ ...fields, ...(last === undefined || last.suppressed === 0 ? {} : { repeatedSinceLastLog: last.suppressed }) }, message);
  };
  const onConnectFailure = (socket: tls.TLSSocket, peer: string) => {
    let tcpConnected = false;
    socket.once('connect', () => (tcpConnected = true));
    socket.once('error', (err) => {
      if (links.has(socket)) return;
      const fields = { peer, err: err.message };
      if (isCertificateFailure(err, tcpConnected))
        logFailure('error', `connect ${peer} ${describeTlsFailure(err)}`, fields, `node-to-node TLS connection failed: ${describeTlsFailure(err)}`);
      else log.debug(fields, 'node-to-node connection failed');
    });
  };

  const secureContextOptions = (): tls.SecureContextOptions => ({
    key: current.privateKey.export({ type: 'pkcs8', format: 'pem' }),
    cert: current.certificateChainPem,
    ca: [...current.rootsPem],
    minVersion: 'TLSv1.2',
  });

  const verifyCertificate = (leaf: X509Certificate | undefined, intermediates: readonly X509Certificate[]): PeerVerdict => {
    if (leaf === undefined) return { ok: false, rejection: 'no-certificate', reason: 'the peer presented no certificate' };
    const chain = buildChain(
      leaf,
      intermediates,
      current.roots.map((root) => root.certificate),
      nowMs(),
    );
    if (!chain.ok)
      return { ok: false, rejection: chain.kind === 'partial-chain' ? 'partial-chain' : 'invalid-chain', reason: chain.reason };
    const commonName = commonNameOf(leaf);
    if (!commonNameMatchesReserved(commonName, current.reservedNodeCommonName))
      return {
        ok: false,
        rejection: 'common-name',
        reason: `the peer's common name '${commonName ?? ''}' does not carry the reserved node common name '${current.reservedNodeCommonName}'`,
      };
    const sans = subjectAltNamesOf(leaf);
    if (sans.dns.length === 0 && sans.ip.length === 0)
      return { ok: false, rejection: 'no-san', reason: "the peer's certificate names no DNS name or IP address (subjectAltName)" };
    const usage = nodeUsageProblem(leaf);
    if (usage !== undefined) return { ok: false, rejection: 'key-usage', reason: `the peer's certificate: ${usage}` };
    return { ok: true, commonName: commonName ?? '', fingerprintSha256: leaf.fingerprint256 };
  };

  const verifyPeer = (peer: X509Certificate | tls.TLSSocket): PeerVerdict => {
    if (peer instanceof X509Certificate) return verifyCertificate(peer, []);
    const { leaf, intermediates } = peerChainOf(peer);
    return verifyCertificate(leaf, intermediates);
  };

  const verdicts = new WeakMap<tls.TLSSocket, PeerVerdict>();
  const verifyConnection = (socket: tls.TLSSocket): PeerVerdict => {
    const known = verdicts.get(socket);
    if (known !== undefined) return known;
    const verdict = verifyPeer(socket);
    verdicts.set(socket, verdict);
    if (!verdict.ok)
      logFailure('warn', `request ${socket.remoteAddress ?? '?'} ${verdict.reason}`, { peer: remoteOf(socket), rejection: verdict.rejection }, `node-to-node request refused: ${verdict.reason}`);
    return verdict;
  };

  const remoteOf = (socket: tls.TLSSocket): string => `${socket.remoteAddress ?? '?'}:${socket.remotePort ?? '?'}`;

  const trackLink = (socket: tls.TLSSocket, direction: NodeLink['direction'], onExpire?: () => void): void => {
    if (links.has(socket)) return;
    const peer = socket.getPeerX509Certificate();
    const expire = (): void => {
      const record = links.get(socket);
      if (record === undefined) return;
      record.expired = true;
      log.info({ direction, remote: remoteOf(socket) }, 'node-to-node connection reset: the connection-reset interval has passed');
      if (onExpire !== undefined) {
        onExpire();
        return;
      }
      socket.end();
      setTimeout(() => socket.destroy(), LINK_CLOSE_GRACE_MS).unref();
    };
    const record: LinkRecord = {
      info: {
        direction,
        remoteAddress: socket.remoteAddress ?? '',
        remotePort: socket.remotePort ?? 0,
        localFingerprintSha256: socket.getX509Certificate()?.fingerprint256 ?? current.leaf.fingerprint256,
        peerFingerprintSha256: peer?.fingerprint256 ?? '',
        peerCommonName: peer === undefined ? '' : (commonNameOf(peer) ?? ''),
        establishedAt: new Date(nowMs()).toISOString(),
      },
      // At most the interval (RESET_WINDOW).
      timer: setTimeout(expire, resetMs * (RESET_WINDOW[direction][0] + (RESET_WINDOW[direction][1] - RESET_WINDOW[direction][0]) * Math.random())).unref(),
      expired: false,
    };
    links.set(socket, record);
    socket.once('close', () => {
      clearTimeout(record.timer);
      links.delete(socket);
    });
  };

  const clientConnectOptions = (host: string): tls.ConnectionOptions => ({
    host,
    lookup: peerLookup().lookup,
    ...(isIP(host) === 0 ? { servername: host } : {}),
    ...secureContextOptions(),
    rejectUnauthorized: true,
    checkServerIdentity: (hostname, certificate) => {
      const nameError = tls.checkServerIdentity(hostname, certificate);
      if (nameError !== undefined) return nameError;
      const verdict = verifyCertificate(new X509Certificate(certificate.raw), []);
      return verdict.ok ? undefined : Object.assign(new Error(verdict.reason), { code: `EDB_PEER_${verdict.rejection.toUpperCase()}` });
    },
  });

  const connectPeer = (target: { readonly host: string; readonly port: number }, onExpire?: () => void): tls.TLSSocket => {
    const socket = tls.connect({ ...clientConnectOptions(target.host), port: target.port });
    socket.once('secureConnect', () => trackLink(socket, 'outgoing', onExpire));
    onConnectFailure(socket, `${target.host}:${target.port}`);
    return socket;
  };

  class PeerAgent extends https.Agent {
    // The socket is returned (not passed to a callback): the agent takes it from there.
    override createConnection(requestOptions: https.RequestOptions): Duplex {
      const host = requestOptions.hostname ?? requestOptions.host ?? 'localhost';
      const socket = tls.connect({ ...clientConnectOptions(host), port: Number(requestOptions.port ?? 443) });
      socket.once('secureConnect', () =>
        trackLink(socket, 'outgoing', () => {
          // Idle in the pool: close now; in use: keepSocketAlive refuses it when its request ends.
          const idle = Object.values(this.freeSockets).some((list) => list?.includes(socket));
          if (idle) socket.destroy();
        }),
      );
      onConnectFailure(socket, `${host}:${String(requestOptions.port)}`);
      return socket;
    }

    override keepSocketAlive(socket: Duplex): boolean {
      if (links.get(socket as tls.TLSSocket)?.expired === true) return false;
      return (super.keepSocketAlive as (s: Duplex) => boolean)(socket);
    }
  }

  const state: TlsState = {
    connectionResetIntervalMs: resetMs,
    material: () => current,
    secureContextOptions,
    serverSecureContext() {
      context ??= tls.createSecureContext(secureContextOptions());
      return context;
    },
    // ALPN: `h2` (gRPC, HTTP/2) and `http/1.1` share the port (transport/http2-multiplex.ts).
    httpsServerOptions: () => ({ ...secureContextOptions(), requestCert: true, rejectUnauthorized: false, ALPNProtocols: ['h2', 'http/1.1'] }),
    attachServer(server) {
      servers.add(server);
      server.once('close', () => servers.delete(server));
    },
    createPeerServer(onPeer) {
      const server = tls.createServer({ ...secureContextOptions(), requestCert: true, rejectUnauthorized: true });
      server.on('secureConnection', (socket) => {
        const verdict = verifyPeer(socket);
        if (!verdict.ok) {
          logFailure('error', `refused ${socket.remoteAddress ?? '?'} ${verdict.reason}`, { peer: remoteOf(socket), rejection: verdict.rejection }, `node-to-node connection refused: ${verdict.reason}`);
          socket.destroy();
          return;
        }
        trackLink(socket, 'incoming');
        onPeer(socket, verdict);
      });
      server.on('tlsClientError', (err, socket) => {
        logFailure('error', `handshake ${socket.remoteAddress ?? '?'} ${err.message}`, { peer: remoteOf(socket), err: err.message }, `node-to-node TLS handshake failed: ${describeTlsFailure(err)}`);
      });
      state.attachServer(server);
      return server;
    },
    clientConnectOptions,
    connectPeer,
    createPeerAgent: (agentOptions = {}) => new PeerAgent({ keepAlive: true, ...agentOptions, maxCachedSessions: 0 }),
    verifyPeer,
    verifyConnection,
    peerTransport: () => ({
      createServer: (onSocket) => state.createPeerServer((socket) => onSocket(socket)),
      connect: (host, port, onExpire) => connectPeer({ host, port }, onExpire),
    }),
    trackLink,
    links: () => [...links.values()].map((record) => record.info),
    replace(material) {
      const previous = current;
      current = material;
      context = undefined;
      const options = secureContextOptions();
      for (const server of servers) server.setSecureContext(options);
      log.info(
        {
          fingerprintSha256: material.leaf.fingerprint256,
          previousFingerprintSha256: previous.leaf.fingerprint256,
          subject: distinguishedName(material.leaf.subject),
          reservedNodeCommonName: material.reservedNodeCommonName,
          trustedRoots: material.roots.map((root) => root.certificate.fingerprint256),
        },
        'certificates reloaded: new connections use them now; node-to-node connections follow within the connection-reset interval',
      );
      for (const warning of material.warnings) log.warn({ warning }, 'certificate warning');
      for (const listener of listeners) {
        try {
          listener(material, previous);
        } catch (err: unknown) {
          log.error({ err }, 'a certificate reload listener failed');
        }
      }
    },
    onReload(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    describe: () => describeMaterial(current, resetMs, [...links.values()].map((record) => record.info)),
  };
  return state;
}

function iso(ms: number): string {
  return new Date(ms).toISOString();
}

export function describeMaterial(material: TlsMaterial, resetMs: number, nodeLinks: readonly NodeLink[] = []): CertificateInfo {
  const leaf = material.leaf;
  return {
    fingerprintSha256: leaf.fingerprint256,
    subject: distinguishedName(leaf.subject),
    commonName: commonNameOf(leaf) ?? null,
    issuer: distinguishedName(leaf.issuer),
    subjectAltNames: [...subjectAltNamesOf(leaf).all],
    serialNumber: leaf.serialNumber,
    notBefore: iso(notBeforeMs(leaf)),
    notAfter: iso(notAfterMs(leaf)),
    loadedAt: iso(material.loadedAtMs),
    reservedNodeCommonName: material.reservedNodeCommonName,
    trustedRoots: material.roots.map((root) => ({
      fingerprintSha256: root.certificate.fingerprint256,
      subject: distinguishedName(root.certificate.subject),
      notAfter: iso(notAfterMs(root.certificate)),
    })),
    trustedRootsLoadedAt: iso(material.loadedAtMs),
    connectionResetIntervalSec: Math.round(resetMs / 1000),
    nodeLinks: [...nodeLinks],
  };
}
