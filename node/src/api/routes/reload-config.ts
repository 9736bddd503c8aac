/**
 * `POST /admin/reloadconfig` ($ops/$admins; anyone else 401): re-reads the configuration and
 * applies what can change live (log level, certificates, trusted roots, reserved node common
 * name), as SIGHUP does (reload/reload.ts). EventStoreDB answers 200 and only logs failures; here
 * the answer says what happened: 200 with the options applied and those that need a restart, or,
 * when the reload was refused and nothing changed, 400 with the reason (an invalid option, a
 * missing certificate file, a key that does not match...).
 */
import type { FastifyReply } from 'fastify';
import { z } from 'zod';

import type { Logger } from 'pino';
import { yamlKey } from '../../config/option-names.js';
import type { ReloadOutcome } from '../../reload/reload.js';
import type { Authorizer } from '../auth-types.js';
import { errorResponses } from '../openapi-responses.js';
import { authorizeRequest } from '../security/http-auth.js';
import { registerZodScope, type HostApp } from './zod-route-scope.js';

export interface ReloadConfigRoutesDeps {
  readonly security: Authorizer;
  readonly log: Logger;
  /** Runs one reload (after any under way) and says how it went. */
  readonly reload: () => Promise<ReloadOutcome>;
  /** SHA-256 fingerprint of the certificate served after the reload; undefined with --insecure. */
  readonly certificateFingerprint?: () => string | undefined;
}

export const ReloadConfigResponseSchema = z.object({
  applied: z.array(z.string()),
  needsRestart: z.array(z.string()),
  certificateFingerprintSha256: z.string().optional(),
});

export function registerReloadConfigRoutes(app: HostApp, deps: ReloadConfigRoutesDeps): void {
  registerZodScope(app, (scope) => {
    scope.post(
      '/admin/reloadconfig',
      {
        schema: { tags: ['admin'], response: { 200: ReloadConfigResponseSchema } },
        config: {
          responses: {
            200: { description: 'Reloaded: options applied, options that need a restart', mediaTypes: ['application/json'] },
            400: { description: 'Refused, nothing changed: the text/plain body says why (invalid option, certificate problem)', mediaTypes: ['text/plain'] },
            ...errorResponses(401),
          },
        },
      },
      async (req, reply) => {
        const decision = await authorizeRequest(deps.security, req, reply, 'ops-or-admins');
        if (!decision.allowed) return reply;
        deps.log.info({ login: decision.principal?.login }, 'configuration reload requested over HTTP');
        const outcome = await deps.reload();
        if (!outcome.ok) {
          const where = outcome.failedAt === 'config' ? 'invalid configuration' : `${outcome.failedAt.step} refused`;
          // The zod scope types replies by the 200 schema; a refusal is a text/plain message.
          return (reply as unknown as FastifyReply)
            .code(outcome.error.code === 'EDB_INVARIANT' ? 500 : 400)
            .type('text/plain; charset=utf-8')
            .send(`Configuration reload failed (${where}); nothing changed: ${outcome.error.message}`);
        }
        const fingerprint = deps.certificateFingerprint?.();
        return {
          applied: outcome.applied.map((c) => yamlKey(c.option)),
          needsRestart: outcome.needsRestart.map((c) => yamlKey(c.option)),
          ...(fingerprint === undefined ? {} : { certificateFingerprintSha256: fingerprint }),
        };
      },
    );
  });
}
