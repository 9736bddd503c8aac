/**
 * A small Prometheus registry: counters, gauges and histograms with labels, rendered in the text
 * exposition format (version 0.0.4). Small enough that a dependency would not do it better.
 */

type Labels = Record<string, string>;

interface Metric {
  readonly name: string;
  readonly help: string;
  readonly type: 'counter' | 'gauge' | 'histogram';
  render(): string[];
}

function labelKey(labels: Labels): string {
  return JSON.stringify(Object.entries(labels).sort(([a], [b]) => a.localeCompare(b)));
}

function escapeLabelValue(value: string): string {
  return value.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"');
}

function renderLabels(labels: Labels, extra: Labels = {}): string {
  const entries = Object.entries({ ...labels, ...extra });
  if (entries.length === 0) return '';
  return `{${entries.map(([key, value]) => `${key}="${escapeLabelValue(value)}"`).join(',')}}`;
}

function formatNumber(value: number): string {
  if (value === Number.POSITIVE_INFINITY) return '+Inf';
  if (value === Number.NEGATIVE_INFINITY) return '-Inf';
  return String(value);
}

export class Counter implements Metric {
  readonly type = 'counter' as const;
  readonly #values = new Map<string, { labels: Labels; value: number }>();

  constructor(readonly name: string, readonly help: string) {}

  inc(labels: Labels = {}, by = 1): void {
    const key = labelKey(labels);
    const entry = this.#values.get(key) ?? { labels, value: 0 };
    entry.value += by;
    this.#values.set(key, entry);
  }

  get(labels: Labels = {}): number {
    return this.#values.get(labelKey(labels))?.value ?? 0;
  }

  render(): string[] {
    return [...this.#values.values()].map(({ labels, value }) => `${this.name}${renderLabels(labels)} ${formatNumber(value)}`);
  }
}

export class Gauge implements Metric {
  readonly type = 'gauge' as const;
  readonly #values = new Map<string, { labels: Labels; value: number }>();
  #collect: (() => void) | undefined;

  constructor(readonly name: string, readonly help: string, collect?: (gauge: Gauge) => void) {
    this.#collect = collect === undefined ? undefined : () => collect(this);
  }

  set(labels: Labels, value: number): void {
    this.#values.set(labelKey(labels), { labels, value });
  }

  get(labels: Labels = {}): number | undefined {
    return this.#values.get(labelKey(labels))?.value;
  }

  remove(labels: Labels): void {
    this.#values.delete(labelKey(labels));
  }

  render(): string[] {
    this.#collect?.();
    return [...this.#values.values()].map(({ labels, value }) => `${this.name}${renderLabels(labels)} ${formatNumber(value)}`);
  }
}

export class Histogram implements Metric {
  readonly type = 'histogram' as const;
  readonly #series = new Map<string, { labels: Labels; counts: number[]; sum: number; count: number }>();

  constructor(readonly name: string, readonly help: string, readonly buckets: readonly number[]) {}

  observe(labels: Labels, value: number): void {
    const key = labelKey(labels);
    const series = this.#series.get(key) ?? { labels, counts: this.buckets.map(() => 0), sum: 0, count: 0 };
    this.buckets.forEach((bound, index) => {
      if (value <= bound) series.counts[index] = (series.counts[index] ?? 0) + 1;
    });
    series.sum += value;
    series.count += 1;
    this.#series.set(key, series);
  }

  count(labels: Labels = {}): number {
    return this.#series.get(labelKey(labels))?.count ?? 0;
  }

  render(): string[] {
    const lines: string[] = [];
    for (const { labels, counts, sum, count } of this.#series.values()) {
      this.buckets.forEach((bound, index) => {
        lines.push(`${this.name}_bucket${renderLabels(labels, { le: formatNumber(bound) })} ${counts[index] ?? 0}`);
      });
      lines.push(`${this.name}_bucket${renderLabels(labels, { le: '+Inf' })} ${count}`);
      lines.push(`${this.name}_sum${renderLabels(labels)} ${formatNumber(sum)}`);
      lines.push(`${this.name}_count${renderLabels(labels)} ${count}`);
    }
    return lines;
  }
}

export class MetricsRegistry {
  readonly #metrics: Metric[] = [];

  counter(name: string, help: string): Counter {
    return this.#add(new Counter(name, help));
  }

  gauge(name: string, help: string, collect?: (gauge: Gauge) => void): Gauge {
    return this.#add(new Gauge(name, help, collect));
  }

  histogram(name: string, help: string, buckets: readonly number[]): Histogram {
    return this.#add(new Histogram(name, help, buckets));
  }

  /** The text exposition format. */
  render(): string {
    const lines: string[] = [];
    for (const metric of this.#metrics) {
      lines.push(`# HELP ${metric.name} ${metric.help.replace(/\n/g, ' ')}`);
      lines.push(`# TYPE ${metric.name} ${metric.type}`);
      lines.push(...metric.render());
    }
    return `${lines.join('\n')}\n`;
  }

  #add<T extends Metric>(metric: T): T {
    if (this.#metrics.some((existing) => existing.name === metric.name)) throw new Error(`metric ${metric.name} registered twice`);
    this.#metrics.push(metric);
    return metric;
  }
}

/** Seconds buckets for reconcile and operation durations: 5 ms to 30 minutes. */
export const DURATION_BUCKETS_SECONDS = [0.005, 0.025, 0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 1800];

/** The operator's own metrics, created once in main.ts and passed to the runtime. */
export class OperatorMetrics {
  readonly registry = new MetricsRegistry();
  readonly reconciles = this.registry.counter('eventdb_operator_reconcile_total', 'Reconciles, by controller and result (success, requeue, error).');
  readonly reconcileErrors = this.registry.counter('eventdb_operator_reconcile_errors_total', 'Reconciles that failed, by controller.');
  readonly reconcileSeconds = this.registry.histogram(
    'eventdb_operator_reconcile_duration_seconds',
    'Time one reconcile took, by controller.',
    DURATION_BUCKETS_SECONDS,
  );
  readonly queueDepth = this.registry.gauge('eventdb_operator_workqueue_depth', 'Keys waiting in a controller\'s work queue.');
  readonly queueRetries = this.registry.counter('eventdb_operator_workqueue_retries_total', 'Keys re-queued after a failure, by controller.');
  readonly operationSeconds = this.registry.histogram(
    'eventdb_operator_operation_duration_seconds',
    'Duration of finished disruptive operations (RollingUpdate, Scale, ...), by kind and result.',
    DURATION_BUCKETS_SECONDS,
  );
  readonly operationsInProgress = this.registry.gauge(
    'eventdb_operator_operations_in_progress',
    'Disruptive operations in progress, by kind.',
  );
  readonly informerEvents = this.registry.counter(
    'eventdb_operator_informer_activity_total',
    'Lists, watches and their failures, by kind and activity.',
  );
  readonly isLeader = this.registry.gauge('eventdb_operator_leader', '1 while this replica holds the leader Lease.');
  readonly clusterPhase = this.registry.gauge(
    'eventdb_operator_cluster_phase',
    '1 for the phase each EventDBCluster is in, by namespace, name and phase.',
  );
  readonly clusterReadyNodes = this.registry.gauge('eventdb_operator_cluster_ready_nodes', 'Ready nodes of each EventDBCluster.');
  readonly certificateRotationSeconds = this.registry.gauge(
    'eventdb_operator_certificate_rotation_seconds',
    'Seconds from the last change of a cluster\'s certificate or CA Secret to the last node verified serving it, by namespace and name.',
  );
  readonly certificateNotAfter = this.registry.gauge(
    'eventdb_operator_certificate_not_after_timestamp_seconds',
    'Expiry (Unix seconds) of the node certificate in each cluster\'s Secret, by namespace and name.',
  );
}
