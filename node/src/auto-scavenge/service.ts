/**
 * The auto-scavenge runtime on the leader. It follows leadership: `lead()` rebuilds the state
 * from the streams and starts a tick; `follow()` drops it (the next leader rebuilds it). Every
 * step and every command runs on one serial queue, so the state machine sees one thing at a time:
 *
 * - a step asks `assess` (state.ts) what to do and does it: write an event, resign, start or
 *   poll a node scavenge over HTTP (node-client.ts), stop one to pause;
 * - a command (configure, pause, resume) decides with the pure functions and writes its events.
 *
 * Stopping a node scavenge for a pause runs beside the queue (the node answers once the run has
 * stopped), so status and resume keep answering meanwhile.
 */
import type { Logger } from 'pino';
import { formatTimeSpan } from '../scavenge/time-span.js';
import type { NodeScavengeClient } from './node-client.js';
import {
  applyEvent,
  assess,
  configure,
  nextCycleMs,
  onNodeScavengeObserved,
  pause,
  resume,
  statusOf,
  type Action,
  type AutoScavengeEvent,
  type AutoScavengeState,
  type AutoScavengeStatus,
  type ClusterView,
  type CommandOutcome,
} from './state.js';
import { AutoScavengeStore, type AutoScavengeStoreDb } from './store.js';

export interface AutoScavengeServiceOptions {
  readonly db: AutoScavengeStoreDb;
  readonly log: Logger;
  readonly client: NodeScavengeClient;
  /** The voting members as gossip sees them; undefined while this node does not know yet. */
  readonly view: () => ClusterView | undefined;
  /** Leader resignation (cluster-node.ts). */
  readonly resign: () => void;
  readonly tickMs?: number;
  readonly nowMs?: () => number;
}

export interface AutoScavengeStatusDto {
  readonly state: AutoScavengeStatus;
  readonly schedule: string | null;
  readonly timeUntilNextCycle: string | null;
}

/** Not the leader yet, or still rebuilding the state. */
export type NotReady = { readonly status: 503; readonly message: string };

const DEFAULT_TICK_MS = 1000;
/** A leader still leading this long after it resigned asks again. */
const RESIGN_RETRY_MS = 30_000;
/** Steps carried out one after another in one tick before yielding (appends chain). */
const STEPS_PER_TICK_MAX = 10;

export class AutoScavengeService {
  private readonly log: Logger;
  private readonly store: AutoScavengeStore;
  private readonly nowMs: () => number;
  private state: AutoScavengeState | undefined;
  private queue: Promise<unknown> = Promise.resolve();
  private timer: NodeJS.Timeout | undefined;
  private stepQueued = false;
  /** Bumped on every change of leadership: work of an older term is dropped. */
  private term = 0;
  private lastNotice: string | undefined;
  private stopping = false;
  private resignRequestedAtMs: number | undefined;
  private leaderStartMs = 0;

  constructor(private readonly options: AutoScavengeServiceOptions) {
    this.log = options.log;
    this.store = new AutoScavengeStore(options.db);
    this.nowMs = options.nowMs ?? Date.now;
  }

  /** This node leads: rebuild the state and start driving cluster scavenges. */
  lead(): void {
    this.term++;
    this.state = undefined;
    this.leaderStartMs = this.nowMs();
    this.resignRequestedAtMs = undefined;
    this.stopping = false;
    this.queueStep();
    clearInterval(this.timer);
    this.timer = setInterval(() => this.tick(), this.options.tickMs ?? DEFAULT_TICK_MS);
    this.timer.unref();
  }

  /** This node no longer leads. */
  follow(): void {
    this.term++;
    this.state = undefined;
    clearInterval(this.timer);
    this.timer = undefined;
  }

  async close(): Promise<void> {
    this.follow();
    this.options.client.close();
    await this.queue.catch(() => undefined);
  }

  status(): AutoScavengeStatusDto | NotReady {
    const state = this.state;
    if (state === undefined) return notReady();
    const next = nextCycleMs(state);
    return {
      state: statusOf(state),
      schedule: state.schedule ?? null,
      timeUntilNextCycle: next === undefined ? null : formatTimeSpan(Math.max(0, next - this.nowMs())),
    };
  }

  configure(schedule: string): Promise<CommandOutcome | NotReady> {
    return this.command(() => configure(schedule, this.nowMs()));
  }

  pause(): Promise<CommandOutcome | NotReady> {
    return this.command((state) => pause(state, this.nowMs()));
  }

  resume(): Promise<CommandOutcome | NotReady> {
    return this.command((state) => resume(state, this.nowMs()));
  }

  private command(decide: (state: AutoScavengeState) => CommandOutcome): Promise<CommandOutcome | NotReady> {
    const term = this.term;
    return this.enqueue(async () => {
      const state = this.state;
      if (state === undefined || term !== this.term) return notReady();
      const outcome = decide(state);
      if (outcome.status === 400) return outcome;
      for (const event of outcome.events) {
        if (!(await this.write(event, term))) return notReady();
      }
      this.queueStep();
      return outcome;
    });
  }

  private enqueue<T>(work: () => Promise<T>): Promise<T> {
    const next = this.queue.then(work, work);
    this.queue = next.catch(() => undefined);
    return next;
  }

  private tick(): void {
    this.queueStep();
  }

  private queueStep(): void {
    if (this.stepQueued) return;
    this.stepQueued = true;
    const term = this.term;
    void this.enqueue(async () => {
      this.stepQueued = false;
      // Rebuilt on the first tick as leader, and again on later ticks until it succeeds.
      if (this.state === undefined && term === this.term) await this.rebuild(term);
      for (let i = 0; i < STEPS_PER_TICK_MAX; i++) {
        if (!(await this.step(term))) break;
      }
    }).catch((err: unknown) => this.notice('warn', `auto-scavenge step failed: ${err instanceof Error ? err.message : String(err)}`, { err }));
  }

  private async rebuild(term: number): Promise<void> {
    try {
      const state = await this.store.load(this.leaderStartMs);
      if (term !== this.term) return;
      this.state = state;
      this.log.info({ state: statusOf(state), schedule: state.schedule ?? null, cluster: state.cluster?.clusterScavengeId }, 'auto-scavenge: state rebuilt');
    } catch (err: unknown) {
      this.notice('warn', `auto-scavenge: could not rebuild the state (retrying): ${err instanceof Error ? err.message : String(err)}`, { err });
    }
  }

  /** One action; true when another may follow at once. */
  private async step(term: number): Promise<boolean> {
    const state = this.state;
    const view = this.options.view();
    if (state === undefined || view === undefined || term !== this.term) return false;
    const action = assess(state, view, this.nowMs());
    return this.carryOut(action, term);
  }

  private async carryOut(action: Action, term: number): Promise<boolean> {
    const { client } = this.options;
    switch (action.kind) {
      case 'idle':
        return false;
      case 'wait':
        this.notice('info', `auto-scavenge: ${action.reason}`);
        return false;
      case 'append':
        return this.write(action.event, term);
      case 'resign': {
        // Asked once per term; again if this node still leads a while later (a refused resignation).
        const nowMs = this.nowMs();
        if (this.resignRequestedAtMs === undefined || nowMs - this.resignRequestedAtMs > RESIGN_RETRY_MS) {
          this.resignRequestedAtMs = nowMs;
          this.log.info('auto-scavenge: every other node is scavenged; the leader resigns so that it can be scavenged');
          this.options.resign();
        }
        return false;
      }
      case 'start-node-scavenge': {
        const started = await client.start(action.node);
        if (started.kind === 'failed') {
          this.notice('warn', `auto-scavenge: cannot start the scavenge of ${action.node.nodeId}: ${started.reason}`);
          return false;
        }
        return this.write({
          type: '$node-scavenge-started',
          data: { nodeId: action.node.nodeId, scavengeId: started.scavengeId, startedAt: new Date(this.nowMs()).toISOString() },
        }, term);
      }
      case 'monitor-node-scavenge': {
        const observed = await client.observe(action.node, action.scavengeId);
        const event = onNodeScavengeObserved(action.node.nodeId, action.scavengeId, observed, this.nowMs());
        if (event === undefined) return false;
        if (event.type === '$node-designated') {
          this.log.info({ nodeId: action.node.nodeId, scavengeId: action.scavengeId, observed }, 'auto-scavenge: the node lost its scavenge (restarted); starting it again');
        }
        return this.write(event, term);
      }
      case 'stop-node-scavenge':
        this.stopInBackground(action.node, action.scavengeId, term);
        return false;
    }
  }

  private stopInBackground(node: Parameters<NodeScavengeClient['stop']>[0], scavengeId: string, term: number): void {
    if (this.stopping) return;
    this.stopping = true;
    this.log.info({ nodeId: node.nodeId, scavengeId }, 'auto-scavenge: pausing; stopping the running node scavenge');
    void this.options.client.stop(node, scavengeId).then(
      () => this.enqueue(async () => {
        this.stopping = false;
        if (term !== this.term || this.state?.pause !== 'pausing') return;
        await this.write({ type: '$paused', data: { pausedAt: new Date(this.nowMs()).toISOString() } }, term);
      }),
      (err: unknown) => {
        this.stopping = false;
        this.notice('warn', `auto-scavenge: stopping the scavenge of ${node.nodeId} failed: ${err instanceof Error ? err.message : String(err)}`);
      },
    );
  }

  /** Writes one event and applies it; on a conflict reloads. False when nothing was applied. */
  private async write(event: AutoScavengeEvent, term: number): Promise<boolean> {
    if (term !== this.term || this.state === undefined) return false;
    const outcome = await this.store.append(event);
    if (term !== this.term) return false;
    if (outcome === 'conflict') {
      this.log.warn({ eventType: event.type }, 'auto-scavenge: the streams changed under this leader; rebuilding the state');
      this.state = undefined;
      await this.rebuild(term);
      return false;
    }
    this.state = applyEvent(this.state, event);
    this.lastNotice = undefined;
    this.log.info({ eventType: event.type, ...event.data, state: statusOf(this.state) }, `auto-scavenge: ${event.type.slice(1)}`);
    return true;
  }

  /** Logs a recurring condition once, until something else happens. */
  private notice(level: 'info' | 'warn', message: string, fields: Record<string, unknown> = {}): void {
    if (message === this.lastNotice) return;
    this.lastNotice = message;
    this.log[level](fields, message);
  }
}

function notReady(): NotReady {
  return { status: 503, message: 'Auto-scavenge is not ready on this node yet (no leader, or the leader is loading its state); retry shortly' };
}
