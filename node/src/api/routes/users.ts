/**
 * The Users API of EventStoreDB: list, create, read, update, delete, enable, disable,
 * reset-password and change-password, with the original's JSON envelopes
 * (`{ data, success, error }` for reads, `{ loginName, success, error }` for commands).
 *
 * Policies (EventStoreDB legacy policy): managing users needs `$admins`; reading a user needs
 * `$admins` or being that user; changing a password needs being that user; `$current` needs
 * any authenticated user. Request bodies are matched case-insensitively (`LoginName` and
 * `loginName` both work), as the original's JSON reader does.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';

import type { Principal } from '../auth-types.js';
import { authorizeRequest, replyUnauthorized } from '../security/http-auth.js';
import type { Security, UserDetails } from '../security/security.js';
import type { UserWriteResult } from '../security/user-store.js';
import { registerZodScope, type HostApp, type ZodScope } from './zod-route-scope.js';
import { errorResponses } from '../openapi-responses.js';

export interface UserRoutesDeps {
  readonly security: Security;
}

const CURRENT_USER = '$current';
const NAME_LENGTH_MAX = 256;
const PASSWORD_LENGTH_MAX = 1024;

const GroupsSchema = z.array(z.string().min(1).max(NAME_LENGTH_MAX)).max(256);

export const UserItemSchema = z
  .object({
    LoginName: z.string().max(NAME_LENGTH_MAX).optional(),
    FullName: z.string().max(NAME_LENGTH_MAX).optional(),
    Groups: GroupsSchema.optional(),
    Password: z.string().max(PASSWORD_LENGTH_MAX).optional(),
  })
  .describe('UserItem: a new user. LoginName and Password are required by the server.');

export const UserUpdateItemSchema = z
  .object({ FullName: z.string().max(NAME_LENGTH_MAX).optional(), Groups: GroupsSchema.optional() })
  .describe('UserUpdateItem');

export const PasswordResetItemSchema = z
  .object({ NewPassword: z.string().max(PASSWORD_LENGTH_MAX).optional() })
  .describe('PasswordResetItem');

export const PasswordChangeItemSchema = z
  .object({
    CurrentPassword: z.string().max(PASSWORD_LENGTH_MAX).optional(),
    NewPassword: z.string().max(PASSWORD_LENGTH_MAX).optional(),
  })
  .describe('PasswordChangeItem');

const LinkSchema = z.object({ href: z.string(), rel: z.string() });

export const UserDataSchema = z.object({
  loginName: z.string(),
  fullName: z.string(),
  groups: z.array(z.string()),
  dateLastUpdated: z.string(),
  disabled: z.boolean(),
  links: z.array(LinkSchema),
});

const UserResponseSchema = z.object({
  data: UserDataSchema,
  success: z.boolean(),
  error: z.string(),
});
const UserListResponseSchema = z.object({
  data: z.array(UserDataSchema),
  success: z.boolean(),
  error: z.string(),
});
const CommandResponseSchema = z.object({
  loginName: z.string(),
  success: z.boolean(),
  error: z.string(),
});
const LoginParamsSchema = z.object({ login: z.string().min(1).max(NAME_LENGTH_MAX) });
const CommandParamsSchema = LoginParamsSchema.extend({ command: z.enum(['enable', 'disable']) });

export function registerUserRoutes(app: HostApp, deps: UserRoutesDeps): void {
  registerZodScope(app, (scope) => {
    registerUserListRoutes(scope, deps);
    registerUserItemRoutes(scope, deps);
    registerUserCommandRoutes(scope, deps);
  });
}

const JSON_ONLY = ['application/json'];
/** 404/409 answer a JSON command result; 400 and 401 a text message. */
const COMMAND_FAILURES = {
  ...errorResponses(400, 401),
  404: { description: 'No such user', mediaTypes: JSON_ONLY },
  409: {
    description:
      'Conflict: the user exists already, or was changed meanwhile (`error` "Conflict"); or the change would leave no enabled $admins member (`error` says so)',
    mediaTypes: JSON_ONLY,
  },
};
const FAILURE_SCHEMAS = { 404: CommandResponseSchema, 409: CommandResponseSchema };
const COMMAND_RESPONSES = { 200: { description: 'Done', mediaTypes: JSON_ONLY }, ...COMMAND_FAILURES };

function registerUserListRoutes(scope: ZodScope, { security }: UserRoutesDeps): void {
  for (const url of withTrailingSlash(scope, 'GET', '/users')) {
    scope.get(
      url,
      {
        schema: { tags: ['users'], response: { 200: UserListResponseSchema } },
        config: { responses: { 200: { description: 'Every user', mediaTypes: JSON_ONLY }, ...errorResponses(401) } },
      },
      async (req, reply) => {
        if (!(await authorizeRequest(security, req, reply, 'admins')).allowed) return reply;
        const users = await security.listUsers();
        return { data: users.map((u) => userData(req, u)), success: true, error: 'Success' };
      },
    );
  }
  for (const url of withTrailingSlash(scope, 'POST', '/users')) {
    scope.post(
      url,
      {
        schema: { tags: ['users'], body: UserItemSchema, response: { 201: CommandResponseSchema, ...FAILURE_SCHEMAS } },
        config: { responses: { ...COMMAND_FAILURES, 201: { description: 'Created; Location names the user', mediaTypes: JSON_ONLY } } },
        preValidation: canonicalizeBodyKeys(['LoginName', 'FullName', 'Groups', 'Password']),
      },
      async (req, reply) => {
        const decision = await authorizeRequest(security, req, reply, 'admins');
        if (!decision.allowed) return reply;
        const { LoginName: loginName, Password: password } = req.body;
        if (loginName === undefined || !isValidLoginName(loginName))
          return badRequest(reply, 'Invalid LoginName');
        if (password === undefined || password === '')
          return badRequest(reply, 'Password is required');
        const result = await security.createUser({
          loginName,
          fullName: req.body.FullName ?? '',
          groups: req.body.Groups ?? [],
          password,
        }, decision.principal?.login);
        if (result.kind !== 'ok') return commandFailure(reply, loginName, result);
        void reply.code(201).header('location', userUrl(req, loginName));
        return commandSuccess(loginName);
      },
    );
  }
}

function registerUserItemRoutes(scope: ZodScope, { security }: UserRoutesDeps): void {
  scope.get(
    '/users/:login',
    {
      schema: { tags: ['users'], params: LoginParamsSchema, response: { 200: UserResponseSchema, ...FAILURE_SCHEMAS } },
      config: { responses: { 200: { description: 'The user', mediaTypes: JSON_ONLY }, ...COMMAND_FAILURES } },
    },
    async (req, reply) => {
      const decision = await authorizeRequest(security, req, reply, 'authenticated');
      if (!decision.allowed) return reply;
      const principal = decision.principal as Principal;
      const login = req.params.login === CURRENT_USER ? principal.login : req.params.login;
      if (login !== principal.login && !security.isAdmin(principal, false))
        return unauthorized(reply);
      const user = await security.getUser(login);
      if (user === undefined) return notFound(reply, login);
      return { data: userData(req, user), success: true, error: 'Success' };
    },
  );
  scope.put(
    '/users/:login',
    {
      schema: {
        tags: ['users'],
        params: LoginParamsSchema,
        body: UserUpdateItemSchema,
        response: { 200: CommandResponseSchema, ...FAILURE_SCHEMAS },
      },
      config: { responses: COMMAND_RESPONSES },
      preValidation: canonicalizeBodyKeys(['FullName', 'Groups']),
    },
    async (req, reply) => {
      const decision = await authorizeRequest(security, req, reply, 'admins');
      if (!decision.allowed) return reply;
      const { login } = req.params;
      const current = await security.getUser(login);
      if (current === undefined) return notFound(reply, login);
      const result = await security.updateUser(login, {
        fullName: req.body.FullName ?? current.fullName,
        groups: req.body.Groups ?? current.groups,
      }, decision.principal?.login);
      return result.kind === 'ok' ? commandSuccess(login) : commandFailure(reply, login, result);
    },
  );
  scope.delete(
    '/users/:login',
    {
      schema: { tags: ['users'], params: LoginParamsSchema, response: { 204: z.void(), ...FAILURE_SCHEMAS } },
      config: { responses: { 204: { description: 'Deleted' }, ...COMMAND_FAILURES } },
    },
    async (req, reply) => {
      const decision = await authorizeRequest(security, req, reply, 'admins');
      if (!decision.allowed) return reply;
      const result = await security.deleteUser(req.params.login, decision.principal?.login);
      if (result.kind !== 'ok') return commandFailure(reply, req.params.login, result);
      return reply.code(204).send();
    },
  );
}

function registerUserCommandRoutes(scope: ZodScope, { security }: UserRoutesDeps): void {
  // The spec lists PUT; EventStoreDB's controller registers POST. Both are accepted.
  scope.route({
    method: ['PUT', 'POST'],
    url: '/users/:login/command/:command',
    schema: {
      tags: ['users'],
      params: CommandParamsSchema,
      response: { 200: CommandResponseSchema, ...FAILURE_SCHEMAS },
    },
    config: { responses: COMMAND_RESPONSES },
    handler: async (req, reply) => {
      const decision = await authorizeRequest(security, req, reply, 'admins');
      if (!decision.allowed) return reply;
      const { login, command } = req.params;
      const result = await security.setUserDisabled(login, command === 'disable', decision.principal?.login);
      return result.kind === 'ok' ? commandSuccess(login) : commandFailure(reply, login, result);
    },
  });
  scope.post(
    '/users/:login/command/reset-password',
    {
      schema: {
        tags: ['users'],
        params: LoginParamsSchema,
        body: PasswordResetItemSchema,
        response: { 200: CommandResponseSchema, ...FAILURE_SCHEMAS },
      },
      config: { responses: COMMAND_RESPONSES },
      preValidation: canonicalizeBodyKeys(['NewPassword']),
    },
    async (req, reply) => {
      const decision = await authorizeRequest(security, req, reply, 'admins');
      if (!decision.allowed) return reply;
      const { login } = req.params;
      const newPassword = req.body.NewPassword;
      if (newPassword === undefined || newPassword === '')
        return badRequest(reply, 'NewPassword is required');
      const result = await security.resetPassword(login, newPassword, decision.principal?.login);
      return result.kind === 'ok' ? commandSuccess(login) : commandFailure(reply, login, result);
    },
  );
  scope.post(
    '/users/:login/command/change-password',
    {
      schema: {
        tags: ['users'],
        params: LoginParamsSchema,
        body: PasswordChangeItemSchema,
        response: { 200: CommandResponseSchema, ...FAILURE_SCHEMAS },
      },
      config: { responses: COMMAND_RESPONSES },
      preValidation: canonicalizeBodyKeys(['CurrentPassword', 'NewPassword']),
    },
    async (req, reply) => {
      const decision = await authorizeRequest(security, req, reply, 'authenticated');
      if (!decision.allowed) return reply;
      const { login } = req.params;
      if (decision.principal?.login !== login) return unauthorized(reply);
      const { CurrentPassword: currentPassword, NewPassword: newPassword } = req.body;
      if (currentPassword === undefined || newPassword === undefined || newPassword === '') {
        return badRequest(reply, 'CurrentPassword and NewPassword are required');
      }
      const result = await security.changePassword(login, currentPassword, newPassword);
      if (result.kind === 'wrong-password') return unauthorized(reply);
      return result.kind === 'ok' ? commandSuccess(login) : commandFailure(reply, login, result);
    },
  );
}

/** The route's URL, plus the same with a trailing slash unless the router already folds them. */
function withTrailingSlash(scope: ZodScope, method: 'GET' | 'POST', url: string): string[] {
  return scope.hasRoute({ method, url: `${url}/` }) ? [url] : [url, `${url}/`];
}

/** Renames body keys to their canonical casing before validation (`loginName` -> `LoginName`). */
function canonicalizeBodyKeys(canonical: readonly string[]) {
  const byLowerCase = new Map(canonical.map((key) => [key.toLowerCase(), key]));
  return async (request: FastifyRequest): Promise<void> => {
    const body = request.body;
    if (typeof body !== 'object' || body === null || Array.isArray(body)) return;
    const renamed: Record<string, unknown> = {};
    for (const [key, value] of Object.entries(body)) {
      renamed[byLowerCase.get(key.toLowerCase()) ?? key] = value;
    }
    request.body = renamed;
  };
}

function isValidLoginName(login: string): boolean {
  // '/' could never be addressed in a URL; control characters are never intended; a leading
  // '$' is reserved for system roles (`$admins`, `$ops`, `$all`) and `$current`.
  // eslint-disable-next-line no-control-regex
  return login.trim() !== '' && !login.startsWith('$') && !/[/\u0000-\u001f\u007f]/.test(login);
}

function userData(req: FastifyRequest, user: UserDetails): z.infer<typeof UserDataSchema> {
  const base = userUrl(req, user.loginName);
  return {
    loginName: user.loginName,
    fullName: user.fullName,
    groups: [...user.groups],
    dateLastUpdated: new Date(user.updatedMs).toISOString(),
    disabled: user.disabled,
    links: [
      { href: `${base}/command/reset-password`, rel: 'reset-password' },
      { href: `${base}/command/change-password`, rel: 'change-password' },
      { href: base, rel: 'edit' },
      { href: base, rel: 'delete' },
      user.disabled
        ? { href: `${base}/command/enable`, rel: 'enable' }
        : { href: `${base}/command/disable`, rel: 'disable' },
    ],
  };
}

function userUrl(req: FastifyRequest, login: string): string {
  const proto = firstHeader(req.headers['x-forwarded-proto']) ?? req.protocol;
  const host = firstHeader(req.headers['x-forwarded-host']) ?? req.headers.host ?? req.hostname;
  return `${proto}://${host}/users/${encodeURIComponent(login)}`;
}

function firstHeader(value: string | string[] | undefined): string | undefined {
  const first = Array.isArray(value) ? value[0] : value;
  return first === undefined || first === '' ? undefined : first.split(',')[0]?.trim();
}

function commandSuccess(loginName: string): z.infer<typeof CommandResponseSchema> {
  return { loginName, success: true, error: 'Success' };
}

function commandFailure(
  reply: FastifyReply,
  loginName: string,
  result: UserWriteResult,
): FastifyReply {
  const failure =
    result.kind === 'not-found'
      ? { code: 404, error: 'NotFound' }
      : result.kind === 'last-admin'
        ? { code: 409, error: result.message }
        : { code: 409, error: 'Conflict' };
  return reply.code(failure.code).send({ loginName, success: false, error: failure.error });
}

function notFound(reply: FastifyReply, loginName: string): FastifyReply {
  return commandFailure(reply, loginName, { kind: 'not-found' });
}

function badRequest(reply: FastifyReply, message: string): FastifyReply {
  return reply.code(400).type('text/plain; charset=utf-8').send(message);
}

function unauthorized(reply: FastifyReply): FastifyReply {
  return replyUnauthorized(reply);
}
