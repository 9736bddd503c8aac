/**
 * Typed errors with stable codes. Expected outcomes (stream not found, wrong expected version)
 * are returned as values, never thrown; these classes are for operating errors (bad input,
 * config) and for fatal conditions (corruption, lost durability) that must stop the node.
 */
export type ErrorCode =
  | 'EDB_CONFIG_INVALID'
  | 'EDB_BAD_REQUEST'
  | 'EDB_NOT_FOUND'
  | 'EDB_UNAUTHORIZED'
  | 'EDB_EVENT_TOO_LARGE'
  | 'EDB_APPEND_TOO_LARGE'
  | 'EDB_CHUNK_CORRUPT'
  | 'EDB_CHECKPOINT_CORRUPT'
  | 'EDB_FSYNC_FAILED'
  | 'EDB_WRITE_FAILED'
  | 'EDB_INDEX_CORRUPT'
  | 'EDB_CLOSED'
  | 'EDB_DIRECTORY_LOCKED'
  | 'EDB_DIRECTORY_LOCK_FAILED'
  | 'EDB_ADDRESS_UNAVAILABLE'
  | 'EDB_REPLICATION_MISMATCH'
  | 'EDB_NOT_LEADER'
  | 'EDB_NOT_READY'
  | 'EDB_WRITE_TIMEOUT'
  | 'EDB_READ_ONLY_REPLICA'
  | 'EDB_SCAVENGE_RUNNING'
  | 'EDB_CERTIFICATE_INVALID'
  | 'EDB_BACKUP_FAILED'
  | 'EDB_BACKUP_INVALID'
  | 'EDB_BACKUP_NODE_MISMATCH'
  | 'EDB_RESTORE_REFUSED'
  | 'EDB_INVARIANT';

export class EventDbError extends Error {
  readonly code: ErrorCode;
  readonly httpStatus: number;
  readonly details: Record<string, unknown>;

  constructor(
    code: ErrorCode,
    message: string,
    options: { httpStatus?: number; details?: Record<string, unknown>; cause?: unknown } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'EventDbError';
    this.code = code;
    this.httpStatus = options.httpStatus ?? 500;
    this.details = options.details ?? {};
  }
}

/**
 * A condition after which the node must not keep serving: corruption, fsync failure,
 * a broken invariant. Never caught by generic handlers; the owner logs it and exits non-zero.
 */
export class FatalError extends EventDbError {
  constructor(code: ErrorCode, message: string, options: { cause?: unknown; details?: Record<string, unknown> } = {}) {
    super(code, message, { ...options, httpStatus: 500 });
    this.name = 'FatalError';
  }
}

export function assert(condition: unknown, message: string): asserts condition {
  if (!condition) throw new FatalError('EDB_INVARIANT', `invariant violated: ${message}`);
}

export function isErrno(err: unknown, code: string): boolean {
  return typeof err === 'object' && err !== null && (err as { code?: unknown }).code === code;
}
