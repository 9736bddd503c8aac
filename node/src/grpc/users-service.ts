/**
 * event_store.client.users.Users: maps each RPC onto the security service, the same one the
 * HTTP Users API calls, with its policies: managing users needs `$admins`; Details of another
 * user (or of every user) needs `$admins`, a user may read their own; ChangePassword only by
 * the user themself, with the current password.
 *
 * Errors: a missing user answers NOT_FOUND with `exception: user-not-found` and `login-name`
 * (what the clients map), an existing one FAILED_PRECONDITION `user-conflict`, the last enabled
 * admin's removal FAILED_PRECONDITION with the service's message.
 */
import { create } from '@bufbuild/protobuf';
import { Code, ConnectError, type HandlerContext, type ServiceImpl } from '@connectrpc/connect';
import type { Principal } from '../api/auth-types.js';
import type { Security, UserDetails } from '../api/security/security.js';
import type { UserWriteResult } from '../api/security/user-store.js';
import type { CallGuard } from './call-context.js';
import { accessDenied, badInput, toConnectError } from './errors.js';
import {
  ChangePasswordRespSchema, CreateRespSchema, DeleteRespSchema, DetailsRespSchema, DisableRespSchema, EnableRespSchema,
  ResetPasswordRespSchema, UpdateRespSchema, Users, type DetailsResp,
} from './gen/eventdb/grpc/users_pb.js';

/** .NET ticks (100 ns) per millisecond. */
const TICKS_PER_MS = 10_000n;
const NAME_LENGTH_MAX = 256;
const PASSWORD_LENGTH_MAX = 1024;
const GROUPS_MAX = 256;

export interface UsersServiceDeps {
  readonly security: Security;
  readonly guard: CallGuard;
}

type Implementation = Partial<ServiceImpl<typeof Users>>;

function userNotFound(login: string): ConnectError {
  return new ConnectError(`User '${login}' does not exist.`, Code.NotFound, new Headers({ exception: 'user-not-found', 'login-name': login }));
}

function writeFailed(login: string, result: Exclude<UserWriteResult, { kind: 'ok' }>): ConnectError {
  switch (result.kind) {
    case 'not-found': return userNotFound(login);
    case 'conflict': return new ConnectError(`User '${login}' exists or was changed meanwhile.`, Code.FailedPrecondition, new Headers({ exception: 'user-conflict', 'login-name': login }));
    case 'last-admin': return new ConnectError(result.message, Code.FailedPrecondition);
  }
}

function checked(result: UserWriteResult, login: string): void {
  if (result.kind !== 'ok') throw writeFailed(login, result);
}

/** The login name as the HTTP API accepts it: not empty, no leading `$`, no `/` or control characters. */
function loginName(value: string | undefined): string {
  const login = value ?? '';
  // eslint-disable-next-line no-control-regex
  if (login.trim() === '' || login.startsWith('$') || /[/\u0000-\u001f\u007f]/.test(login) || login.length > NAME_LENGTH_MAX)
    throw badInput(`login_name '${login}' is not a valid login name`);
  return login;
}

function password(value: string | undefined, field: string): string {
  if (value === undefined || value === '') throw badInput(`${field} is required`);
  if (value.length > PASSWORD_LENGTH_MAX) throw badInput(`${field} is longer than ${PASSWORD_LENGTH_MAX} characters`);
  return value;
}

function groups(values: readonly string[]): string[] {
  if (values.length > GROUPS_MAX) throw badInput(`groups: at most ${GROUPS_MAX}`);
  for (const group of values) {
    if (group.length === 0 || group.length > NAME_LENGTH_MAX) throw badInput(`groups: '${group}' is not a valid group name`);
  }
  return [...values];
}

function detailsToWire(user: UserDetails): DetailsResp {
  return create(DetailsRespSchema, {
    userDetails: {
      loginName: user.loginName,
      fullName: user.fullName,
      groups: [...user.groups],
      lastUpdated: { ticksSinceEpoch: BigInt(user.updatedMs) * TICKS_PER_MS },
      disabled: user.disabled,
    },
  });
}

export function usersService(deps: UsersServiceDeps): Implementation {
  const { security, guard } = deps;
  const caller = async (context: HandlerContext, write: boolean): Promise<Principal> => {
    guard.checkLeader(context.requestHeader, write);
    const principal = await guard.principal(context.requestHeader);
    if (principal === undefined) throw accessDenied();
    return principal;
  };
  const admin = async (context: HandlerContext): Promise<Principal> => {
    const principal = await caller(context, true);
    if (!security.isAdmin(principal, false)) throw accessDenied();
    return principal;
  };
  const mapped = async <T>(run: () => Promise<T>): Promise<T> => {
    try {
      return await run();
    } catch (err) {
      throw toConnectError(err) ?? err;
    }
  };

  return {
    create: (request, context) => mapped(async () => {
      const options = request.options;
      const login = loginName(options?.loginName);
      const secret = password(options?.password, 'password');
      const memberOf = groups(options?.groups ?? []);
      const principal = await admin(context);
      checked(await security.createUser({ loginName: login, fullName: options?.fullName ?? '', groups: memberOf, password: secret }, principal.login), login);
      return create(CreateRespSchema);
    }),

    update: (request, context) => mapped(async () => {
      const options = request.options;
      const login = loginName(options?.loginName);
      const memberOf = groups(options?.groups ?? []);
      const principal = await admin(context);
      checked(await security.updateUser(login, { fullName: options?.fullName ?? '', groups: memberOf }, principal.login), login);
      // The password of an update, when given, is set too (the HTTP API resets it separately).
      if (options?.password !== undefined && options.password !== '') {
        checked(await security.resetPassword(login, password(options.password, 'password'), principal.login), login);
      }
      return create(UpdateRespSchema);
    }),

    delete: (request, context) => mapped(async () => {
      const login = loginName(request.options?.loginName);
      const principal = await admin(context);
      checked(await security.deleteUser(login, principal.login), login);
      return create(DeleteRespSchema);
    }),

    enable: (request, context) => mapped(async () => {
      const login = loginName(request.options?.loginName);
      const principal = await admin(context);
      checked(await security.setUserDisabled(login, false, principal.login), login);
      return create(EnableRespSchema);
    }),

    disable: (request, context) => mapped(async () => {
      const login = loginName(request.options?.loginName);
      const principal = await admin(context);
      checked(await security.setUserDisabled(login, true, principal.login), login);
      return create(DisableRespSchema);
    }),

    async *details(request, context): AsyncGenerator<DetailsResp> {
      try {
        const wanted = request.options?.loginName ?? '';
        const principal = await caller(context, false);
        if (wanted === '') {
          if (!security.isAdmin(principal, false)) throw accessDenied();
          for (const user of await security.listUsers()) yield detailsToWire(user);
          return;
        }
        if (wanted !== principal.login && !security.isAdmin(principal, false)) throw accessDenied();
        const user = await security.getUser(wanted);
        if (user === undefined) throw userNotFound(wanted);
        yield detailsToWire(user);
      } catch (err) {
        throw toConnectError(err) ?? err;
      }
    },

    changePassword: (request, context) => mapped(async () => {
      const options = request.options;
      const login = loginName(options?.loginName);
      const current = options?.currentPassword ?? '';
      const next = password(options?.newPassword, 'new_password');
      const principal = await caller(context, true);
      if (principal.login !== login) throw accessDenied();
      const result = await security.changePassword(login, current, next);
      if (result.kind === 'wrong-password') throw accessDenied();
      checked(result, login);
      return create(ChangePasswordRespSchema);
    }),

    resetPassword: (request, context) => mapped(async () => {
      const options = request.options;
      const login = loginName(options?.loginName);
      const next = password(options?.newPassword, 'new_password');
      const principal = await admin(context);
      checked(await security.resetPassword(login, next, principal.login), login);
      return create(ResetPasswordRespSchema);
    }),
  };
}
