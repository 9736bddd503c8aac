/**
 * KubeApi over @kubernetes/client-node: its KubeConfig loads the configuration (kubeconfig file
 * or in-cluster service account) and authenticates every request, its Watch streams changes.
 * Requests are sent as plain JSON over node:https rather than through the generated API
 * classes, whose ObjectSerializer drops fields newer than the client and cannot send
 * server-side apply bodies of custom resources.
 *
 * The only runtime importer of @kubernetes/client-node besides nothing: everything else sees
 * the KubeApi port.
 */
import http from 'node:http';
import https from 'node:https';
import { KubeConfig, Watch } from '@kubernetes/client-node';
import { FIELD_MANAGER } from '../api/group.js';
import {
  KubeApiError,
  resourcePath,
  type DeleteOptions,
  type KubeApi,
  type KubeObject,
  type ListOptions,
  type ListResult,
  type PatchType,
  type ResourceType,
  type WatchEventType,
  type WatchHandle,
  type WatchOptions,
} from './kube-api.js';

const REQUEST_TIMEOUT_MS = 30_000;
const RESPONSE_BYTES_MAX = 64 * 1024 * 1024;

const PATCH_CONTENT_TYPES: Record<PatchType | 'apply', string> = {
  merge: 'application/merge-patch+json',
  json: 'application/json-patch+json',
  apply: 'application/apply-patch+yaml',
};

interface RequestSpec {
  readonly method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  readonly path: string;
  readonly query?: Record<string, string | undefined>;
  readonly body?: unknown;
  readonly contentType?: string;
}

interface Response {
  readonly statusCode: number;
  readonly body: unknown;
}

export class ClientNodeKubeApi implements KubeApi {
  readonly #config: KubeConfig;
  readonly #watch: Watch;
  readonly #server: URL;
  #agent: http.Agent | undefined;

  constructor(config: KubeConfig) {
    const cluster = config.getCurrentCluster();
    if (cluster === null) throw new Error('the kubeconfig has no current cluster');
    this.#config = config;
    this.#watch = new Watch(config);
    this.#server = new URL(cluster.server);
  }

  /** From $KUBECONFIG, ~/.kube/config, or the pod's service account, as kubectl finds them. */
  static fromDefault(): ClientNodeKubeApi {
    const config = new KubeConfig();
    config.loadFromDefault();
    return new ClientNodeKubeApi(config);
  }

  /** The namespace of the pod this process runs in, or undefined outside a cluster. */
  currentNamespace(): string | undefined {
    const context = this.#config.getContextObject(this.#config.getCurrentContext());
    return context?.namespace ?? undefined;
  }

  async get(type: ResourceType, namespace: string | undefined, name: string): Promise<KubeObject | undefined> {
    const response = await this.#send({ method: 'GET', path: resourcePath(type, namespace, name) }, [404]);
    return response.statusCode === 404 ? undefined : (response.body as KubeObject);
  }

  async list(type: ResourceType, options: ListOptions = {}): Promise<ListResult> {
    const response = await this.#send({
      method: 'GET',
      path: resourcePath(type, options.namespace),
      query: { labelSelector: options.labelSelector, fieldSelector: options.fieldSelector },
    });
    const body = response.body as { items?: KubeObject[]; metadata?: { resourceVersion?: string } };
    const apiVersion = type.group === '' ? type.version : `${type.group}/${type.version}`;
    // List items come without apiVersion and kind; put them back so items are whole objects.
    const items = (body.items ?? []).map((item) => ({ ...item, apiVersion, kind: type.kind }));
    return { items, resourceVersion: body.metadata?.resourceVersion ?? '' };
  }

  async watch(
    type: ResourceType,
    options: WatchOptions,
    onEvent: (type: WatchEventType, object: KubeObject) => void,
    onDone: (err: unknown) => void,
  ): Promise<WatchHandle> {
    const query: Record<string, string | number | boolean | undefined> = {
      resourceVersion: options.resourceVersion,
      allowWatchBookmarks: true,
      timeoutSeconds: options.timeoutSeconds,
      labelSelector: options.labelSelector,
      fieldSelector: options.fieldSelector,
    };
    const controller = await this.#watch.watch(
      resourcePath(type, options.namespace),
      query,
      (eventType: string, object: KubeObject) => onEvent(eventType as WatchEventType, object),
      (err: unknown) => onDone(toKubeApiError(err)),
    );
    return { abort: () => controller.abort() };
  }

  async create(type: ResourceType, object: KubeObject): Promise<KubeObject> {
    const response = await this.#send({
      method: 'POST',
      path: resourcePath(type, object.metadata.namespace),
      query: { fieldManager: FIELD_MANAGER },
      body: object,
    });
    return response.body as KubeObject;
  }

  async apply(
    type: ResourceType,
    object: KubeObject,
    options: { force?: boolean; subresource?: 'status' } = {},
  ): Promise<KubeObject> {
    const name = object.metadata.name ?? '';
    const path = resourcePath(type, object.metadata.namespace, name) + (options.subresource ? `/${options.subresource}` : '');
    const response = await this.#send({
      method: 'PATCH',
      path,
      query: { fieldManager: FIELD_MANAGER, force: String(options.force ?? true) },
      body: object,
      contentType: PATCH_CONTENT_TYPES.apply,
    });
    return response.body as KubeObject;
  }

  async patch(
    type: ResourceType,
    namespace: string | undefined,
    name: string,
    patch: unknown,
    options: { patchType?: PatchType; subresource?: 'status' } = {},
  ): Promise<KubeObject> {
    const path = resourcePath(type, namespace, name) + (options.subresource ? `/${options.subresource}` : '');
    const response = await this.#send({
      method: 'PATCH',
      path,
      query: { fieldManager: FIELD_MANAGER },
      body: patch,
      contentType: PATCH_CONTENT_TYPES[options.patchType ?? 'merge'],
    });
    return response.body as KubeObject;
  }

  async replace(type: ResourceType, object: KubeObject, options: { subresource?: 'status' } = {}): Promise<KubeObject> {
    const path = resourcePath(type, object.metadata.namespace, object.metadata.name) + (options.subresource ? `/${options.subresource}` : '');
    const response = await this.#send({ method: 'PUT', path, query: { fieldManager: FIELD_MANAGER }, body: object });
    return response.body as KubeObject;
  }

  async delete(type: ResourceType, namespace: string | undefined, name: string, options: DeleteOptions = {}): Promise<boolean> {
    const body: Record<string, unknown> = { apiVersion: 'v1', kind: 'DeleteOptions' };
    if (options.propagationPolicy !== undefined) body['propagationPolicy'] = options.propagationPolicy;
    if (options.uid !== undefined) body['preconditions'] = { uid: options.uid };
    if (options.gracePeriodSeconds !== undefined) body['gracePeriodSeconds'] = options.gracePeriodSeconds;
    const response = await this.#send({ method: 'DELETE', path: resourcePath(type, namespace, name), body }, [404]);
    return response.statusCode !== 404;
  }

  async #send(spec: RequestSpec, acceptedErrors: number[] = []): Promise<Response> {
    const options: https.RequestOptions = {};
    await this.#config.applyToHTTPSOptions(options);
    const url = new URL(spec.path, this.#server);
    for (const [key, value] of Object.entries(spec.query ?? {})) if (value !== undefined) url.searchParams.set(key, value);
    const payload = spec.body === undefined ? undefined : Buffer.from(JSON.stringify(spec.body));
    const headers: http.OutgoingHttpHeaders = { ...(options.headers as http.OutgoingHttpHeaders | undefined), accept: 'application/json' };
    if (payload !== undefined) {
      headers['content-type'] = spec.contentType ?? 'application/json';
      headers['content-length'] = payload.length;
    }
    if (typeof options.auth === 'string') headers['authorization'] = `Basic ${Buffer.from(options.auth).toString('base64')}`;
    const response = await this.#roundTrip(url, spec.method, headers, payload, options);
    if (response.statusCode >= 200 && response.statusCode < 300) return response;
    if (acceptedErrors.includes(response.statusCode)) return response;
    throw statusError(response, `${spec.method} ${spec.path}`);
  }

  #roundTrip(
    url: URL,
    method: string,
    headers: http.OutgoingHttpHeaders,
    payload: Buffer | undefined,
    tls: https.RequestOptions,
  ): Promise<Response> {
    const secure = url.protocol === 'https:';
    this.#agent ??= secure
      ? new https.Agent({
          keepAlive: true,
          ca: tls.ca,
          cert: tls.cert,
          key: tls.key,
          rejectUnauthorized: tls.rejectUnauthorized,
          servername: tls.servername,
        })
      : new http.Agent({ keepAlive: true });
    const transport = secure ? https : http;
    return new Promise((resolve, reject) => {
      const request = transport.request(url, { method, headers, agent: this.#agent, timeout: REQUEST_TIMEOUT_MS }, (res) => {
        const chunks: Buffer[] = [];
        let sizeBytes = 0;
        res.on('data', (chunk: Buffer) => {
          sizeBytes += chunk.length;
          if (sizeBytes > RESPONSE_BYTES_MAX) res.destroy(new Error(`response of ${method} ${url.pathname} too large`));
          else chunks.push(chunk);
        });
        res.on('error', reject);
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let body: unknown = text;
          try {
            body = text === '' ? undefined : JSON.parse(text);
          } catch {
            // Not JSON (a proxy's error page): keep the text for the error message.
          }
          resolve({ statusCode: res.statusCode ?? 0, body });
        });
      });
      request.on('timeout', () => request.destroy(new Error(`${method} ${url.pathname}: no answer in ${REQUEST_TIMEOUT_MS} ms`)));
      request.on('error', reject);
      request.end(payload);
    });
  }
}

function statusError(response: Response, what: string): KubeApiError {
  const status = (typeof response.body === 'object' && response.body !== null ? response.body : {}) as {
    reason?: string;
    message?: string;
  };
  const message = status.message ?? (typeof response.body === 'string' ? response.body.slice(0, 500) : '');
  return new KubeApiError(response.statusCode, status.reason ?? 'Unknown', `${what}: ${response.statusCode} ${message}`);
}

function toKubeApiError(err: unknown): unknown {
  if (err === null || err === undefined) return undefined;
  const statusCode = (err as { statusCode?: unknown }).statusCode;
  if (typeof statusCode === 'number') {
    return new KubeApiError(statusCode, 'WatchFailed', `watch: ${statusCode} ${(err as Error).message}`);
  }
  return err;
}
