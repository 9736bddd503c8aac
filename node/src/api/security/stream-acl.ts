/**
 * Stream access-control evaluation, following EventStoreDB's legacy model.
 *
 * For an action on a stream the allowed roles are, per action: the stream's own `$acl` entry,
 * else the server-wide default from the `$settings` stream (`$systemStreamAcl` for streams whose
 * name starts with `$`, `$userStreamAcl` otherwise), else the built-in default (`$all` for user
 * streams, `$admins` for system streams; reading `$all` is open to every authenticated user, as
 * the spec says). Members of `$admins` are always allowed. The role `$all`
 * admits any principal the caller let through (authenticated users; anonymous ones only when
 * anonymous stream access is enabled). Metastream access (`$$<stream>`) is checked as `mr`/`mw`
 * on the original stream. Writing to or deleting `$all` is never allowed.
 *
 * Everything here is pure; reading metadata and settings is the caller's job.
 */
import type { Principal, StreamAccess } from '../auth-types.js';
import type { StreamAcl } from '../../storage/event-db-types.js';

export const ROLE_ALL = '$all';
export const ROLE_ADMINS = '$admins';
export const ROLE_OPS = '$ops';
export const ALL_STREAM = '$all';
export const SETTINGS_STREAM = '$settings';

export interface SystemSettings {
  readonly userStreamAcl?: StreamAcl;
  readonly systemStreamAcl?: StreamAcl;
}

const DEFAULT_USER_STREAM_ROLES: readonly string[] = [ROLE_ALL];
const DEFAULT_SYSTEM_STREAM_ROLES: readonly string[] = [ROLE_ADMINS];
const ALL_STREAM_READ_ROLES: readonly string[] = [ROLE_ALL];

/** The stream whose ACL governs the request, and the ACL entry to consult. */
export interface AclTarget {
  readonly stream: string;
  readonly access: StreamAccess;
}

/** Maps metastream access onto the original stream's metadata roles. */
export function resolveAclTarget(stream: string, access: StreamAccess): AclTarget {
  if (!stream.startsWith('$$')) return { stream, access };
  const original = stream.slice(2);
  return { stream: original, access: access === 'r' || access === 'mr' ? 'mr' : 'mw' };
}

export function isSystemStream(stream: string): boolean {
  return stream.startsWith('$');
}

/** Roles allowed to perform `access` on `stream`: stream ACL, else settings, else default. */
export function effectiveRoles(
  stream: string,
  access: StreamAccess,
  streamAcl: StreamAcl | undefined,
  settings: SystemSettings,
): readonly string[] {
  const own = streamAcl?.[access];
  if (own !== undefined) return own;
  // The spec: reading `$all` needs user credentials, any user's (the caller requires them); its own
  // metadata (`$$$all`) can narrow it. What a reader is admitted to is then filtered event by event
  // (read-authorization.ts), so `$all` shows nobody what the source streams' ACLs deny them.
  if (stream === ALL_STREAM && access === 'r') return ALL_STREAM_READ_ROLES;
  const system = isSystemStream(stream);
  const fromSettings = (system ? settings.systemStreamAcl : settings.userStreamAcl)?.[access];
  if (fromSettings !== undefined) return fromSettings;
  return system ? DEFAULT_SYSTEM_STREAM_ROLES : DEFAULT_USER_STREAM_ROLES;
}

/** A user's roles: its groups plus its own login name (EventStoreDB gives every user both). */
export function principalRoles(principal: Principal): readonly string[] {
  // A login that looks like a system role ('$admins') must not grant that role.
  return principal.login.startsWith('$')
    ? principal.groups
    : [...principal.groups, principal.login];
}

export function isMemberOf(principal: Principal | undefined, role: string): boolean {
  return principal !== undefined && principal.groups.includes(role);
}

/** True when any of `roles` admits the principal (undefined = anonymous: only `$all`). */
export function rolesAdmit(roles: readonly string[], principal: Principal | undefined): boolean {
  if (roles.includes(ROLE_ALL)) return true;
  if (principal === undefined) return false;
  return principalRoles(principal).some((role) => roles.includes(role));
}

/**
 * Parses the data of the last `$settings` event. Malformed content yields empty settings, as
 * EventStoreDB falls back to its defaults when the JSON cannot be read.
 */
export function parseSystemSettings(json: unknown): SystemSettings {
  if (typeof json !== 'object' || json === null) return {};
  const o = json as Record<string, unknown>;
  const userStreamAcl = parseAclObject(o['$userStreamAcl']);
  const systemStreamAcl = parseAclObject(o['$systemStreamAcl']);
  return {
    ...(userStreamAcl === undefined ? {} : { userStreamAcl }),
    ...(systemStreamAcl === undefined ? {} : { systemStreamAcl }),
  };
}

const ACL_KEYS: ReadonlyArray<readonly [string, StreamAccess]> = [
  ['$r', 'r'],
  ['$w', 'w'],
  ['$d', 'd'],
  ['$mr', 'mr'],
  ['$mw', 'mw'],
];

/** Parses an `$acl`-shaped object: each entry a role string or an array of them. */
export function parseAclObject(value: unknown): StreamAcl | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  const o = value as Record<string, unknown>;
  const acl: Partial<Record<StreamAccess, readonly string[]>> = {};
  for (const [key, access] of ACL_KEYS) {
    const roles = parseRoles(o[key]);
    if (roles !== undefined) acl[access] = roles;
  }
  return acl;
}

function parseRoles(value: unknown): readonly string[] | undefined {
  if (typeof value === 'string') return [value];
  if (Array.isArray(value) && value.every((v) => typeof v === 'string')) return value as string[];
  return undefined;
}
