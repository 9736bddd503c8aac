/**
 * `GET /metrics`: the node's Prometheus metrics (metrics/node-metrics.ts), in the Prometheus text
 * format 0.0.4, or in OpenMetrics 1.0 when the Accept header asks for
 * `application/openmetrics-text` (as Prometheus does). Access as in EventStoreDB: an
 * authenticated user (the same rule as `/stats`); with TLS it is served over HTTPS like every route.
 *
 * The stream routes' answers are timed here (one histogram observation per answer, from the
 * time fastify measured): appends (POST/PUT/DELETE of `/streams/...`) and reads (GET).
 */
import type { FastifyReply, FastifyRequest } from 'fastify';

import type { Authorizer } from '../auth-types.js';
import { authorizeRequest } from '../security/http-auth.js';
import { errorResponses } from '../openapi-responses.js';
import type { NodeMetrics, Outcome } from '../../metrics/node-metrics.js';
import { registerZodScope, type HostApp } from './zod-route-scope.js';

export interface MetricsRoutesDeps {
  readonly security: Authorizer;
  readonly metrics: NodeMetrics;
}

export function registerMetricsRoutes(app: HostApp, deps: MetricsRoutesDeps): void {
  const { metrics } = deps;
  app.addHook('onResponse', (request, reply, done) => {
    timeStreamRequest(metrics, request, reply);
    done();
  });
  registerZodScope(app, (scope) => {
    scope.get(
      '/metrics',
      {
        schema: { tags: ['stats'], description: 'Prometheus metrics (text format 0.0.4, or OpenMetrics 1.0 by Accept)' },
        config: {
          responses: {
            200: { description: 'The metrics', mediaTypes: ['text/plain', 'application/openmetrics-text'] },
            ...errorResponses(401),
          },
        },
      },
      async (req, reply) => {
        if (!(await authorizeRequest(deps.security, req, reply, 'authenticated')).allowed) return reply;
        const { contentType, body } = await metrics.scrape(wantsOpenMetrics(req.headers.accept));
        return reply.header('cache-control', 'no-cache').header('vary', 'Accept').type(contentType).send(body);
      },
    );
  });
}

/** True when the Accept header prefers OpenMetrics (any q > 0 for application/openmetrics-text). */
export function wantsOpenMetrics(accept: string | undefined): boolean {
  if (accept === undefined) return false;
  return accept.split(',').some((part) => {
    const [type = '', ...params] = part.trim().toLowerCase().split(';');
    if (type.trim() !== 'application/openmetrics-text') return false;
    const q = /(?:^|\s)q=([0-9.]+)/.exec(params.join(';'))?.[1];
    return q === undefined || Number(q) > 0;
  });
}

function timeStreamRequest(metrics: NodeMetrics, request: FastifyRequest, reply: FastifyReply): void {
  const url = request.routeOptions.url;
  if (url === undefined || !url.startsWith('/streams/')) return;
  const seconds = reply.elapsedTime / 1000;
  const status = reply.statusCode;
  if (request.method === 'GET' || request.method === 'HEAD') {
    // a stream that does not exist or was deleted is an answer, not a failure
    const outcome: Outcome = status < 400 || status === 404 || status === 410 ? 'successful' : 'failed';
    metrics.observeRead('http', seconds, outcome);
  } else if (request.method === 'POST' || request.method === 'PUT' || request.method === 'DELETE') {
    metrics.observeAppend('http', seconds, status < 400 ? 'successful' : 'failed');
  }
}
