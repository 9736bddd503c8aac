/**
 * The auto-scavenge endpoints (EventStoreDB's AutoScavenge, JSON in and out); the logic is in
 * auto-scavenge/. On a cluster they are served by the leader: other nodes forward them
 * (leader-forwarding.ts).
 *
 * - `GET /auto-scavenge/enabled` (any authenticated user): `{"enabled": bool}`;
 * - `GET /auto-scavenge/status` (authenticated): `{state, schedule, timeUntilNextCycle}`;
 * - `POST /auto-scavenge/configure` `{"schedule": "<cron>"}` ($ops/$admins): 200 `{}`; 400
 *   `Invalid CRON expression`, `CRON expression can only be a string`, `Invalid payload`;
 * - `POST /auto-scavenge/pause` ($ops/$admins): 200 `{}` paused, 202 `{}` while the running
 *   node scavenge is being stopped;
 * - `POST /auto-scavenge/resume` ($ops/$admins): 200 `{}`; 400 while pausing.
 *
 * Without a licence (or turned off) every endpoint but `enabled` answers 503
 * `AutoScavenge is not enabled`.
 */
import type { FastifyReply } from 'fastify';
import { z } from 'zod';

import type { AutoScavengeService, NotReady } from '../../auto-scavenge/service.js';
import type { CommandOutcome } from '../../auto-scavenge/state.js';
import type { Authorizer } from '../auth-types.js';
import { errorResponses } from '../openapi-responses.js';
import { authorizeRequest, type EndpointPolicy } from '../security/http-auth.js';
import { registerZodScope, type ZodScope, type HostApp } from './zod-route-scope.js';

export interface AutoScavengeRoutesDeps {
  readonly security: Authorizer;
  /** Undefined when auto-scavenge is not enabled on this node. */
  readonly autoScavenge: AutoScavengeService | undefined;
}

export const NOT_ENABLED_MESSAGE = 'AutoScavenge is not enabled';

const EnabledSchema = z.object({ enabled: z.boolean() });
const StatusSchema = z.object({
  state: z.enum(['NotConfigured', 'Waiting', 'InProgress', 'Pausing', 'Paused']),
  schedule: z.string().nullable().describe('CRON expression'),
  timeUntilNextCycle: z.string().nullable().describe('d.hh:mm:ss.fffffff'),
});
const EmptySchema = z.object({});
const TEXT_ERRORS = {
  400: { description: 'Refused: the text/plain body says why', mediaTypes: ['text/plain'] },
  503: { description: `${NOT_ENABLED_MESSAGE}, or not ready (no leader yet)`, mediaTypes: ['text/plain'] },
  ...errorResponses(401),
} as const;

function sendText(reply: unknown, status: number, message: string): FastifyReply {
  return (reply as FastifyReply).code(status).type('text/plain; charset=utf-8').send(message);
}

export function registerAutoScavengeRoutes(app: HostApp, deps: AutoScavengeRoutesDeps): void {
  registerZodScope(app, (scope) => {
    scope.get(
      '/auto-scavenge/enabled',
      { schema: { tags: ['auto-scavenge'], response: { 200: EnabledSchema } }, config: { responses: errorResponses(401) } },
      async (req, reply) => {
        if (!(await authorizeRequest(deps.security, req, reply, 'authenticated')).allowed) return reply;
        return { enabled: deps.autoScavenge !== undefined };
      },
    );
    scope.get(
      '/auto-scavenge/status',
      { schema: { tags: ['auto-scavenge'], response: { 200: StatusSchema } }, config: { responses: TEXT_ERRORS } },
      async (req, reply) => {
        const service = await admit(deps, req, reply, 'authenticated');
        if (service === undefined) return reply;
        const status = service.status();
        if ('message' in status) return sendText(reply, status.status, status.message);
        return status;
      },
    );
    registerCommand(scope, deps, '/auto-scavenge/configure', 'Set the CRON schedule of cluster scavenges', (service, body) => {
      if (body === null || typeof body !== 'object' || Array.isArray(body) || !('schedule' in body)) {
        return Promise.resolve({ status: 400, message: 'Invalid payload' });
      }
      const schedule = (body as { schedule: unknown }).schedule;
      if (typeof schedule !== 'string') return Promise.resolve({ status: 400, message: 'CRON expression can only be a string' });
      return service.configure(schedule);
    });
    registerCommand(scope, deps, '/auto-scavenge/pause', 'Pause: no further node scavenges start; a running one is stopped', (service) => service.pause());
    registerCommand(scope, deps, '/auto-scavenge/resume', 'Resume the cluster scavenge where it left off', (service) => service.resume());
  });
}

function registerCommand(
  scope: ZodScope,
  deps: AutoScavengeRoutesDeps,
  path: string,
  summary: string,
  run: (service: AutoScavengeService, body: unknown) => Promise<CommandOutcome | NotReady>,
): void {
  scope.post(
    path,
    {
      schema: { tags: ['auto-scavenge'], summary, body: z.unknown().optional(), response: { 200: EmptySchema, 202: EmptySchema } },
      config: { responses: TEXT_ERRORS },
    },
    async (req, reply) => {
      const service = await admit(deps, req, reply, 'ops-or-admins');
      if (service === undefined) return reply;
      const outcome = await run(service, req.body);
      if ('message' in outcome) return sendText(reply, outcome.status, outcome.message);
      return (reply as unknown as FastifyReply).code(outcome.status).send({});
    },
  );
}

/** Authenticates, then the service, or 503 when auto-scavenge is not enabled here. */
async function admit(
  deps: AutoScavengeRoutesDeps,
  req: Parameters<typeof authorizeRequest>[1],
  reply: unknown,
  policy: EndpointPolicy,
): Promise<AutoScavengeService | undefined> {
  if (!(await authorizeRequest(deps.security, req, reply as FastifyReply, policy)).allowed) return undefined;
  if (deps.autoScavenge === undefined) {
    sendText(reply, 503, NOT_ENABLED_MESSAGE);
    return undefined;
  }
  return deps.autoScavenge;
}
