/**
 * Admin commands: `POST /admin/shutdown` (answers 200, then asks the composition root to shut
 * down) and `POST /admin/mergeindexes` (starts an index merge and answers with its id). Both
 * need `$admins` or `$ops`; anyone else gets 401.
 */
import { randomUUID } from 'node:crypto';

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
}

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
  });
}
