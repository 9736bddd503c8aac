/**
 * The operator's typed client of a node's HTTP API (the node's own routes, as EventStoreDB has
 * them): GET /gossip, GET /info, GET /health/live, POST /admin/node/resign,
 * POST /admin/reloadconfig, the scavenge endpoints (POST /admin/scavenge, GET
 * /admin/scavenge/{id|current}, DELETE /admin/scavenge/{id}) and GET /auto-scavenge/enabled. Answers are parsed with zod; every call has a timeout; a route the
 * node version does not have is reported as `unsupported`, not as a failure.
 *
 * Nodes serve HTTPS unless the cluster's tls.mode is Disabled: the client then trusts only the
 * cluster's CA certificates and checks the node certificate's names against the node's DNS name
 * (never against the address it dials, which is a pod IP or a port-forward on 127.0.0.1).
 * Every request is a fresh connection (no keep-alive), so the certificate seen is the one the
 * node serves now, also right after it reloaded its certificates.
 *
 * How a node is reached (its pod IP from inside the cluster, a port-forward from outside) is
 * the caller's choice: methods take the node's endpoint (base URL and TLS trust).
 */
import { createHash } from 'node:crypto';
import http from 'node:http';
import https from 'node:https';
import { isIP } from 'node:net';
import tls from 'node:tls';
import { z } from 'zod';

export const GossipMember = z.looseObject({
  instanceId: z.string(),
  state: z.string(),
  isAlive: z.boolean(),
  httpEndPointIp: z.string(),
  httpEndPointPort: z.number(),
  writerCheckpoint: z.number().optional(),
  chaserCheckpoint: z.number().optional(),
  epochNumber: z.number().optional(),
  nodePriority: z.number().optional(),
  isReadOnlyReplica: z.boolean().optional(),
  esVersion: z.string().optional(),
});
export type GossipMember = z.infer<typeof GossipMember>;

export const Gossip = z.looseObject({
  members: z.array(GossipMember),
  serverIp: z.string().optional(),
  serverPort: z.number().optional(),
});
export type Gossip = z.infer<typeof Gossip>;

export const NodeInfo = z.looseObject({ esVersion: z.string(), state: z.string() });
export type NodeInfo = z.infer<typeof NodeInfo>;

/** GET /info's certificate part: what the node loaded, the file on disk now, the last reload. */
export const NodeCertificateReport = z.looseObject({
  certificate: z
    .looseObject({
      fingerprintSha256: z.string(),
      notAfter: z.string().optional(),
      trustedRoots: z.array(z.looseObject({ fingerprintSha256: z.string() })).optional(),
    })
    .optional(),
  certificateOnDisk: z.looseObject({ fingerprintSha256: z.string().optional(), problem: z.string().optional() }).optional(),
  lastReload: z.looseObject({ at: z.string(), result: z.string(), message: z.string().optional() }).optional(),
});
export type NodeCertificateReport = z.infer<typeof NodeCertificateReport>;

export interface Credentials {
  readonly username: string;
  readonly password: string;
}

/** How the client verifies a node that serves HTTPS. */
export interface NodeTrust {
  /** PEM certificates of the CAs that may sign node certificates (the cluster's CA). */
  readonly ca: readonly string[];
  /** The name the node certificate must carry: the node's DNS name, whatever address is dialled. */
  readonly serverName: string;
}

/** Where a node answers: `http://` or `https://` base URL, and for https the trust to verify it by. */
export interface NodeEndpoint {
  readonly baseUrl: string;
  readonly tls?: NodeTrust;
}

/** The answer to POST /admin/scavenge: the run's id (a run already going is adopted). */
export type ScavengeStartOutcome =
  | { readonly kind: 'started'; readonly scavengeId: string }
  | { readonly kind: 'unsupported' }
  | { readonly kind: 'refused'; readonly statusCode: number; readonly message: string };

/** One run, by id: InProgress or the result the node recorded; NotFound: the node does not know it. */
export type ScavengeRunState = 'InProgress' | 'Success' | 'Stopped' | 'Errored' | 'Interrupted' | 'Unknown' | 'NotFound';
const RUN_STATES: ReadonlySet<string> = new Set(['InProgress', 'Success', 'Stopped', 'Errored', 'Interrupted', 'Unknown']);

export interface ScavengeParameters {
  readonly threshold: number;
  readonly throttlePercent: number;
  readonly threads: number;
}

export type CommandOutcome = { readonly kind: 'done' } | { readonly kind: 'unsupported' } | { readonly kind: 'refused'; readonly statusCode: number; readonly message: string };

/** EDBOP_NODE_UNREACHABLE: no answer or an unreadable one; EDBOP_NODE_TLS_REFUSED: the node's certificate was not accepted. */
export type NodeClientErrorCode = 'EDBOP_NODE_UNREACHABLE' | 'EDBOP_NODE_TLS_REFUSED';

/** A node did not answer, answered something the client cannot read, or was not trusted. */
export class NodeClientError extends Error {
  readonly code: NodeClientErrorCode;
  readonly statusCode: number | undefined;

  constructor(message: string, options: { statusCode?: number; cause?: unknown; code?: NodeClientErrorCode } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'NodeClientError';
    this.code = options.code ?? 'EDBOP_NODE_UNREACHABLE';
    this.statusCode = options.statusCode;
  }
}

export interface NodeRequest {
  readonly url: URL;
  readonly method: 'GET' | 'POST' | 'DELETE';
  readonly headers: Record<string, string>;
  readonly tls: NodeTrust | undefined;
  readonly timeoutMs: number;
}

export interface NodeResponse {
  readonly status: number;
  readonly text: string;
  /** `sha256:<hex>` of the certificate the node presented on this connection (https only). */
  readonly certificateFingerprint?: string;
}

/** Sends one request; the default is node:http / node:https. Tests of pure logic pass a fake. */
export type NodeTransport = (request: NodeRequest) => Promise<NodeResponse>;

export interface NodeClientOptions {
  /** Per request. Default 5 s. */
  readonly timeoutMs?: number;
  readonly transport?: NodeTransport;
}

/** OpenSSL verification codes and Node's name check: the certificate, not the network, failed. */
const TLS_REFUSAL_CODES = new Set([
  'ERR_TLS_CERT_ALTNAME_INVALID',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'CERT_SIGNATURE_FAILURE',
  'CERT_UNTRUSTED',
  'CERT_REJECTED',
  'INVALID_CA',
  'INVALID_PURPOSE',
]);

export function isTlsRefusal(err: unknown): boolean {
  const code = (err as { code?: unknown } | undefined)?.code;
  return typeof code === 'string' && TLS_REFUSAL_CODES.has(code);
}

/**
 * The TLS options of a connection to a node: only the cluster's CAs are trusted (not the
 * system's), verification is on, SNI and the host-name check use the node's DNS name.
 */
export function nodeTlsOptions(trust: NodeTrust): tls.ConnectionOptions {
  return {
    ca: [...trust.ca],
    rejectUnauthorized: true,
    // SNI carries host names only (RFC 6066); an IP is still checked against the certificate.
    ...(isIP(trust.serverName) === 0 ? { servername: trust.serverName } : {}),
    checkServerIdentity: (_host, certificate) => tls.checkServerIdentity(trust.serverName, certificate),
  };
}

export const nodeHttpTransport: NodeTransport = (request) =>
  new Promise<NodeResponse>((resolve, reject) => {
    const secure = request.url.protocol === 'https:';
    if (secure && request.tls === undefined) {
      reject(new Error('an https node endpoint needs the cluster CA to verify the node'));
      return;
    }
    const options: https.RequestOptions = {
      method: request.method,
      headers: request.headers,
      agent: false,
      ...(secure && request.tls !== undefined ? nodeTlsOptions(request.tls) : {}),
    };
    const req = (secure ? https : http).request(request.url, options, (res) => {
      const peer = secure ? (res.socket as tls.TLSSocket).getPeerX509Certificate?.() : undefined;
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('error', reject);
      res.on('end', () =>
        resolve({
          status: res.statusCode ?? 0,
          text: Buffer.concat(chunks).toString('utf8'),
          ...(peer === undefined ? {} : { certificateFingerprint: `sha256:${createHash('sha256').update(peer.raw).digest('hex')}` }),
        }),
      );
    });
    // The timeout covers the whole request (connect, handshake, answer), not only idle sockets.
    const timer = setTimeout(() => req.destroy(new Error(`no answer within ${request.timeoutMs} ms`)), request.timeoutMs);
    req.on('close', () => clearTimeout(timer));
    req.on('error', reject);
    req.end();
  });

function endpointOf(target: NodeEndpoint | string): NodeEndpoint {
  return typeof target === 'string' ? { baseUrl: target } : target;
}

export class NodeClient {
  readonly #timeoutMs: number;
  readonly #transport: NodeTransport;

  constructor(options: NodeClientOptions = {}) {
    this.#timeoutMs = options.timeoutMs ?? 5000;
    this.#transport = options.transport ?? nodeHttpTransport;
  }

  async gossip(target: NodeEndpoint | string): Promise<Gossip> {
    return (await this.observe(target)).gossip;
  }

  /** The node's gossip and, over https, the certificate it served on that connection. */
  async observe(target: NodeEndpoint | string): Promise<{ gossip: Gossip; certificateFingerprint?: string }> {
    const { body, certificateFingerprint } = await this.#getJson(endpointOf(target), '/gossip', Gossip);
    return certificateFingerprint === undefined ? { gossip: body } : { gossip: body, certificateFingerprint };
  }

  /** The node's own report of its certificates (GET /info) and the certificate served on that connection. */
  async certificateReport(target: NodeEndpoint | string): Promise<{ report: NodeCertificateReport; servedFingerprint?: string }> {
    const { body, certificateFingerprint } = await this.#getJson(endpointOf(target), '/info', NodeCertificateReport);
    return certificateFingerprint === undefined ? { report: body } : { report: body, servedFingerprint: certificateFingerprint };
  }

  async info(target: NodeEndpoint | string): Promise<NodeInfo> {
    return (await this.#getJson(endpointOf(target), '/info', NodeInfo)).body;
  }

  /** True when the node answers its liveness endpoint with 2xx. */
  async live(target: NodeEndpoint | string): Promise<boolean> {
    try {
      const response = await this.#request(endpointOf(target), '/health/live', 'GET', {});
      return response.status >= 200 && response.status < 300;
    } catch {
      return false;
    }
  }

  /** Asks the leader to step down; a new election follows. */
  async resign(target: NodeEndpoint | string, credentials: Credentials): Promise<CommandOutcome> {
    return this.#command(endpointOf(target), '/admin/node/resign', credentials);
  }

  /** Sets the node's election priority (gossiped, not persisted: a restarted node starts from its configuration). */
  async setPriority(target: NodeEndpoint | string, credentials: Credentials, priority: number): Promise<CommandOutcome> {
    return this.#command(endpointOf(target), `/admin/node/priority/${Math.trunc(priority)}`, credentials);
  }

  /** Asks the node to reload its configuration and certificates. */
  async reloadConfig(target: NodeEndpoint | string, credentials: Credentials): Promise<CommandOutcome> {
    return this.#command(endpointOf(target), '/admin/reloadconfig', credentials);
  }

  /** POST /admin/scavenge with the schedule's parameters; a run already going is adopted (GET /admin/scavenge/current). */
  async startScavenge(target: NodeEndpoint | string, credentials: Credentials, parameters: ScavengeParameters): Promise<ScavengeStartOutcome> {
    const endpoint = endpointOf(target);
    const query = new URLSearchParams({ threshold: String(parameters.threshold), throttlePercent: String(parameters.throttlePercent), threads: String(parameters.threads) });
    const response = await this.#request(endpoint, `/admin/scavenge?${query.toString()}`, 'POST', { ...authorizationHeader(credentials), accept: 'application/json' });
    if (response.status === 200) {
      const id = scavengeIdOf(response.text);
      if (id !== undefined) return { kind: 'started', scavengeId: id };
    }
    if (response.status === 400 && response.text.includes('already running')) {
      const current = await this.#request(endpoint, '/admin/scavenge/current', 'GET', { ...authorizationHeader(credentials), accept: 'application/json' });
      const id = current.status === 200 ? scavengeIdOf(current.text) : undefined;
      if (id !== undefined) return { kind: 'started', scavengeId: id };
    }
    if (response.status === 404 || response.status === 405) return { kind: 'unsupported' };
    return { kind: 'refused', statusCode: response.status, message: response.text.slice(0, 500) };
  }

  /** GET /admin/scavenge/{id}: InProgress, the recorded result, or NotFound (a restarted node lost the run). */
  async scavengeState(target: NodeEndpoint | string, credentials: Credentials, scavengeId: string): Promise<ScavengeRunState> {
    const endpoint = endpointOf(target);
    const path = `/admin/scavenge/${encodeURIComponent(scavengeId)}`;
    const response = await this.#request(endpoint, path, 'GET', { ...authorizationHeader(credentials), accept: 'application/json' });
    if (response.status === 404) return 'NotFound';
    if (response.status !== 200) throw new NodeClientError(`GET ${path} on ${endpoint.baseUrl}: ${response.status}`, { statusCode: response.status });
    let result: unknown;
    try {
      result = (JSON.parse(response.text) as { scavengeResult?: unknown }).scavengeResult;
    } catch (err: unknown) {
      throw new NodeClientError(`GET ${path} on ${endpoint.baseUrl}: not JSON`, { cause: err });
    }
    return typeof result === 'string' && RUN_STATES.has(result) ? (result as ScavengeRunState) : 'Unknown';
  }

  /** DELETE /admin/scavenge/{id}: the node answers once the run stopped; 404 (already over) is done too. */
  async stopScavenge(target: NodeEndpoint | string, credentials: Credentials, scavengeId: string, timeoutMs = 60_000): Promise<CommandOutcome> {
    const endpoint = endpointOf(target);
    const path = `/admin/scavenge/${encodeURIComponent(scavengeId)}`;
    const response = await this.#request(endpoint, path, 'DELETE', authorizationHeader(credentials), timeoutMs);
    if ((response.status >= 200 && response.status < 300) || response.status === 404) return { kind: 'done' };
    if (response.status === 405) return { kind: 'unsupported' };
    return { kind: 'refused', statusCode: response.status, message: response.text.slice(0, 500) };
  }

  /** GET /auto-scavenge/enabled: whether the node runs its own (licensed) cluster scavenges; false when the route is absent. */
  async autoScavengeEnabled(target: NodeEndpoint | string, credentials: Credentials): Promise<boolean> {
    const endpoint = endpointOf(target);
    const response = await this.#request(endpoint, '/auto-scavenge/enabled', 'GET', { ...authorizationHeader(credentials), accept: 'application/json' });
    if (response.status === 404) return false;
    if (response.status !== 200) throw new NodeClientError(`GET /auto-scavenge/enabled on ${endpoint.baseUrl}: ${response.status}`, { statusCode: response.status });
    try {
      return (JSON.parse(response.text) as { enabled?: unknown }).enabled === true;
    } catch (err: unknown) {
      throw new NodeClientError(`GET /auto-scavenge/enabled on ${endpoint.baseUrl}: not JSON`, { cause: err });
    }
  }

  async #command(endpoint: NodeEndpoint, path: string, credentials: Credentials): Promise<CommandOutcome> {
    const authorization = `Basic ${Buffer.from(`${credentials.username}:${credentials.password}`).toString('base64')}`;
    const response = await this.#request(endpoint, path, 'POST', { authorization });
    if (response.status >= 200 && response.status < 300) return { kind: 'done' };
    if (response.status === 404 || response.status === 405) return { kind: 'unsupported' };
    return { kind: 'refused', statusCode: response.status, message: response.text.slice(0, 500) };
  }

  async #getJson<T>(endpoint: NodeEndpoint, path: string, schema: z.ZodType<T>): Promise<{ body: T; certificateFingerprint?: string }> {
    const response = await this.#request(endpoint, path, 'GET', { accept: 'application/json' });
    const where = `GET ${path} on ${endpoint.baseUrl}`;
    if (response.status < 200 || response.status >= 300) throw new NodeClientError(`${where}: ${response.status}`, { statusCode: response.status });
    let body: unknown;
    try {
      body = JSON.parse(response.text);
    } catch (err: unknown) {
      throw new NodeClientError(`${where}: not JSON`, { cause: err });
    }
    const parsed = schema.safeParse(body);
    if (!parsed.success) throw new NodeClientError(`${where}: unexpected answer: ${parsed.error.message}`);
    return response.certificateFingerprint === undefined ? { body: parsed.data } : { body: parsed.data, certificateFingerprint: response.certificateFingerprint };
  }

  async #request(endpoint: NodeEndpoint, path: string, method: NodeRequest['method'], headers: Record<string, string>, timeoutMs = this.#timeoutMs): Promise<NodeResponse> {
    try {
      return await this.#transport({ url: new URL(path, endpoint.baseUrl), method, headers, tls: endpoint.tls, timeoutMs });
    } catch (err: unknown) {
      const refused = isTlsRefusal(err);
      const as = endpoint.tls === undefined ? '' : ` (as ${endpoint.tls.serverName})`;
      throw new NodeClientError(
        `${method} ${path} on ${endpoint.baseUrl}${as}: ${refused ? 'node certificate refused: ' : ''}${(err as Error).message}`,
        { cause: err, code: refused ? 'EDBOP_NODE_TLS_REFUSED' : 'EDBOP_NODE_UNREACHABLE' },
      );
    }
  }
}

function authorizationHeader(credentials: Credentials): Record<string, string> {
  return { authorization: `Basic ${Buffer.from(`${credentials.username}:${credentials.password}`).toString('base64')}` };
}

function scavengeIdOf(text: string): string | undefined {
  try {
    const id = (JSON.parse(text) as { scavengeId?: unknown }).scavengeId;
    return typeof id === 'string' && id !== '' ? id : undefined;
  } catch {
    return undefined;
  }
}
