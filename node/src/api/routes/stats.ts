/**
 * `GET /stats` and `GET /stats/{statPath}`: the node's statistics as JSON (default) or XML
 * (root `Stats`, chosen by `?format=xml` or an Accept header preferring XML). Groups are `proc`,
 * `sys` and `svc`. A sub-path must name a group: a leaf or an unknown name is 404.
 * `?group=false` returns the flat `proc-cpu` style dictionary (only without a sub-path).
 * Needs an authenticated user, as in EventStoreDB.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';

import type { Authorizer } from '../auth-types.js';
import type { EventDb } from '../../storage/event-db-types.js';
import { authorizeRequest } from '../security/http-auth.js';
import { StatsSampler, type StatsTree, type StatsValue } from './stats-sampler.js';
import { registerZodScope, type HostApp } from './zod-route-scope.js';
import { errorResponses } from '../openapi-responses.js';

const STATS_RESPONSES = {
  200: { description: 'Statistics, grouped', mediaTypes: ['application/json', 'text/xml'] },
};

export interface StatsRoutesDeps {
  readonly security: Authorizer;
  readonly db: EventDb;
  /** The data directory; its drive is reported under sys.drive. */
  readonly dataPath?: string;
  /** A cluster member's replication group. */
  readonly replication?: () => StatsTree;
}

const StatsQuerySchema = z.object({
  format: z.enum(['json', 'xml']).optional(),
  group: z.enum(['true', 'false']).optional(),
});
const StatsPathParamsSchema = z.object({ '*': z.string().max(1024) });
const StatsTreeSchema = z
  .record(z.string(), z.unknown())
  .describe('Statistics groups proc, sys, svc');

export function registerStatsRoutes(app: HostApp, deps: StatsRoutesDeps): void {
  const sampler = new StatsSampler({
    db: deps.db,
    server: app.server,
    ...(deps.dataPath === undefined ? {} : { dataPath: deps.dataPath }),
    ...(deps.replication === undefined ? {} : { replication: deps.replication }),
  });
  app.addHook('onClose', async () => sampler.close());
  // Counting and timing come from the HTTP server's own request/finish events (they also see
  // requests fastify never routes); this hook only names each request by its route pattern.
  app.addHook('onRequest', (request, _reply, done) => {
    sampler.labelRequest(request.raw, request.method, request.routeOptions.url);
    done();
  });
  registerZodScope(app, (scope) => {
    scope.get(
      '/stats',
      {
        schema: {
          tags: ['stats'],
          querystring: StatsQuerySchema,
          response: { 200: StatsTreeSchema },
        },
        config: { responses: { ...STATS_RESPONSES, ...errorResponses(401) } },
      },
      async (req, reply) => {
        if (!(await authorizeRequest(deps.security, req, reply, 'authenticated')).allowed)
          return reply;
        const tree = await sampler.sample();
        return sendStats(req, reply, req.query.group === 'false' ? flatten(tree) : tree);
      },
    );
    scope.get(
      '/stats/*',
      {
        schema: {
          tags: ['stats'],
          params: StatsPathParamsSchema,
          querystring: StatsQuerySchema,
          response: { 200: StatsTreeSchema },
        },
        config: {
          responses: {
            ...STATS_RESPONSES,
            ...errorResponses(400, 401),
            404: { description: 'The path does not end on a group of statistics (empty body)' },
          },
        },
      },
      async (req, reply) => {
        if (!(await authorizeRequest(deps.security, req, reply, 'authenticated')).allowed)
          return reply;
        if (req.query.group === 'false') {
          return sendPlain(reply, 400, 'Dynamic stats selection works only with grouping enabled');
        }
        const group = selectGroup(await sampler.sample(), req.params['*']);
        if (group === undefined) return sendPlain(reply, 404, '');
        return sendStats(req, reply, group);
      },
    );
  });
}

/** Walks `path` (`proc/gc`, case-insensitive); undefined unless it ends on a group. */
export function selectGroup(tree: StatsTree, path: string): StatsTree | undefined {
  const segments = path.split('/').filter((s) => s !== '');
  if (segments[0]?.toLowerCase() === 'stats') segments.shift();
  let node: StatsValue = tree;
  for (const segment of segments) {
    if (!isGroup(node)) return undefined;
    const group: StatsTree = node;
    const key = Object.keys(group).find((k) => k.toLowerCase() === segment.toLowerCase());
    if (key === undefined) return undefined;
    node = group[key] ?? null;
  }
  return isGroup(node) ? node : undefined;
}

function sendPlain(reply: FastifyReply, status: number, text: string): FastifyReply {
  return reply.code(status).type('text/plain; charset=utf-8').send(text);
}

function isGroup(value: StatsValue | undefined): value is StatsTree {
  return typeof value === 'object' && value !== null;
}

function sendStats(
  req: FastifyRequest,
  reply: FastifyReply,
  tree: StatsTree,
): FastifyReply | StatsTree {
  void reply.header('cache-control', 'max-age=1, public').header('vary', 'Accept');
  if (!wantsXml(req)) return tree;
  return reply.type('text/xml; charset=utf-8').send(toXml(tree));
}

function wantsXml(req: FastifyRequest): boolean {
  const format = (req.query as { format?: string }).format;
  if (format !== undefined) return format === 'xml';
  const accepted = (req.headers.accept ?? '')
    .split(',')
    .map((part, index) => {
      const [type = '', ...params] = part.trim().toLowerCase().split(';');
      const q = Number(/q=([0-9.]+)/.exec(params.join(';'))?.[1] ?? '1');
      return { type: type.trim(), q: Number.isFinite(q) ? q : 0, index };
    })
    .filter((a) => a.q > 0)
    .sort((a, b) => b.q - a.q || a.index - b.index);
  for (const { type } of accepted) {
    if (type === 'application/json' || type === 'application/*' || type === '*/*') return false;
    if (type === 'text/xml' || type === 'application/xml' || type === 'text/*') return true;
  }
  return false;
}

/** `{ proc: { gc: { gen0Size: 1 } } }` -> `{ 'proc-gc-gen0Size': 1 }` */
function flatten(tree: StatsTree, prefix = '', out: StatsTree = {}): StatsTree {
  for (const [key, value] of Object.entries(tree)) {
    const name = prefix === '' ? key : `${prefix}-${key}`;
    if (isGroup(value)) flatten(value, name, out);
    else out[name] = value;
  }
  return out;
}

function toXml(tree: StatsTree): string {
  return `<?xml version="1.0" encoding="utf-8"?>\n<Stats>${toXmlElements(tree)}</Stats>`;
}

function toXmlElements(tree: StatsTree): string {
  return Object.entries(tree)
    .map(([key, value]) => {
      const name = xmlName(key);
      const inner = isGroup(value)
        ? toXmlElements(value)
        : escapeXml(value === null ? '' : String(value));
      return `<${name}>${inner}</${name}>`;
    })
    .join('');
}

/** XmlConvert.EncodeName: characters not allowed in a name become `_xHHHH_`. */
function xmlName(key: string): string {
  let name = '';
  for (const [index, ch] of [...key].entries()) {
    const allowed = index === 0 ? /[A-Za-z_]/.test(ch) : /[A-Za-z0-9_.-]/.test(ch);
    name += allowed
      ? ch
      : `_x${(ch.codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(4, '0')}_`;
  }
  return name === '' ? '_' : name;
}

function escapeXml(text: string): string {
  return text.replace(/[<>&"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
