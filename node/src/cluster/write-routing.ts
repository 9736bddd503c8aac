/**
 * Write routing on a cluster member: a client write goes to this node's engine when it leads, to
 * the leader through the replica link when it follows, and waits for a route when there is none
 * (an election, a resignation, the storage reopening after a truncation). The node (cluster-node.ts)
 * says which route there is and wakes the waiting writes whenever its role or link changes.
 *
 * A write the leader refused while it stepped down (EDB_NOT_LEADER), or whose forwarding link
 * dropped (EDB_NOT_READY), is sent again to whichever node leads next, with the same event ids: the
 * idempotency rules make the second attempt a no-op when the first one stayed in the log (a new
 * leader holds every write of earlier terms it kept before it takes writes). So a planned
 * resignation, or a leader lost, costs writers latency rather than errors. The write fails ("Server
 * Is Not Ready", or the last refusal) only when no leader took it within the prepare and commit
 * timeouts of waiting; each attempt keeps its own limit of the same length ("Write timeout", never
 * retried: the write may be pending).
 */
import type { Logger } from 'pino';
import { EventDbError } from '../errors.js';
import type { Clock, ClockTimer } from '../platform/clock.js';
import type { AppendResult, NewEvent } from '../storage/event-db-types.js';
import { notLeader } from '../storage/event-db.js';
import { notReady, writeLocally, type StorageHost, type WriteOp } from './cluster-db.js';
import type { Forward, Forwarded } from './replication/protocol.js';
import type { ReplicaSession } from './replication/replica-session.js';

/** Refusals after which a write is routed again: nothing of it was applied, or a retry is idempotent. */
const RETRYABLE_WRITE_ERRORS: ReadonlySet<string> = new Set(['EDB_NOT_LEADER', 'EDB_NOT_READY']);
/** How often a waiting write looks again for a route when no role change wakes it. */
export const WRITE_ROUTE_POLL_MS = 100;
/** A bound on the routing attempts of one write, so that a refusing leader cannot spin it. */
const MAX_WRITE_ATTEMPTS = 50;

/** Where a client write goes now: this node (the leader), the leader through the replica link, or nowhere yet. */
export type WriteRoute = 'local' | ReplicaSession | undefined;

export interface WriteRoutingDeps {
  readonly log: Logger;
  readonly clock: Clock;
  readonly host: StorageHost;
  /** The prepare plus the commit timeout: how long a write may take, and may wait for a route. */
  readonly writeLimitMs: number;
  readonly route: () => WriteRoute;
  /** This node is Leader (a forwarded write is carried out only then). */
  readonly isLeader: () => boolean;
  readonly isStopped: () => boolean;
  /** The node state, for messages and logs. */
  readonly describe: () => string;
}

export class WriteRouting {
  private readonly waiters = new Set<() => void>();

  constructor(private readonly deps: WriteRoutingDeps) {}

  /** A client write, routed as the node's role says. */
  write(op: WriteOp): Promise<AppendResult> {
    return this.routeWrite(() => writeLocally(this.deps.host.engine, op), toForward(op));
  }

  /** A scavenge point for a scavenge on this node: the leader writes it (see EngineScavenging). */
  writeScavengePoint(threshold: number): Promise<AppendResult> {
    return this.routeWrite(() => this.deps.host.engine.writeScavengePoint(threshold), { op: 'scavenge-point', stream: '', expectedVersion: -2, threshold });
  }

  /** Resolves when the node's role or its link to the leader changes, or after `timeoutMs`. */
  changeOrTimeout(timeoutMs: number): Promise<void> {
    return new Promise((resolve) => {
      let timer: ClockTimer | undefined;
      const done = (): void => {
        this.deps.clock.clearTimer(timer);
        this.waiters.delete(done);
        resolve();
      };
      timer = this.deps.clock.setTimer(timeoutMs, done);
      this.waiters.add(done);
    });
  }

  /** The node's role or link changed: every waiting write looks for its route again. */
  changed(): void {
    for (const waiter of [...this.waiters]) waiter();
  }

  /**
   * A write a follower forwarded: carried out here only while this node leads. Otherwise the
   * refusal goes back at once and the follower routes the write again (it may know the new leader
   * before this node does; forwarding on from here would race its time limit).
   */
  async carryOutForwarded(request: Forward): Promise<Forwarded> {
    const limitMs = this.deps.writeLimitMs;
    try {
      if (!this.deps.isLeader() || !this.deps.host.available) throw notLeader(`this node is ${this.deps.describe()}, not the leader`);
      const engine = this.deps.host.engine;
      const result = await withTimeout(this.deps.clock, request.op === 'scavenge-point' ? engine.writeScavengePoint(request.threshold ?? 0) : writeLocally(engine, fromForward(request)), limitMs);
      return { id: request.id, result };
    } catch (err: unknown) {
      const e = err instanceof EventDbError ? err : new EventDbError('EDB_NOT_READY', err instanceof Error ? err.message : String(err), { httpStatus: 503 });
      return { id: request.id, error: { code: e.code, message: e.message, httpStatus: e.httpStatus } };
    }
  }

  private async routeWrite(local: () => Promise<AppendResult>, forward: Omit<Forward, 'id'>): Promise<AppendResult> {
    const { clock, writeLimitMs: limitMs } = this.deps;
    let waitingSinceMs = clock.nowMs();
    let refusal: EventDbError | undefined;
    let attempts = 0;
    for (;;) {
      const route = this.deps.route();
      if (route !== undefined && attempts < MAX_WRITE_ATTEMPTS) {
        attempts += 1;
        try {
          return route === 'local' ? await withTimeout(clock, local(), limitMs) : await this.forwardWrite(route, forward, limitMs);
        } catch (err: unknown) {
          if (!(err instanceof EventDbError) || !RETRYABLE_WRITE_ERRORS.has(err.code)) throw err;
          refusal = err;
          waitingSinceMs = clock.nowMs();
          this.deps.log.debug({ err, attempts, state: this.deps.describe() }, 'write refused by a leader stepping down or a dropped link: sent again to the next leader');
        }
      }
      const leftMs = waitingSinceMs + limitMs - clock.nowMs();
      if (leftMs <= 0 || this.deps.isStopped() || attempts >= MAX_WRITE_ATTEMPTS) {
        throw refusal ?? notReady(`no leader took the write within ${limitMs} ms (this node is ${this.deps.describe()})`);
      }
      await this.changeOrTimeout(Math.min(leftMs, WRITE_ROUTE_POLL_MS));
    }
  }

  private async forwardWrite(replica: ReplicaSession, request: Omit<Forward, 'id'>, limitMs: number): Promise<AppendResult> {
    const answer = await withTimeout(this.deps.clock, replica.forward(request), limitMs).catch((err: unknown) => {
      if (err instanceof EventDbError) throw err;
      // The link dropped before the leader answered: the write may or may not have been done.
      throw notReady(`${err instanceof Error ? err.message : String(err)}; the write may or may not have been done: retry it with the same event IDs`);
    });
    if (answer.error) throw new EventDbError(answer.error.code as never, answer.error.message, { httpStatus: answer.error.httpStatus });
    return answer.result as AppendResult;
  }
}

function withTimeout<T>(clock: Clock, promise: Promise<T>, limitMs: number): Promise<T> {
  let timer: ClockTimer | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = clock.setTimer(limitMs, () => reject(new EventDbError('EDB_WRITE_TIMEOUT', 'Write timeout', { httpStatus: 500, details: { reason: 'Write timeout' } })));
  });
  return Promise.race([promise, timeout]).finally(() => clock.clearTimer(timer));
}

function toForward(op: WriteOp): Omit<Forward, 'id'> {
  switch (op.op) {
    case 'append':
      return { op: 'append', stream: op.stream, expectedVersion: op.expectedVersion, events: op.events.map(encodeEvent) };
    case 'delete':
      return { op: 'delete', stream: op.stream, expectedVersion: op.expectedVersion, hard: op.hard };
    case 'metadata':
      return { op: 'metadata', stream: op.stream, expectedVersion: op.expectedVersion, metadata: op.metadata, ...(op.eventId === undefined ? {} : { eventId: op.eventId }) };
  }
}

function fromForward(f: Forward): WriteOp {
  switch (f.op) {
    case 'append':
      return { op: 'append', stream: f.stream, expectedVersion: f.expectedVersion, events: (f.events ?? []).map(decodeEvent) };
    case 'delete':
      return { op: 'delete', stream: f.stream, expectedVersion: f.expectedVersion, hard: f.hard ?? false };
    case 'metadata':
      return { op: 'metadata', stream: f.stream, expectedVersion: f.expectedVersion, metadata: f.metadata ?? {}, ...(f.eventId === undefined ? {} : { eventId: f.eventId }) };
    case 'scavenge-point':
      throw new EventDbError('EDB_BAD_REQUEST', 'scavenge points are not forwarded', { httpStatus: 400 });
  }
}

function encodeEvent(e: NewEvent): { eventId: string; eventType: string; data: string; metadata: string; isJson: boolean } {
  return { eventId: e.eventId, eventType: e.eventType, data: Buffer.from(e.data).toString('base64'), metadata: Buffer.from(e.metadata).toString('base64'), isJson: e.isJson };
}

function decodeEvent(e: { eventId: string; eventType: string; data: string; metadata: string; isJson: boolean }): NewEvent {
  return { eventId: e.eventId, eventType: e.eventType, data: Buffer.from(e.data, 'base64'), metadata: Buffer.from(e.metadata, 'base64'), isJson: e.isJson };
}
