/**
 * The operator's typed client of a node's HTTP API (the node's own routes, as EventStoreDB has
 * them): GET /gossip, GET /info, GET /health/live, POST /admin/node/resign,
 * POST /admin/reloadconfig. Answers are parsed with zod; every call has a timeout; a route the
 * node version does not have is reported as `unsupported`, not as a failure.
 *
 * How a node is reached (its pod IP from inside the cluster, a port-forward from outside) is
 * the caller's choice: methods take the node's base URL.
 */
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

export interface Credentials {
  readonly username: string;
  readonly password: string;
}

export type CommandOutcome = { readonly kind: 'done' } | { readonly kind: 'unsupported' } | { readonly kind: 'refused'; readonly statusCode: number; readonly message: string };

/** A node did not answer, or answered something the client cannot read. */
export class NodeClientError extends Error {
  readonly code = 'EDBOP_NODE_UNREACHABLE';
  readonly statusCode: number | undefined;

  constructor(message: string, options: { statusCode?: number; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'NodeClientError';
    this.statusCode = options.statusCode;
  }
}

export interface NodeClientOptions {
  /** Per request. Default 5 s. */
  readonly timeoutMs?: number;
  readonly fetch?: typeof fetch;
}

export class NodeClient {
  readonly #timeoutMs: number;
  readonly #fetch: typeof fetch;

  constructor(options: NodeClientOptions = {}) {
    this.#timeoutMs = options.timeoutMs ?? 5000;
    this.#fetch = options.fetch ?? fetch;
  }

  async gossip(baseUrl: string): Promise<Gossip> {
    return this.#getJson(baseUrl, '/gossip', Gossip);
  }

  async info(baseUrl: string): Promise<NodeInfo> {
    return this.#getJson(baseUrl, '/info', NodeInfo);
  }

  /** True when the node answers its liveness endpoint with 2xx. */
  async live(baseUrl: string): Promise<boolean> {
    try {
      const response = await this.#request(baseUrl, '/health/live', { method: 'GET' });
      await response.arrayBuffer();
      return response.ok;
    } catch {
      return false;
    }
  }

  /** Asks the leader to step down; a new election follows. */
  async resign(baseUrl: string, credentials: Credentials): Promise<CommandOutcome> {
    return this.#command(baseUrl, '/admin/node/resign', credentials);
  }

  /** Asks the node to reload its configuration and certificates. */
  async reloadConfig(baseUrl: string, credentials: Credentials): Promise<CommandOutcome> {
    return this.#command(baseUrl, '/admin/reloadconfig', credentials);
  }

  async #command(baseUrl: string, path: string, credentials: Credentials): Promise<CommandOutcome> {
    const authorization = `Basic ${Buffer.from(`${credentials.username}:${credentials.password}`).toString('base64')}`;
    const response = await this.#request(baseUrl, path, { method: 'POST', headers: { authorization } });
    const text = await response.text();
    if (response.ok) return { kind: 'done' };
    if (response.status === 404 || response.status === 405) return { kind: 'unsupported' };
    return { kind: 'refused', statusCode: response.status, message: text.slice(0, 500) };
  }

  async #getJson<T>(baseUrl: string, path: string, schema: z.ZodType<T>): Promise<T> {
    const response = await this.#request(baseUrl, path, { method: 'GET', headers: { accept: 'application/json' } });
    const text = await response.text();
    if (!response.ok) throw new NodeClientError(`GET ${path} on ${baseUrl}: ${response.status}`, { statusCode: response.status });
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch (err: unknown) {
      throw new NodeClientError(`GET ${path} on ${baseUrl}: not JSON`, { cause: err });
    }
    const parsed = schema.safeParse(body);
    if (!parsed.success) throw new NodeClientError(`GET ${path} on ${baseUrl}: unexpected answer: ${parsed.error.message}`);
    return parsed.data;
  }

  async #request(baseUrl: string, path: string, init: RequestInit): Promise<Response> {
    try {
      return await this.#fetch(new URL(path, baseUrl), { ...init, signal: AbortSignal.timeout(this.#timeoutMs) });
    } catch (err: unknown) {
      throw new NodeClientError(`${init.method ?? 'GET'} ${path} on ${baseUrl}: ${(err as Error).message}`, { cause: err });
    }
  }
}
