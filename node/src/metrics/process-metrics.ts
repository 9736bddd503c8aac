/**
 * The process figures of `/metrics`: prom-client's default metrics (CPU, resident memory, open
 * file descriptors, heap, event-loop delay, GC pauses by kind, active handles), named
 * `eventdb_process_*` and `eventdb_nodejs_*`. They observe the whole process (a GC observer and an
 * event-loop delay monitor), so they are collected once per process, in their own registry.
 */
import { Registry, collectDefaultMetrics } from 'prom-client';

let processRegistry: Registry | undefined;

/** The process's registry of default metrics, created on first use. */
export function processMetricsRegistry(): Registry {
  if (processRegistry === undefined) {
    processRegistry = new Registry();
    // 10 ms event-loop delay resolution (the default); GC durations in few buckets
    collectDefaultMetrics({ register: processRegistry, prefix: 'eventdb_', gcDurationBuckets: [0.001, 0.01, 0.1, 1] });
    // prom-client also reports these three gauges under a `_total` name, which Prometheus's lint
    // (promtool check metrics) rejects for a non-counter; the same figures stay without the suffix.
    for (const name of ['active_handles_total', 'active_requests_total', 'active_resources_total']) {
      processRegistry.removeSingleMetric(`eventdb_nodejs_${name}`);
    }
  }
  return processRegistry;
}
