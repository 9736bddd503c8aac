/**
 * Shapes shared by the bench orchestrator and its sections. A section is a module exporting
 * `run(): Promise<BenchSection>`; the orchestrator (run-bench.ts) prints and saves the results.
 */

export interface BenchMetric {
  readonly name: string;
  readonly value: number;
  readonly unit: string;
  /** The figure the metric should reach (higher is better unless `lowerIsBetter`). */
  readonly target?: number;
  readonly lowerIsBetter?: boolean;
}

export interface BenchSection {
  readonly name: string;
  readonly metrics: readonly BenchMetric[];
  /** Conditions of the run and anything skipped, in plain sentences. */
  readonly notes: readonly string[];
}

/** One workload a section runs in a load worker: its key in the results, its label, and its load. */
export interface WorkloadPlan<Key extends string = 'single' | 'batch'> {
  readonly key: Key;
  readonly label: string;
  readonly connections: number;
  readonly eventsPerRequest: number;
  readonly requestCountMax: number;
  /** events/s EventDB should reach. */
  readonly target?: number;
}

/** Result of one timed workload run by a load worker process. */
export interface WorkloadResult {
  readonly requestCount: number;
  readonly eventCount: number;
  readonly errorCount: number;
  readonly elapsedMs: number;
  readonly latencyP50Ms: number;
  readonly latencyP99Ms: number;
  /** CPU used by the load generator, in % of one core. */
  readonly clientCpuPercent: number;
  /** CPU used by the server process(es) during the run, in % of one core. */
  readonly serverCpuPercent?: number;
  readonly firstError?: string;
  /** Events written per stream (append workloads), for a later read workload. */
  readonly streamLengths?: Readonly<Record<string, number>>;
}

export function eventsPerSecond(result: WorkloadResult): number {
  return result.elapsedMs <= 0 ? 0 : Math.round((result.eventCount / result.elapsedMs) * 1000);
}

/** Percentile of a sorted-ascending sample (nearest rank). */
export function percentile(sortedAscending: readonly number[], fraction: number): number {
  if (sortedAscending.length === 0) return 0;
  const rank = Math.min(
    sortedAscending.length - 1,
    Math.max(0, Math.ceil(fraction * sortedAscending.length) - 1),
  );
  return sortedAscending[rank] ?? 0;
}
