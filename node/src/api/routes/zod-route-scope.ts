/**
 * An encapsulated fastify scope for the security-owned routes (users, info, stats, gossip,
 * admin): zod request validation and response serialization, and an error handler that turns
 * every client mistake into a 4xx so that no request can produce a 500, and hands every
 * EventDbError to the server's error handler (its status by code, Retry-After on a 503).
 *
 * The scope is a child plugin, so its compilers and error handler do not leak into the rest of
 * the server, whatever build-server configures at the root.
 */
import type {
  FastifyBaseLogger,
  FastifyError,
  FastifyInstance,
  FastifyReply,
  FastifyRequest,
  RawReplyDefaultExpression,
  RawRequestDefaultExpression,
  RawServerDefault,
} from 'fastify';
import {
  serializerCompiler,
  validatorCompiler,
  type ZodTypeProvider,
} from 'fastify-type-provider-zod';
import { EventDbError } from '../../errors.js';
import { handleError } from '../error-handler.js';

/** A fastify instance whose route schemas are zod types. */
export type ZodScope = FastifyInstance<
  RawServerDefault,
  RawRequestDefaultExpression,
  RawReplyDefaultExpression,
  FastifyBaseLogger,
  ZodTypeProvider
>;

/**
 * Any fastify instance, whatever its logger and type provider: the registrars accept the
 * instance build-server creates (pino logger) as well as a bare one in tests.
 */
export type HostApp = FastifyInstance<
  RawServerDefault,
  RawRequestDefaultExpression,
  RawReplyDefaultExpression,
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  any,
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  any
>;

/** Registers `routes` in a child scope that validates and serializes with zod. */
export function registerZodScope(app: HostApp, routes: (scope: ZodScope) => void): void {
  void app.register(async (child) => {
    child.setValidatorCompiler(validatorCompiler);
    child.setSerializerCompiler(serializerCompiler);
    child.setErrorHandler(handleScopeError);
    routes(child.withTypeProvider<ZodTypeProvider>());
  });
}

function handleScopeError(error: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  // An EventDbError keeps its status here as everywhere (a node not ready is 503, never 500).
  if (error instanceof EventDbError) {
    handleError(error, request, reply);
    return;
  }
  if (error.validation !== undefined) {
    void reply
      .code(400)
      .type('text/plain; charset=utf-8')
      .send(`Bad Request: ${describeValidation(error)}`);
    return;
  }
  const status = error.statusCode;
  if (status !== undefined && status >= 400 && status < 500) {
    void reply.code(status).type('text/plain; charset=utf-8').send(error.message);
    return;
  }
  request.log.error({ err: error }, 'request failed');
  void reply.code(500).type('text/plain; charset=utf-8').send('Internal Server Error');
}

function describeValidation(error: FastifyError): string {
  const first = error.validation?.[0];
  if (first === undefined) return error.message;
  const where =
    first.instancePath === '' ? (error.validationContext ?? 'body') : first.instancePath;
  return `${where} ${first.message ?? 'is invalid'}`;
}
