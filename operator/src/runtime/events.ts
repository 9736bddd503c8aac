/**
 * Kubernetes Events (events.k8s.io/v1) about our objects, with a CamelCase reason and an action:
 * what `kubectl describe` and `kubectl events` show. A repeat of the same event for the same
 * object within 30 minutes updates the first one's series (count, last time) instead of adding
 * another. Recording never fails a reconcile: a lost Event is logged and forgotten.
 */
import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import type { Clock } from './clock.js';
import { isNamespaceTerminating, isNotFound, type KubeApi, type KubeObject } from './kube-api.js';
import { microTime } from './leader-election.js';
import { EVENTS } from './resource-types.js';

export type EventType = 'Normal' | 'Warning';

export interface EventRecorderOptions {
  readonly api: KubeApi;
  readonly clock: Clock;
  readonly log: Logger;
  /** `reportingController`, e.g. eventdb.io/eventdb-operator. */
  readonly controller: string;
  /** `reportingInstance`: this replica (its pod name). */
  readonly instance: string;
}

export interface EventInput {
  readonly type: EventType;
  /** CamelCase, machine-readable: RollingUpdateStarted, LeaderResigned, ... */
  readonly reason: string;
  /** What the operator did or is about to do: Create, Restart, Resign, Scale, ... */
  readonly action: string;
  readonly note: string;
}

const SERIES_WINDOW_MS = 30 * 60_000;
const REMEMBERED_EVENTS_MAX = 2000;
const NOTE_LENGTH_MAX = 1024;

export interface EventSink {
  record(regarding: KubeObject, event: EventInput): Promise<void>;
}

export class EventRecorder implements EventSink {
  readonly #options: EventRecorderOptions;
  readonly #recent = new Map<string, { name: string; namespace: string; count: number; firstAtMs: number }>();

  constructor(options: EventRecorderOptions) {
    this.#options = options;
  }

  async record(regarding: KubeObject, event: EventInput): Promise<void> {
    const { api, clock, log } = this.#options;
    const namespace = regarding.metadata.namespace ?? 'default';
    const note = event.note.length > NOTE_LENGTH_MAX ? `${event.note.slice(0, NOTE_LENGTH_MAX - 1)}…` : event.note;
    const seriesKey = `${regarding.metadata.uid ?? regarding.metadata.name}|${event.type}|${event.reason}|${note}`;
    const nowMs = clock.nowMs();
    try {
      const previous = this.#recent.get(seriesKey);
      if (previous !== undefined && nowMs - previous.firstAtMs < SERIES_WINDOW_MS) {
        previous.count++;
        try {
          await api.patch(EVENTS, previous.namespace, previous.name, {
            series: { count: previous.count, lastObservedTime: microTime(nowMs) },
          });
          return;
        } catch (err: unknown) {
          if (!isNotFound(err)) throw err;
        }
      }
      const name = `${regarding.metadata.name ?? 'object'}.${randomBytes(8).toString('hex')}`;
      await api.create(EVENTS, {
        apiVersion: 'events.k8s.io/v1',
        kind: 'Event',
        metadata: { name, namespace },
        eventTime: microTime(nowMs),
        reportingController: this.#options.controller,
        reportingInstance: this.#options.instance,
        action: event.action,
        reason: event.reason,
        note,
        type: event.type,
        regarding: {
          apiVersion: regarding.apiVersion,
          kind: regarding.kind,
          name: regarding.metadata.name,
          namespace,
          uid: regarding.metadata.uid,
          resourceVersion: regarding.metadata.resourceVersion,
        },
      });
      this.#remember(seriesKey, { name, namespace, count: 1, firstAtMs: nowMs });
    } catch (err: unknown) {
      if (isNamespaceTerminating(err)) return;
      log.warn({ err, reason: event.reason }, 'event not recorded');
    }
  }

  #remember(key: string, entry: { name: string; namespace: string; count: number; firstAtMs: number }): void {
    this.#recent.set(key, entry);
    if (this.#recent.size <= REMEMBERED_EVENTS_MAX) return;
    const oldest = this.#recent.keys().next().value;
    if (oldest !== undefined) this.#recent.delete(oldest);
  }
}
