/**
 * Admin commands: `POST /admin/shutdown` (answers 200, then asks the composition root to shut
 * down), `POST /admin/mergeindexes` (starts an index merge and answers with its id), and on a
 * cluster member `POST /admin/node/resign` (the leader steps down) and
 * `POST /admin/node/priority/{n}`. All need `$admins` or `$ops`; anyone else gets 401.
 */
import { randomUUID } from 'node:crypto';

import type { FastifyReply } from 'fastify';
import type { Logger } from 'pino';
import { z } from 'zod';

import type { Authorizer } from '../auth-types.js';
import type { EventDb } from '../../storage/event-db-types.js';
import { authorizeRequest } from '../security/http-auth.js';
import { registerZodScope, type HostApp } from './zod-route-scope.js';
import { errorResponses } from '../openapi-responses.js';

export interface AdminRoutesDeps {
  readonly security: Authorizer;
  readonly db: EventDb;
  readonly log: Logger;
  /** Starts a graceful shutdown; called once the 200 has been written. */
  readonly requestShutdown: () => void;
  /** Leadership commands of a cluster member; absent for a node alone. */
  readonly node?: {
    resign(): { readonly accepted: boolean; readonly message: string };
    setPriority(priority: number): void;
  };
}

const PriorityParamsSchema = z.object({
  priority: z.coerce.number().int().min(-2_147_483_648).max(2_147_483_647),
});

export const MergeIndexesResponseSchema = z.object({ mergeIndexesId: z.string() });

export function registerAdminRoutes(app: HostApp, deps: AdminRoutesDeps): void {
  registerZodScope(app, (scope) => {
    const shutdownResponses = { 200: { description: 'Shutting down (empty body)' }, ...errorResponses(401) };
    scope.post('/admin/shutdown', { schema: { tags: ['admin'] }, config: { responses: shutdownResponses } }, async (req, reply) => {
      const decision = await authorizeRequest(deps.security, req, reply, 'ops-or-admins');
      if (!decision.allowed) return reply;
      deps.log.info({ login: decision.principal?.login }, 'shutdown requested over HTTP');
      // Shut down only after the answer is on the wire, so the client sees its 200.
      reply.raw.once('finish', () => deps.requestShutdown());
      return reply.code(200).type('text/plain; charset=utf-8').send('');
    });
    scope.post(
      '/admin/mergeindexes',
      {
        schema: { tags: ['admin'], response: { 200: MergeIndexesResponseSchema } },
        config: { responses: { 200: { description: 'Merge started', mediaTypes: ['application/json'] }, ...errorResponses(401) } },
      },
      async (req, reply) => {
        const decision = await authorizeRequest(deps.security, req, reply, 'ops-or-admins');
        if (!decision.allowed) return reply;
        const mergeIndexesId = randomUUID();
        const log = deps.log.child({ mergeIndexesId });
        log.info({ login: decision.principal?.login }, 'index merge requested');
        deps.db.mergeIndexes().then(
          () => log.info('index merge completed'),
          (err: unknown) => log.error({ err }, 'index merge failed'),
        );
        return { mergeIndexesId };
      },
    );
    const text = (reply: FastifyReply, status: number, body: string): FastifyReply =>
      reply.code(status).type('text/plain; charset=utf-8').send(body);
    scope.post(
      '/admin/node/resign',
      {
        schema: { tags: ['admin'], summary: 'The leader steps down; an election prefers another node' },
        config: { responses: { 200: { description: 'Resigning' }, ...errorResponses(400, 401) } },
      },
      async (req, reply) => {
        const decision = await authorizeRequest(deps.security, req, reply, 'ops-or-admins');
        if (!decision.allowed) return reply;
        if (deps.node === undefined) return text(reply, 400, 'This node runs alone: there is no other node to hand leadership to.');
        const result = deps.node.resign();
        deps.log.info({ login: decision.principal?.login, ...result }, 'resignation requested over HTTP');
        return result.accepted ? text(reply, 200, '') : text(reply, 400, `Cannot resign: ${result.message}.`);
      },
    );
    scope.post(
      '/admin/node/priority/:priority',
      {
        schema: { tags: ['admin'], summary: 'Sets this node\'s election priority (gossiped; not persisted)', params: PriorityParamsSchema },
        config: { responses: { 200: { description: 'Set' }, ...errorResponses(400, 401) } },
      },
      async (req, reply) => {
        const decision = await authorizeRequest(deps.security, req, reply, 'ops-or-admins');
        if (!decision.allowed) return reply;
        deps.node?.setPriority(req.params.priority);
        deps.log.info({ login: decision.principal?.login, nodePriority: req.params.priority }, 'node priority set over HTTP');
        return text(reply, 200, '');
      },
    );
  });
}
