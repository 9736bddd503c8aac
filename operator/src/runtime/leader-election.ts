/**
 * Leader election on a coordination.k8s.io/v1 Lease, as client-go's leaderelection does it (client-node
 * has none): every replica tries to acquire or renew the Lease every `retryPeriodMs`; the holder
 * renews it, the others take it over once it has not changed for `leaseDurationMs` of their own
 * clock (no trust in other machines' clocks). A leader that cannot renew within
 * `renewDeadlineMs` stops leading (the process then exits, so a fresh one starts as a
 * candidate). Writes use the Lease's resourceVersion, so two candidates cannot both win.
 */
import type { Logger } from 'pino';
import type { Clock } from './clock.js';
import { isAlreadyExists, isConflict, type KubeApi, type KubeObject } from './kube-api.js';
import { LEASES } from './resource-types.js';

export interface LeaseRecord {
  readonly holderIdentity?: string;
  readonly leaseDurationSeconds?: number;
  readonly acquireTime?: string;
  readonly renewTime?: string;
  readonly leaseTransitions?: number;
}

export type LeaseDecision = 'acquire' | 'renew' | 'wait';

/**
 * What a candidate does with the Lease it sees. `observedAtMs` is when this candidate last saw
 * the record change, by its own clock.
 */
export function decideLease(options: {
  readonly record: LeaseRecord | undefined;
  readonly observedAtMs: number;
  readonly identity: string;
  readonly nowMs: number;
  readonly leaseDurationMs: number;
}): LeaseDecision {
  const { record, observedAtMs, identity, nowMs, leaseDurationMs } = options;
  if (record === undefined) return 'acquire';
  const holder = record.holderIdentity ?? '';
  if (holder === identity) return 'renew';
  if (holder === '') return 'acquire';
  const durationMs = (record.leaseDurationSeconds ?? leaseDurationMs / 1000) * 1000;
  return observedAtMs + durationMs <= nowMs ? 'acquire' : 'wait';
}

/** RFC 3339 with microseconds, as metav1.MicroTime is written. */
export function microTime(ms: number): string {
  return new Date(ms).toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}

export interface LeaderElectionOptions {
  readonly api: KubeApi;
  readonly clock: Clock;
  readonly log: Logger;
  readonly namespace: string;
  readonly name: string;
  readonly identity: string;
  /** Default 15 s. */
  readonly leaseDurationMs?: number;
  /** Default 10 s. */
  readonly renewDeadlineMs?: number;
  /** Default 2 s. */
  readonly retryPeriodMs?: number;
}

export class LeaderElection {
  readonly #options: LeaderElectionOptions;
  readonly #abort = new AbortController();
  #leading = false;
  #observed: { record: string; atMs: number } = { record: '', atMs: 0 };
  #lastRenewAtMs = 0;
  #loop: Promise<void> | undefined;

  constructor(options: LeaderElectionOptions) {
    this.#options = options;
  }

  isLeader(): boolean {
    return this.#leading;
  }

  /**
   * Campaigns until this replica leads, calls `onStartedLeading`, keeps renewing, and calls
   * `onStoppedLeading` if it loses the Lease. Resolves when `stop` is called or leadership is lost.
   */
  run(callbacks: { onStartedLeading: () => void; onStoppedLeading: () => void }): Promise<void> {
    this.#loop ??= this.#campaign(callbacks);
    return this.#loop;
  }

  /** Stops campaigning; a leader gives the Lease up so another replica takes over at once. */
  async stop(): Promise<void> {
    this.#abort.abort();
    await this.#loop;
    if (this.#leading) await this.#release();
    this.#leading = false;
  }

  async #campaign(callbacks: { onStartedLeading: () => void; onStoppedLeading: () => void }): Promise<void> {
    const { clock, log } = this.#options;
    const retryPeriodMs = this.#options.retryPeriodMs ?? 2000;
    const renewDeadlineMs = this.#options.renewDeadlineMs ?? 10_000;
    while (!this.#abort.signal.aborted) {
      let held = false;
      try {
        held = await this.#tryAcquireOrRenew();
      } catch (err: unknown) {
        log.warn({ err }, 'leader lease not acquired or renewed');
      }
      if (held) {
        this.#lastRenewAtMs = clock.nowMs();
        if (!this.#leading) {
          this.#leading = true;
          log.info({ lease: this.#options.name, identity: this.#options.identity }, 'became the leader');
          callbacks.onStartedLeading();
        }
      } else if (this.#leading && clock.nowMs() - this.#lastRenewAtMs >= renewDeadlineMs) {
        this.#leading = false;
        log.error({ lease: this.#options.name }, 'lost the leader lease');
        callbacks.onStoppedLeading();
        return;
      }
      await clock.sleep(retryPeriodMs, this.#abort.signal);
    }
  }

  async #tryAcquireOrRenew(): Promise<boolean> {
    const { api, clock, namespace, name, identity } = this.#options;
    const leaseDurationMs = this.#options.leaseDurationMs ?? 15_000;
    const nowMs = clock.nowMs();
    const lease = await api.get(LEASES, namespace, name);
    const record = lease?.['spec'] as LeaseRecord | undefined;
    const recordText = JSON.stringify(record ?? null);
    if (recordText !== this.#observed.record) this.#observed = { record: recordText, atMs: nowMs };
    const decision = decideLease({ record, observedAtMs: this.#observed.atMs, identity, nowMs, leaseDurationMs });
    if (decision === 'wait') return false;
    const spec: LeaseRecord = {
      holderIdentity: identity,
      leaseDurationSeconds: Math.ceil(leaseDurationMs / 1000),
      acquireTime: decision === 'acquire' || record?.acquireTime === undefined ? microTime(nowMs) : record.acquireTime,
      renewTime: microTime(nowMs),
      leaseTransitions: (record?.leaseTransitions ?? 0) + (decision === 'acquire' && record !== undefined ? 1 : 0),
    };
    try {
      if (lease === undefined) {
        await api.create(LEASES, leaseObject(namespace, name, spec, undefined));
      } else {
        await api.replace(LEASES, leaseObject(namespace, name, spec, lease));
      }
    } catch (err: unknown) {
      // Another candidate wrote first: it holds the Lease now.
      if (isConflict(err) || isAlreadyExists(err)) return false;
      throw err;
    }
    this.#observed = { record: JSON.stringify(spec), atMs: nowMs };
    return true;
  }

  async #release(): Promise<void> {
    const { api, clock, namespace, name, identity, log } = this.#options;
    try {
      const lease = await api.get(LEASES, namespace, name);
      const record = lease?.['spec'] as LeaseRecord | undefined;
      if (lease === undefined || record?.holderIdentity !== identity) return;
      const spec: LeaseRecord = { ...record, holderIdentity: '', leaseDurationSeconds: 1, renewTime: microTime(clock.nowMs()) };
      await api.replace(LEASES, leaseObject(namespace, name, spec, lease));
      log.info({ lease: name }, 'released the leader lease');
    } catch (err: unknown) {
      log.warn({ err }, 'leader lease not released; the next leader waits for it to expire');
    }
  }
}

function leaseObject(namespace: string, name: string, spec: LeaseRecord, existing: KubeObject | undefined): KubeObject {
  return {
    apiVersion: 'coordination.k8s.io/v1',
    kind: 'Lease',
    metadata: {
      name,
      namespace,
      ...(existing?.metadata.resourceVersion === undefined ? {} : { resourceVersion: existing.metadata.resourceVersion }),
    },
    spec,
  };
}
