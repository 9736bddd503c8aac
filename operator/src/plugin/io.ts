/**
 * The plugin's I/O, behind small interfaces: the Kubernetes API of the user's kubeconfig
 * (context and namespace as kubectl picks them), pod logs, and the nodes' HTTP API.
 *
 * Nodes are reached through port-forwards over the apiserver (pods/portforward), as the operator
 * does when it runs outside the cluster, not through the apiserver's service or pods proxy: the
 * apiserver drops the Authorization header of a request it authenticated, so the admin and ops
 * credentials that /stats, reads, appends and resign need would never reach the node. The
 * forward carries bytes only: TLS runs end to end, and the node's certificate is checked against
 * the cluster's CA under the pod's DNS name, exactly as the operator checks it.
 */
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import https from 'node:https';
import { Writable } from 'node:stream';
import { KubeConfig, Log } from '@kubernetes/client-node';
import { pino } from 'pino';
import { LABEL_CLUSTER } from '../api/group.js';
import { nodeTrustCertificates } from '../controllers/eventdbcluster/children.js';
import { nodeEndpoint, observeMembers, podView, type ClusterTrust, type PodView } from '../controllers/eventdbcluster/observe.js';
import type { NodeAccess } from '../node-client/node-access.js';
import { NodeClient, nodeTlsOptions, type Credentials, type NodeEndpoint } from '../node-client/node-client.js';
import { effectiveSpec, type EffectiveSpec } from '../resources/effective-spec.js';
import { decodeSecretValue } from '../resources/secrets.js';
import { ClientNodeKubeApi } from '../runtime/client-node-kube-api.js';
import type { KubeApi, KubeObject } from '../runtime/kube-api.js';
import { PortForwardAccess } from '../runtime/port-forward-access.js';
import { EVENTDB_CLUSTERS, PODS, SECRETS } from '../runtime/resource-types.js';
import type { LiveMember } from './status-view.js';

/** The plugin's own failures (exit code 1), with a stable code. */
export class PluginError extends Error {
  readonly code: string;
  constructor(code: string, message: string) {
    super(message);
    this.name = 'PluginError';
    this.code = code;
  }
}

export interface NodeAnswer {
  readonly status: number;
  readonly text: string;
  readonly headers: http.IncomingHttpHeaders;
}

export interface PluginIo {
  readonly namespace: string;
  readonly api: KubeApi;
  readonly kubeConfig: KubeConfig;
  /** A container's log with the kubelet's timestamps. */
  podLog(pod: string, container: string, options: { tailLines?: number; sinceSeconds?: number; previous?: boolean }): Promise<string>;
  /** Follows a container's log; each complete line goes to onLine. Resolves when it stops. */
  followLog(pod: string, container: string, options: { tailLines?: number; sinceSeconds?: number; sinceTime?: string }, onLine: (line: string) => void, signal: AbortSignal): Promise<void>;
  /** How nodes are dialled: port-forwards through the apiserver. */
  nodeAccess(): NodeAccess;
  close(): Promise<void>;
}

export function connect(options: { context: string | undefined; namespace: string | undefined }): PluginIo {
  const config = new KubeConfig();
  config.loadFromDefault();
  if (options.context !== undefined) {
    if (config.getContextObject(options.context) === null) throw new PluginError('EDBPLUGIN_CONTEXT', `no context '${options.context}' in the kubeconfig (contexts: ${config.getContexts().map((context) => context.name).join(', ') || 'none'})`);
    config.setCurrentContext(options.context);
  }
  const api = new ClientNodeKubeApi(config);
  const namespace = options.namespace ?? api.currentNamespace() ?? 'default';
  const logs = new Log(config);
  const collect = async (pod: string, container: string, logOptions: Record<string, unknown>): Promise<string> => {
    const chunks: Buffer[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _encoding, callback) {
        chunks.push(Buffer.from(chunk));
        callback();
      },
    });
    await new Promise<void>((resolve, reject) => {
      sink.on('finish', resolve);
      logs.log(namespace, pod, container, sink, { ...logOptions, timestamps: true, follow: false }).catch(reject);
      // A non-following log ends the stream; guard against a request that never ends it.
      setTimeout(() => resolve(), 60_000).unref();
    });
    return Buffer.concat(chunks).toString('utf8');
  };
  return {
    namespace,
    api,
    kubeConfig: config,
    podLog: (pod, container, logOptions) => collect(pod, container, { ...logOptions }),
    async followLog(pod, container, logOptions, onLine, signal) {
      let rest = '';
      const sink = new Writable({
        write(chunk: Buffer, _encoding, callback) {
          const lines = (rest + chunk.toString('utf8')).split('\n');
          rest = lines.pop() ?? '';
          for (const line of lines) onLine(line);
          callback();
        },
      });
      const controller = await logs.log(namespace, pod, container, sink, { ...logOptions, timestamps: true, follow: true });
      await new Promise<void>((resolve) => {
        const stop = (): void => {
          controller.abort();
          resolve();
        };
        if (signal.aborted) stop();
        signal.addEventListener('abort', stop, { once: true });
        sink.on('finish', resolve);
        sink.on('close', resolve);
      });
    },
    nodeAccess: () => new PortForwardAccess(config, pino({ level: 'silent' })),
    async close() {},
  };
}

export interface ClusterHandle {
  readonly cluster: KubeObject;
  readonly spec: EffectiveSpec;
  readonly pods: PodView[];
}

/** The cluster, its effective spec and its pods; PluginError EDBPLUGIN_NOT_FOUND when it does not exist. */
export async function loadCluster(io: PluginIo, name: string): Promise<ClusterHandle> {
  const cluster = await io.api.get(EVENTDB_CLUSTERS, io.namespace, name);
  if (cluster === undefined) throw new PluginError('EDBPLUGIN_NOT_FOUND', `no EventDBCluster ${name} in namespace ${io.namespace}`);
  const checked = effectiveSpec(name, cluster['spec'], { nodeImage: '', dataSize: '10Gi' });
  if (!checked.ok) throw new PluginError('EDBPLUGIN_INVALID_SPEC', `EventDBCluster ${name} has an invalid spec: ${checked.issues.join('; ')}`);
  const pods = (await io.api.list(PODS, { namespace: io.namespace, labelSelector: `${LABEL_CLUSTER}=${name}` })).items
    .map((pod) => podView(name, pod))
    .filter((pod): pod is PodView => pod !== undefined);
  return { cluster, spec: checked.spec, pods };
}

/** The nodes of one cluster over port-forwards, https verified with the cluster's CA. */
export class ClusterNodes {
  readonly #io: PluginIo;
  readonly #handle: ClusterHandle;
  readonly #access: NodeAccess;
  readonly #client = new NodeClient({ timeoutMs: 8000 });
  #trust: Promise<ClusterTrust> | undefined;

  constructor(io: PluginIo, handle: ClusterHandle) {
    this.#io = io;
    this.#handle = handle;
    this.#access = io.nodeAccess();
  }

  trust(): Promise<ClusterTrust> {
    const identity = { name: this.#handle.cluster.metadata.name ?? '', namespace: this.#io.namespace, uid: this.#handle.cluster.metadata.uid ?? '' };
    this.#trust ??= nodeTrustCertificates(this.#io.api, identity, this.#handle.spec).catch((err: unknown) => ({ problem: `cannot read the cluster's CA: ${(err as Error).message}` }));
    return this.#trust;
  }

  /** Each running node's own view of itself (role, checkpoints, epoch); Unreachable when it did not answer. */
  async members(): Promise<Map<string, LiveMember>> {
    return observeMembers({ cluster: this.#handle.cluster.metadata.name ?? '', namespace: this.#io.namespace, pods: this.#handle.pods, client: this.#client, access: this.#access, trust: () => this.trust() });
  }

  async endpoint(pod: PodView): Promise<NodeEndpoint> {
    const trust = pod.servesTls ? await this.trust() : undefined;
    const target = await nodeEndpoint({ cluster: this.#handle.cluster.metadata.name ?? '', namespace: this.#io.namespace, pod, access: this.#access, trust });
    if (target === undefined) throw new PluginError('EDBPLUGIN_NODE_UNREACHABLE', `pod ${pod.name} has no address yet`);
    if ('problem' in target) throw new PluginError('EDBPLUGIN_NODE_TLS', `cannot verify ${pod.name}: ${target.problem}`);
    return target;
  }

  /** One HTTP request to a node (body optional), over the port-forward. */
  async request(pod: PodView, path: string, options: { method?: 'GET' | 'POST' | 'DELETE'; headers?: Record<string, string>; body?: string; credentials?: Credentials; timeoutMs?: number } = {}): Promise<NodeAnswer> {
    const endpoint = await this.endpoint(pod);
    const url = new URL(path, endpoint.baseUrl);
    const headers: Record<string, string> = { ...(options.headers ?? {}) };
    if (options.credentials !== undefined) headers['authorization'] = `Basic ${Buffer.from(`${options.credentials.username}:${options.credentials.password}`).toString('base64')}`;
    if (options.body !== undefined) headers['content-length'] = String(Buffer.byteLength(options.body));
    const secure = url.protocol === 'https:';
    const timeoutMs = options.timeoutMs ?? 15_000;
    return new Promise<NodeAnswer>((resolve, reject) => {
      const req = (secure ? https : http).request(url, { method: options.method ?? 'GET', headers, agent: false, ...(secure && endpoint.tls !== undefined ? nodeTlsOptions(endpoint.tls) : {}) }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('error', reject);
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8'), headers: res.headers }));
      });
      const timer = setTimeout(() => req.destroy(new Error(`no answer from ${pod.name} within ${timeoutMs} ms`)), timeoutMs);
      req.on('close', () => clearTimeout(timer));
      req.on('error', (err) => reject(new PluginError('EDBPLUGIN_NODE_UNREACHABLE', `${options.method ?? 'GET'} ${path} on ${pod.name}: ${err.message}`)));
      req.end(options.body);
    });
  }

  async resign(pod: PodView, credentials: Credentials): Promise<void> {
    const outcome = await this.#client.resign(await this.endpoint(pod), credentials);
    if (outcome.kind !== 'done') throw new PluginError('EDBPLUGIN_RESIGN', `${pod.name} did not resign: ${outcome.kind === 'refused' ? `${outcome.statusCode} ${outcome.message}` : 'the node has no resign endpoint'}`);
  }

  async close(): Promise<void> {
    await this.#access.close();
  }
}

/** The admin or ops user's credentials from the cluster's Secret (spec.users, else <cluster>-admin / <cluster>-ops). */
export async function credentialsOf(io: PluginIo, handle: ClusterHandle, user: 'admin' | 'ops'): Promise<Credentials> {
  const ref = handle.spec.users[user];
  const secret = await io.api.get(SECRETS, io.namespace, ref.name);
  if (secret === undefined) throw new PluginError('EDBPLUGIN_NO_CREDENTIALS', `Secret ${ref.name} (the ${user} password) not found in ${io.namespace}`);
  const password = decodeSecretValue(secret, ref.key);
  if (password === undefined) throw new PluginError('EDBPLUGIN_NO_CREDENTIALS', `Secret ${ref.name} has no key ${ref.key}`);
  return { username: decodeSecretValue(secret, 'username') ?? user, password };
}

export const newEventId = (): string => randomUUID();
