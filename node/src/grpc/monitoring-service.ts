/**
 * event_store.client.monitoring.Monitoring.Stats: the node's statistics (the sampler behind
 * `GET /stats`), flattened to `proc-cpu` style keys with string values, sent once and then
 * every `refresh_time_period_in_ms` until the client ends the call. Needs an authenticated
 * user, as `GET /stats` does.
 */
import { create } from '@bufbuild/protobuf';
import type { HandlerContext, ServiceImpl } from '@connectrpc/connect';
import type { StatsTree } from '../api/routes/stats-sampler.js';
import type { CallGuard } from './call-context.js';
import { accessDenied, badInput, toConnectError } from './errors.js';
import { Monitoring, StatsRespSchema, type StatsReq, type StatsResp } from './gen/eventdb/grpc/monitoring_pb.js';

/** Refresh periods accepted: at least this (a tighter loop only repeats the memoised sample). */
const REFRESH_MIN_MS = 100;
const REFRESH_MAX_MS = 24 * 60 * 60 * 1000;

export interface MonitoringServiceDeps {
  readonly guard: CallGuard;
  /** One sample of the statistics tree (memoised by the sampler). */
  sample(): Promise<StatsTree>;
}

/** `{ proc: { gc: { gen0Size: 1 } } }` -> `{ 'proc-gc-gen0Size': '1' }` */
export function flattenStats(tree: StatsTree, prefix = '', out: Record<string, string> = {}): Record<string, string> {
  for (const [key, value] of Object.entries(tree)) {
    const name = prefix === '' ? key : `${prefix}-${key}`;
    if (value !== null && typeof value === 'object') flattenStats(value, name, out);
    else out[name] = value === null ? '' : String(value);
  }
  return out;
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done(): void {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}

export function monitoringService(deps: MonitoringServiceDeps): Partial<ServiceImpl<typeof Monitoring>> {
  return {
    async *stats(request: StatsReq, context: HandlerContext): AsyncGenerator<StatsResp> {
      try {
        const refreshMs = Number(request.refreshTimePeriodInMs);
        if (refreshMs !== 0 && (refreshMs < REFRESH_MIN_MS || refreshMs > REFRESH_MAX_MS))
          throw badInput(`refresh_time_period_in_ms must be 0 (once) or within ${REFRESH_MIN_MS}..${REFRESH_MAX_MS}`);
        const principal = await deps.guard.principal(context.requestHeader);
        if (principal === undefined) throw accessDenied();
        for (;;) {
          yield create(StatsRespSchema, { stats: flattenStats(await deps.sample()) });
          if (refreshMs === 0) return;
          await sleep(refreshMs, context.signal);
          if (context.signal.aborted) return;
        }
      } catch (err) {
        throw toConnectError(err) ?? err;
      }
    },
  };
}
