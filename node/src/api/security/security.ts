/**
 * The node's security service: authenticates HTTP requests against internal users, evaluates
 * stream ACLs, and manages users. It implements the `Authorizer` seam used by every route.
 *
 * Caches (all invalidated from the engine's commit notifications, so changes made through the
 * streams API are honoured too): verified credentials, stream ACLs read from metadata, and the
 * `$settings` defaults. A generation counter guards each cache against a read that started
 * before a concurrent change and finished after it.
 */
import type { FastifyRequest } from 'fastify';
import type { Logger } from 'pino';

import type { AuthResult, Authorizer, Principal, StreamAccess } from '../auth-types.js';
import type { EventDb, StreamAcl } from '../../storage/event-db-types.js';
import { EventDbError } from '../../errors.js';
import { CredentialsCache } from './credentials-cache.js';
import { parseBasicCredentials } from './http-auth.js';
import { hashPassword, verifyPassword } from './password-hash.js';
import {
  ALL_STREAM,
  effectiveRoles,
  isMemberOf,
  parseSystemSettings,
  resolveAclTarget,
  rolesAdmit,
  ROLE_ADMINS,
  ROLE_OPS,
  SETTINGS_STREAM,
  type SystemSettings,
} from './stream-acl.js';
import {
  createUser,
  deleteUser,
  EVENT_TYPE_PASSWORD_CHANGED,
  EVENT_TYPE_USER_UPDATED,
  listLoginNames,
  loginOfUserStream,
  readUser,
  writeUser,
  type StoredUser,
  type UserRecord,
  type UserWriteResult,
} from './user-store.js';

export interface SecurityOptions {
  readonly db: EventDb;
  readonly log: Logger;
  /** Password of the default `admin` user, used when it is first created. Default `changeit`. */
  readonly defaultAdminPassword?: string;
  /** Password of the default `ops` user, used only when it is first created. Default `changeit`. */
  readonly defaultOpsPassword?: string;
  /** Let anonymous requests use streams whose ACL grants `$all`. Default false. */
  readonly allowAnonymousStreamAccess?: boolean;
  readonly nowMs?: () => number;
  /** Create `admin` and `ops` now when they never existed (default true; a cluster's leader does it once elected). */
  readonly createDefaultUsers?: boolean;
}

/** What the users API shows of a user: never the password hash. */
export interface UserDetails {
  readonly loginName: string;
  readonly fullName: string;
  readonly groups: readonly string[];
  readonly disabled: boolean;
  /** When the user record was last written, in ms since the Unix epoch. */
  readonly updatedMs: number;
}

export interface NewUser {
  readonly loginName: string;
  readonly fullName: string;
  readonly groups: readonly string[];
  readonly password: string;
}

export type ChangePasswordResult = UserWriteResult | { readonly kind: 'wrong-password' };

export interface Security extends Authorizer {
  /**
   * Creates `admin` and `ops` unless their streams ever existed. A cluster's new leader calls it
   * before it reports Leader, writing through `via` (its own engine: client writes are not routed
   * to it yet).
   */
  ensureDefaultUsers(adminPassword: string, opsPassword: string, via?: EventDb): Promise<void>;
  listUsers(): Promise<UserDetails[]>;
  getUser(login: string): Promise<UserDetails | undefined>;
  createUser(user: NewUser): Promise<UserWriteResult>;
  updateUser(
    login: string,
    change: { fullName: string; groups: readonly string[] },
  ): Promise<UserWriteResult>;
  setUserDisabled(login: string, disabled: boolean): Promise<UserWriteResult>;
  resetPassword(login: string, newPassword: string): Promise<UserWriteResult>;
  changePassword(
    login: string,
    currentPassword: string,
    newPassword: string,
  ): Promise<ChangePasswordResult>;
  deleteUser(login: string): Promise<UserWriteResult>;
  /** Stops listening to the engine. */
  close(): void;
}

const DEFAULT_PASSWORD = 'changeit';
const ACL_CACHE_ENTRY_COUNT_MAX = 10_000;

const DEFAULT_LOGINS: ReadonlySet<string> = new Set(['admin', 'ops']);
/** How long a request with a default user's credentials waits for that user to reach a cluster member. */
const DEFAULT_USERS_WAIT_MS = 3000;

/** Creates the service and, on first start, the default users `admin` and `ops`. */
export async function createSecurity(options: SecurityOptions): Promise<Security> {
  const security = new SecurityService(options);
  if (options.createDefaultUsers !== false) {
    await security.ensureDefaultUsers(
      options.defaultAdminPassword ?? DEFAULT_PASSWORD,
      options.defaultOpsPassword ?? DEFAULT_PASSWORD,
    );
  }
  return security;
}

class SecurityService implements Security {
  private readonly db: EventDb;
  private readonly log: Logger;
  private readonly allowAnonymousStreamAccess: boolean;
  private readonly credentials: CredentialsCache;
  private readonly aclCache = new Map<string, StreamAcl | undefined>();
  private aclGeneration = 0;
  private settings: SystemSettings | undefined;
  private readonly unsubscribe: () => void;
  /** A cluster member: the leader creates the default users, which reach this node by replication. */
  private readonly defaultUsersElsewhere: boolean;

  constructor(options: SecurityOptions) {
    this.db = options.db;
    this.defaultUsersElsewhere = options.createDefaultUsers === false;
    this.log = options.log;
    this.allowAnonymousStreamAccess = options.allowAnonymousStreamAccess ?? false;
    this.credentials = new CredentialsCache({ nowMs: options.nowMs ?? (() => Date.now()) });
    this.unsubscribe = this.db.onCommitted((write) => this.onCommitted(write.stream));
  }

  close(): void {
    this.unsubscribe();
  }

  async ensureDefaultUsers(adminPassword: string, opsPassword: string, via: EventDb = this.db): Promise<void> {
    const defaults: NewUser[] = [
      {
        loginName: 'admin',
        fullName: 'Event Store Administrator',
        groups: [ROLE_ADMINS],
        password: adminPassword,
      },
      {
        loginName: 'ops',
        fullName: 'Event Store Operations',
        groups: [ROLE_OPS],
        password: opsPassword,
      },
    ];
    for (const user of defaults) {
      // Only a stream that never existed gets a default user: a deleted admin stays deleted.
      const state = await via.streamState(`$user-${user.loginName}`);
      if (state.kind !== 'no-stream') continue;
      const created = await this.createUserIn(via, user);
      this.log.info({ loginName: user.loginName, result: created.kind }, 'default user created');
    }
  }

  async authenticate(request: FastifyRequest): Promise<AuthResult> {
    const credentials = parseBasicCredentials(request.headers.authorization);
    if (credentials === undefined) return { kind: 'anonymous' };
    if (credentials === 'malformed') return { kind: 'rejected' };
    const { login, password } = credentials;
    const lookup = (): Promise<Principal | undefined> =>
      this.credentials.lookup(login, password, () => this.verifyCredentials(login, password));
    let principal = await lookup();
    if (principal === undefined && this.defaultUsersElsewhere && DEFAULT_LOGINS.has(login)) {
      // A cluster that just formed: the leader creates the default users before it reports
      // Leader, but a follower may get them a moment later. Not a wrong password: the request
      // waits briefly for them, then answers 503 (with Retry-After) so that clients retry.
      const arrived = await this.streamCommitted(`$user-${login}`, DEFAULT_USERS_WAIT_MS);
      if (arrived === 'missing') {
        throw new EventDbError('EDB_NOT_READY', 'Server Is Not Ready: the default users have not reached this node yet', {
          httpStatus: 503, details: { reason: 'Server Is Not Ready' },
        });
      }
      if (arrived === 'arrived') principal = await lookup();
    }
    if (principal === undefined) {
      request.log.debug({ auth: { login } }, 'authentication rejected');
      return { kind: 'rejected' };
    }
    return { kind: 'authenticated', principal };
  }

  async canAccessStream(
    principal: Principal | undefined,
    stream: string,
    access: StreamAccess,
  ): Promise<boolean> {
    const target = resolveAclTarget(stream, access);
    if (target.stream === ALL_STREAM && (target.access === 'w' || target.access === 'd'))
      return false;
    if (principal === undefined && !this.allowAnonymousStreamAccess) return false;
    // Reading `$all` needs user credentials (spec), even where anonymous access is allowed.
    if (principal === undefined && target.stream === ALL_STREAM) return false;
    if (isMemberOf(principal, ROLE_ADMINS)) return true;
    const [acl, settings] = await Promise.all([
      this.streamAcl(target.stream),
      this.systemSettings(),
    ]);
    return rolesAdmit(effectiveRoles(target.stream, target.access, acl, settings), principal);
  }

  isAdmin(principal: Principal | undefined, allowOps: boolean): boolean {
    if (principal === undefined) return false;
    if (isMemberOf(principal, ROLE_ADMINS)) return true;
    if (!allowOps) return false;
    return (
      isMemberOf(principal, ROLE_OPS) || principal.login === 'admin' || principal.login === 'ops'
    );
  }

  async listUsers(): Promise<UserDetails[]> {
    const logins = await listLoginNames(this.db);
    const users = await Promise.all(logins.map((login) => readUser(this.db, login)));
    return users.filter((u): u is StoredUser => u !== undefined).map(toDetails);
  }

  async getUser(login: string): Promise<UserDetails | undefined> {
    const stored = await readUser(this.db, login);
    return stored === undefined ? undefined : toDetails(stored);
  }

  createUser(user: NewUser): Promise<UserWriteResult> {
    return this.createUserIn(this.db, user);
  }

  private async createUserIn(db: EventDb, user: NewUser): Promise<UserWriteResult> {
    const record: UserRecord = {
      loginName: user.loginName,
      fullName: user.fullName,
      groups: [...user.groups],
      disabled: false,
      passwordHash: await hashPassword(user.password),
    };
    const result = await createUser(db, record);
    this.onUsersChanged();
    return result;
  }

  updateUser(
    login: string,
    change: { fullName: string; groups: readonly string[] },
  ): Promise<UserWriteResult> {
    return this.modifyUser(login, EVENT_TYPE_USER_UPDATED, async (r) => ({
      ...r,
      fullName: change.fullName,
      groups: [...change.groups],
    }));
  }

  setUserDisabled(login: string, disabled: boolean): Promise<UserWriteResult> {
    return this.modifyUser(login, EVENT_TYPE_USER_UPDATED, async (r) => ({ ...r, disabled }));
  }

  resetPassword(login: string, newPassword: string): Promise<UserWriteResult> {
    return this.modifyUser(login, EVENT_TYPE_PASSWORD_CHANGED, async (r) => ({
      ...r,
      passwordHash: await hashPassword(newPassword),
    }));
  }

  async changePassword(
    login: string,
    currentPassword: string,
    newPassword: string,
  ): Promise<ChangePasswordResult> {
    const stored = await readUser(this.db, login);
    if (stored === undefined) return { kind: 'not-found' };
    if (!(await verifyPassword(currentPassword, stored.record.passwordHash)))
      return { kind: 'wrong-password' };
    const next = { ...stored.record, passwordHash: await hashPassword(newPassword) };
    const result = await writeUser(this.db, stored, next, EVENT_TYPE_PASSWORD_CHANGED);
    this.onUsersChanged();
    return result;
  }

  async deleteUser(login: string): Promise<UserWriteResult> {
    const result = await deleteUser(this.db, login);
    this.onUsersChanged();
    return result;
  }

  private async modifyUser(
    login: string,
    eventType: string,
    change: (record: UserRecord) => Promise<UserRecord>,
  ): Promise<UserWriteResult> {
    const stored = await readUser(this.db, login);
    if (stored === undefined) return { kind: 'not-found' };
    const result = await writeUser(this.db, stored, await change(stored.record), eventType);
    this.onUsersChanged();
    return result;
  }

  /**
   * 'existing' when `stream` exists here; 'arrived' when a write to it was committed here within
   * `timeoutMs`; otherwise 'missing'.
   */
  private async streamCommitted(stream: string, timeoutMs: number): Promise<'existing' | 'arrived' | 'missing'> {
    let notify: (() => void) | undefined;
    const committed = new Promise<void>((resolve) => { notify = resolve; });
    const unsubscribe = this.db.onCommitted((write) => { if (write.stream === stream) notify?.(); });
    let timer: NodeJS.Timeout | undefined;
    try {
      // Subscribed first: a write committed between the check and the wait is not missed.
      if ((await this.db.streamState(stream)).kind !== 'no-stream') return 'existing';
      const timedOut = new Promise<'missing'>((resolve) => { timer = setTimeout(() => resolve('missing'), timeoutMs); });
      return await Promise.race([committed.then(() => 'arrived' as const), timedOut]);
    } finally {
      clearTimeout(timer);
      unsubscribe();
    }
  }

  private async verifyCredentials(login: string, password: string): Promise<Principal | undefined> {
    const stored = await readUser(this.db, login);
    if (stored === undefined || stored.record.disabled) return undefined;
    if (!(await verifyPassword(password, stored.record.passwordHash))) return undefined;
    return { login: stored.record.loginName, groups: [...stored.record.groups] };
  }

  private async streamAcl(stream: string): Promise<StreamAcl | undefined> {
    if (this.aclCache.has(stream)) return this.aclCache.get(stream);
    const generation = this.aclGeneration;
    const { metadata } = await this.db.getStreamMetadata(stream);
    if (generation === this.aclGeneration) {
      if (this.aclCache.size >= ACL_CACHE_ENTRY_COUNT_MAX) this.aclCache.clear();
      this.aclCache.set(stream, metadata.acl);
    }
    return metadata.acl;
  }

  private async systemSettings(): Promise<SystemSettings> {
    if (this.settings !== undefined) return this.settings;
    const generation = this.aclGeneration;
    const settings = await this.readSystemSettings();
    if (generation === this.aclGeneration) this.settings = settings;
    return settings;
  }

  private async readSystemSettings(): Promise<SystemSettings> {
    const last = await this.db.readEvent(SETTINGS_STREAM, -1);
    if (last.kind !== 'success') return {};
    try {
      return parseSystemSettings(JSON.parse(last.event.data.toString('utf8')));
    } catch {
      this.log.warn(
        { eventNumber: last.event.eventNumber },
        'settings event is not valid JSON; using defaults',
      );
      return {};
    }
  }

  private onCommitted(stream: string): void {
    if (stream.startsWith('$$')) {
      this.aclGeneration += 1;
      this.aclCache.delete(stream.slice(2));
      if (loginOfUserStream(stream.slice(2)) !== undefined) this.onUsersChanged();
    } else if (stream === SETTINGS_STREAM) {
      this.aclGeneration += 1;
      this.settings = undefined;
    } else if (loginOfUserStream(stream) !== undefined) {
      this.onUsersChanged();
    }
  }

  private onUsersChanged(): void {
    this.credentials.clear();
  }
}

function toDetails(stored: StoredUser): UserDetails {
  const { loginName, fullName, groups, disabled } = stored.record;
  return { loginName, fullName, groups: [...groups], disabled, updatedMs: stored.updatedMs };
}
