/**
 * Internal users kept as events, as EventStoreDB does.
 *
 * Each user lives in its own system stream `$user-<login>`; the latest event holds the whole
 * record (`$UserCreated`, `$UserUpdated` or `$PasswordChanged`). The `$users` stream indexes
 * login names (event type `$User`, data = the login name as plain text) so that users can be
 * listed; a deleted user's stream is soft-deleted and the name is skipped when listing.
 * Writes use the user stream's version as the expected version, so concurrent changes to the
 * same user cannot silently overwrite each other.
 */
import { randomUUID } from 'node:crypto';

import { ExpectedVersion } from '../../storage/event-db-types.js';
import type { AppendResult, EventDb, NewEvent, RecordedEvent } from '../../storage/event-db-types.js';
import { parsePasswordHash, type PasswordHash } from './password-hash.js';

export const USERS_STREAM = '$users';
export const USER_STREAM_PREFIX = '$user-';
export const EVENT_TYPE_USER_CREATED = '$UserCreated';
export const EVENT_TYPE_USER_UPDATED = '$UserUpdated';
export const EVENT_TYPE_PASSWORD_CHANGED = '$PasswordChanged';
export const EVENT_TYPE_USER_INDEXED = '$User';

/** The full stored record. `passwordHash` must never reach a response or a log line. */
export interface UserRecord {
  readonly loginName: string;
  readonly fullName: string;
  readonly groups: readonly string[];
  readonly disabled: boolean;
  readonly passwordHash: PasswordHash;
}

export interface StoredUser {
  readonly record: UserRecord;
  /** Event number of the latest record, used as the expected version of the next write. */
  readonly version: number;
  readonly updatedMs: number;
}

export type UserWriteResult =
  | { readonly kind: 'ok' }
  | { readonly kind: 'conflict' }
  | { readonly kind: 'not-found' }
  /** Refused: the change would leave no enabled `$admins` member (see admin-guard.ts). */
  | { readonly kind: 'last-admin'; readonly message: string };

export function userStreamName(login: string): string {
  return `${USER_STREAM_PREFIX}${login}`;
}

/** The login a user stream belongs to, or undefined for other streams. */
export function loginOfUserStream(stream: string): string | undefined {
  if (!stream.startsWith(USER_STREAM_PREFIX)) return undefined;
  return stream.slice(USER_STREAM_PREFIX.length);
}

export async function readUser(db: EventDb, login: string): Promise<StoredUser | undefined> {
  const result = await db.readEvent(userStreamName(login), -1);
  if (result.kind !== 'success') return undefined;
  const record = decodeUserRecord(result.event);
  // The stream name is the identity: a record claiming another login is not trusted.
  if (record === undefined || record.loginName !== login) return undefined;
  return { record, version: result.event.eventNumber, updatedMs: result.event.createdMs };
}

/** Creates the user; `conflict` when a live user with this login exists. */
export async function createUser(db: EventDb, record: UserRecord): Promise<UserWriteResult> {
  const stream = userStreamName(record.loginName);
  const state = await db.streamState(stream);
  if (state.kind === 'hard-deleted') return { kind: 'conflict' };
  if (state.kind === 'exists' && !state.softDeleted) return { kind: 'conflict' };
  // A soft-deleted user stream is recreated by appending with NoStream (EventStoreDB semantics).
  const expected = state.kind === 'exists' ? state.lastEventNumber : ExpectedVersion.NoStream;
  const written = await db.append(stream, expected, [userEvent(EVENT_TYPE_USER_CREATED, record)]);
  if (written.kind !== 'success') return { kind: 'conflict' };
  const indexed = await db.append(USERS_STREAM, ExpectedVersion.Any, [
    {
      eventId: randomUUID(),
      eventType: EVENT_TYPE_USER_INDEXED,
      data: Buffer.from(record.loginName, 'utf8'),
      metadata: new Uint8Array(0),
      isJson: false,
    },
  ]);
  return indexed.kind === 'success' ? { kind: 'ok' } : { kind: 'conflict' };
}

/** Writes a new version of an existing user, guarded by the version it was read at. */
export async function writeUser(
  db: EventDb,
  current: StoredUser,
  next: UserRecord,
  eventType: string,
): Promise<UserWriteResult> {
  const stream = userStreamName(next.loginName);
  return userWriteResult(await db.append(stream, current.version, [userEvent(eventType, next)]));
}

/** An engine write result as a user operation's outcome. */
function userWriteResult(result: AppendResult): UserWriteResult {
  switch (result.kind) {
    case 'success':
      return { kind: 'ok' };
    case 'wrong-expected-version':
      return { kind: 'conflict' };
    case 'stream-deleted':
      return { kind: 'not-found' };
  }
}

export async function deleteUser(db: EventDb, login: string): Promise<UserWriteResult> {
  const current = await readUser(db, login);
  if (current === undefined) return { kind: 'not-found' };
  return userWriteResult(await db.deleteStream(userStreamName(login), current.version, false));
}

/** Login names in `$users`, first-created first, without duplicates (a name may be re-created). */
export async function listLoginNames(db: EventDb): Promise<string[]> {
  const names = new Set<string>();
  const pageSize = 500;
  let from = 0;
  for (;;) {
    const page = await db.readStream(USERS_STREAM, from, pageSize, 'forward');
    if (page.kind !== 'success') return [...names];
    for (const event of page.events) {
      if (event.eventType === EVENT_TYPE_USER_INDEXED) names.add(event.data.toString('utf8'));
    }
    if (page.isEndOfStream || page.events.length === 0 || page.nextEventNumber <= from) {
      return [...names];
    }
    from = page.nextEventNumber;
  }
}

function userEvent(eventType: string, record: UserRecord): NewEvent {
  return {
    eventId: randomUUID(),
    eventType,
    data: Buffer.from(JSON.stringify(record), 'utf8'),
    metadata: new Uint8Array(0),
    isJson: true,
  };
}

/** Decodes a user record; records written by hand through the streams API may be malformed. */
export function decodeUserRecord(event: RecordedEvent): UserRecord | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(event.data.toString('utf8'));
  } catch {
    return undefined;
  }
  if (typeof parsed !== 'object' || parsed === null) return undefined;
  const o = parsed as Record<string, unknown>;
  const passwordHash = parsePasswordHash(o['passwordHash']);
  const groups = o['groups'];
  if (typeof o['loginName'] !== 'string' || passwordHash === undefined) return undefined;
  return {
    loginName: o['loginName'],
    fullName: typeof o['fullName'] === 'string' ? o['fullName'] : '',
    groups: Array.isArray(groups) ? groups.filter((g): g is string => typeof g === 'string') : [],
    disabled: o['disabled'] === true,
    passwordHash,
  };
}
