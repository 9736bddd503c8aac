/**
 * Cluster-facing endpoints of a single node: `GET /gossip` (this member, alive, with its
 * checkpoints, in EventStoreDB's ClientClusterInfo shape), `POST /gossip` (accepted and answered
 * with our view; there are no peers to merge), `GET /ping` and `GET /health/live`.
 * All are anonymous, as in EventStoreDB.
 */
import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';

import type { FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';

import type { EventDb } from '../../storage/event-db-types.js';
import { registerZodScope, type HostApp } from './zod-route-scope.js';
import { errorResponses } from '../openapi-responses.js';
import { GossipDocumentSchema, MemberInfoSchema, type GossipDocument } from '../../cluster/member-info.js';
import { ElectionMessageSchema } from '../../cluster/elections/messages.js';
import type { ElectionMessage } from '../../cluster/elections/elections.js';

/** What a cluster member exposes over HTTP (cluster/cluster-node.ts); absent for a node alone. */
export interface ClusterMembership {
  gossip(): GossipDocument;
  receiveGossip(document: GossipDocument): GossipDocument;
  receiveElectionMessage(message: ElectionMessage): void;
}

export interface ClusterRoutesDeps {
  readonly db: EventDb;
  readonly membership?: ClusterMembership;
  /** Version reported as `esVersion`. */
  readonly version: string;
  /** Address advertised to clients; default the address the server listens on. */
  readonly advertiseHost?: string;
  readonly advertisePort?: number;
  /** EventStoreDB node state name. Default 'Leader'. */
  readonly nodeState?: () => string;
  /** False while starting or shutting down: /health/live answers 503. Default always ready. */
  readonly isReady?: () => boolean;
  readonly nowMs?: () => number;
}

export const GossipMemberSchema = MemberInfoSchema;


export const GossipSchema = z.object({
  members: z.array(GossipMemberSchema),
  serverIp: z.string(),
  serverPort: z.number(),
});

const PingSchema = z.object({ text: z.string() });
const LiveQuerySchema = z.object({
  // Only final status codes: an informational (1xx) answer would leave the request hanging.
  liveCode: z.coerce.number().int().min(200).max(599).optional(),
});
const PING_TEXT = 'Ping request successfully handled';
const ZERO_GUID = '00000000-0000-0000-0000-000000000000';

export function registerClusterRoutes(app: HostApp, deps: ClusterRoutesDeps): void {
  const instanceId = randomUUID();
  const { membership } = deps;
  const gossip = (): z.infer<typeof GossipSchema> => membership?.gossip() ?? buildGossip(app, deps, instanceId);
  registerZodScope(app, (scope) => {
    scope.get(
      '/gossip',
      { schema: { tags: ['cluster'], response: { 200: GossipSchema } } },
      async () => gossip(),
    );
    scope.post(
      '/gossip',
      {
        schema: {
          tags: ['cluster'],
          summary: 'Node-to-node gossip: merges the sender\'s view and answers with this node\'s',
          body: z.unknown().optional(),
          response: { 200: GossipSchema },
        },
      },
      async (req) => {
        if (membership === undefined) return gossip();
        const parsed = GossipDocumentSchema.safeParse(req.body);
        return parsed.success ? membership.receiveGossip(parsed.data) : gossip();
      },
    );
    scope.post(
      '/elections',
      {
        schema: { tags: ['cluster'], summary: 'Node-to-node election messages', body: ElectionMessageSchema },
        config: { responses: { 202: { description: 'Taken' }, ...errorResponses(400, 404) } },
      },
      async (req, reply) => {
        if (membership === undefined) return reply.code(404).type('text/plain; charset=utf-8').send('this node runs alone');
        membership.receiveElectionMessage(req.body);
        return reply.code(202).send();
      },
    );
    scope.get(
      '/ping',
      { schema: { tags: ['cluster'], response: { 200: PingSchema } } },
      async (req, reply) => sendPing(req, reply),
    );
    scope.route({
      method: ['GET', 'HEAD'],
      url: '/health/live',
      schema: { tags: ['cluster'], querystring: LiveQuerySchema },
      config: {
        responses: {
          204: { description: 'Live (or the status asked for by liveCode, 200-599)' },
          503: { description: 'Not ready yet' },
          ...errorResponses(400),
        },
      },
      handler: async (req, reply) => {
        const ready = deps.isReady?.() ?? true;
        return reply.code(ready ? (req.query.liveCode ?? 204) : 503).send();
      },
    });
    scope.route({
      method: ['POST', 'PUT', 'DELETE', 'PATCH'],
      url: '/health/live',
      schema: { hide: true },
      handler: async (_req, reply) => reply.code(405).header('allow', 'GET, HEAD').send(),
    });
  });
}

function sendPing(req: FastifyRequest, reply: FastifyReply): FastifyReply | { text: string } {
  const accept = req.headers.accept ?? '';
  if (/text\/plain/.test(accept) && !/json/.test(accept)) {
    return reply.type('text/plain; charset=utf-8').send(`Text: ${PING_TEXT}`);
  }
  if (/(text|application)\/xml/.test(accept) && !/json/.test(accept)) {
    return reply
      .type('text/xml; charset=utf-8')
      .send(`<?xml version="1.0" encoding="utf-8"?><text>${PING_TEXT}</text>`);
  }
  return { text: PING_TEXT };
}

function buildGossip(
  app: HostApp,
  deps: ClusterRoutesDeps,
  instanceId: string,
): z.infer<typeof GossipSchema> {
  const listening = app.server.address() as AddressInfo | string | null;
  const boundIp =
    typeof listening === 'object' && listening !== null ? listening.address : '127.0.0.1';
  const boundPort = typeof listening === 'object' && listening !== null ? listening.port : 0;
  const ip = deps.advertiseHost ?? boundIp;
  const port = deps.advertisePort ?? boundPort;
  const stats = deps.db.stats();
  const member = {
    instanceId,
    timeStamp: new Date(deps.nowMs?.() ?? Date.now()).toISOString(),
    state: deps.nodeState?.() ?? 'Leader',
    isAlive: true,
    internalTcpIp: ip,
    internalTcpPort: 0,
    internalSecureTcpPort: 0,
    externalTcpIp: ip,
    externalTcpPort: 0,
    externalSecureTcpPort: 0,
    internalHttpEndPointIp: ip,
    internalHttpEndPointPort: port,
    httpEndPointIp: ip,
    httpEndPointPort: port,
    lastCommitPosition: stats.chaserCheckpoint,
    writerCheckpoint: stats.writerCheckpoint,
    chaserCheckpoint: stats.chaserCheckpoint,
    epochPosition: 0,
    epochNumber: 0,
    epochId: ZERO_GUID,
    nodePriority: 0,
    isReadOnlyReplica: false,
    esVersion: deps.version,
  };
  return { members: [member], serverIp: ip, serverPort: port };
}
