/**
 * A load-generator process: runs one workload against EventDB (HTTP, undici keep-alive pool)
 * or PostgreSQL (pg pool) and prints one JSON WorkloadResult on stdout. It runs in its own
 * process so that its CPU is not charged to the server under test. Every workload is bounded
 * both in time (`durationMs`) and in count (`requestCountMax`).
 *
 * Usage: node load-worker.js '<WorkloadSpec JSON>'
 */
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';

import { FORWARDS, KurrentDBClient, START, jsonEvent, type JSONEventType } from '@kurrent/kurrentdb-client';
import pg from 'pg';
import { Pool } from 'undici';

import { percentile, type WorkloadResult } from './bench-types.js';

export type WorkloadSpec =
  | ({ readonly kind: 'http-append' } & AppendSpec & {
        readonly origin: string;
        readonly authorization: string;
        /** For an https origin: the CA certificates (PEM) to trust. */
        readonly ca?: string;
      })
  | ({ readonly kind: 'http-read' } & ReadSpec & {
        readonly origin: string;
        readonly authorization: string;
      })
  | ({ readonly kind: 'pg-append' } & AppendSpec & { readonly connectionString: string })
  | ({ readonly kind: 'pg-read' } & ReadSpec & { readonly connectionString: string })
  | ({ readonly kind: 'grpc-append' } & AppendSpec & { readonly connectionString: string })
  | ({ readonly kind: 'grpc-read-all' | 'grpc-subscribe-all' } & CommonSpec & {
        readonly connectionString: string;
        /** Events the node holds (the read of $all stops after this many, a lap). */
        readonly expectedEvents: number;
      });

interface CommonSpec {
  readonly connections: number;
  readonly durationMs: number;
  readonly requestCountMax: number;
}

interface AppendSpec extends CommonSpec {
  readonly eventsPerRequest: number;
  readonly streamPrefix: string;
  readonly payloadBytes: number;
}

interface ReadSpec extends CommonSpec {
  readonly pageSize: number;
  readonly streamLengths: Readonly<Record<string, number>>;
}

/** One lane = one connection issuing requests back to back. */
type LaneStep = (laneIndex: number) => Promise<{ events: number; ok: boolean; error?: string }>;

interface LaneRun {
  readonly step: LaneStep;
  readonly connections: number;
  readonly durationMs: number;
  readonly requestCountMax: number;
}

async function runLanes(run: LaneRun): Promise<WorkloadResult> {
  const latencies: number[] = [];
  let started = 0;
  let events = 0;
  let errors = 0;
  let firstError: string | undefined;
  const start = performance.now();
  const cpuStart = process.cpuUsage();
  const deadline = start + run.durationMs;
  const lane = async (laneIndex: number): Promise<void> => {
    while (performance.now() < deadline && started < run.requestCountMax) {
      started += 1;
      const t0 = performance.now();
      try {
        const outcome = await run.step(laneIndex);
        latencies.push(performance.now() - t0);
        if (outcome.ok) events += outcome.events;
        else {
          errors += 1;
          firstError ??= outcome.error;
        }
      } catch (err: unknown) {
        errors += 1;
        firstError ??= err instanceof Error ? err.message : String(err);
      }
    }
  };
  await Promise.all(Array.from({ length: run.connections }, (_, i) => lane(i)));
  const elapsedMs = performance.now() - start;
  const cpu = process.cpuUsage(cpuStart);
  latencies.sort((a, b) => a - b);
  return {
    requestCount: started,
    eventCount: events,
    errorCount: errors,
    elapsedMs,
    latencyP50Ms: round(percentile(latencies, 0.5)),
    latencyP99Ms: round(percentile(latencies, 0.99)),
    clientCpuPercent: round(((cpu.user + cpu.system) / 1000 / elapsedMs) * 100),
    ...(firstError === undefined ? {} : { firstError }),
  };
}

function payload(bytes: number): string {
  return JSON.stringify({ filler: 'x'.repeat(Math.max(0, bytes - 14)) });
}

/**
 * Returns a function that makes a batch body: the text JSON.stringify gives for
 * `[{eventId, eventType: 'bench-event', data}, ...]`, with a fresh random UUID per event (so no
 * append is an idempotent repeat), built by concatenation so the load generator stays cheap.
 */
function appendBodyBuilder(payloadBytes: number, eventsPerRequest: number): () => string {
  const itemTail = `","eventType":"bench-event","data":${payload(payloadBytes)}}`;
  return () => {
    let body = '[';
    for (let eventIndex = 0; eventIndex < eventsPerRequest; eventIndex++) {
      if (eventIndex > 0) body += ',';
      body += `{"eventId":"${randomUUID()}${itemTail}`;
    }
    return `${body}]`;
  };
}

async function httpAppend(
  spec: Extract<WorkloadSpec, { kind: 'http-append' }>,
): Promise<WorkloadResult> {
  const pool = new Pool(spec.origin, {
    connections: spec.connections,
    pipelining: 1,
    ...(spec.ca === undefined ? {} : { connect: { ca: spec.ca } }),
  });
  const lengths: Record<string, number> = {};
  const headers = {
    authorization: spec.authorization,
    'content-type': 'application/vnd.eventstore.events+json',
  };
  const body = appendBodyBuilder(spec.payloadBytes, spec.eventsPerRequest);
  const step: LaneStep = async (laneIndex) => {
    const stream = `${spec.streamPrefix}-${laneIndex}`;
    const res = await pool.request({
      origin: spec.origin,
      path: `/streams/${stream}`,
      method: 'POST',
      headers,
      body: body(),
    });
    const text = await res.body.text();
    if (res.statusCode !== 201)
      return { events: 0, ok: false, error: `HTTP ${res.statusCode} ${text.slice(0, 200)}` };
    lengths[stream] = (lengths[stream] ?? 0) + spec.eventsPerRequest;
    return { events: spec.eventsPerRequest, ok: true };
  };
  try {
    return { ...(await runLanes({ ...spec, step })), streamLengths: lengths };
  } finally {
    await pool.close();
  }
}

/** Reads each stream forward in pages (embed=body), wrapping to 0 at its end. */
async function httpRead(
  spec: Extract<WorkloadSpec, { kind: 'http-read' }>,
): Promise<WorkloadResult> {
  const pool = new Pool(spec.origin, { connections: spec.connections, pipelining: 1 });
  const streams = Object.entries(spec.streamLengths).filter(([, n]) => n > 0);
  const cursors = streams.map(() => 0);
  const headers = {
    authorization: spec.authorization,
    accept: 'application/vnd.eventstore.atom+json',
  };
  let checked = 0;
  const step: LaneStep = async (laneIndex) => {
    const streamIndex = laneIndex % streams.length;
    const [stream, length] = streams[streamIndex] ?? ['', 0];
    const from = cursors[streamIndex] ?? 0;
    cursors[streamIndex] = from + spec.pageSize >= length ? 0 : from + spec.pageSize;
    const path = `/streams/${stream}/${from}/forward/${spec.pageSize}?embed=body`;
    const res = await pool.request({ origin: spec.origin, path, method: 'GET', headers });
    const text = await res.body.text();
    if (res.statusCode !== 200)
      return { events: 0, ok: false, error: `HTTP ${res.statusCode} ${text.slice(0, 200)}` };
    const expected = Math.min(spec.pageSize, length - from);
    // Parsing every page would make the client the bottleneck; every 64th is checked.
    if (checked++ % 64 === 0) {
      const entries = (JSON.parse(text) as { entries?: unknown[] }).entries?.length ?? -1;
      if (entries !== expected)
        return { events: 0, ok: false, error: `expected ${expected} entries, got ${entries}` };
    }
    return { events: expected, ok: true };
  };
  try {
    return await runLanes({
      ...spec,
      connections: Math.min(spec.connections, streams.length * 4),
      step,
    });
  } finally {
    await pool.close();
  }
}

async function pgAppend(
  spec: Extract<WorkloadSpec, { kind: 'pg-append' }>,
): Promise<WorkloadResult> {
  const pool = new pg.Pool({ connectionString: spec.connectionString, max: spec.connections });
  const clients = await Promise.all(Array.from({ length: spec.connections }, () => pool.connect()));
  const versions = clients.map(() => 0);
  const lengths: Record<string, number> = {};
  const data = payload(spec.payloadBytes);
  const n = spec.eventsPerRequest;
  const values = Array.from(
    { length: n },
    (_, i) => `($1, $${i * 2 + 2}, $${i * 2 + 3}, 'bench-event', $${n * 2 + 2})`,
  ).join(', ');
  const sql = `INSERT INTO events (stream, version, event_id, event_type, data) VALUES ${values}`;
  const step: LaneStep = async (laneIndex) => {
    const stream = `${spec.streamPrefix}-${laneIndex}`;
    const first = versions[laneIndex] ?? 0;
    const params: unknown[] = [stream];
    for (let i = 0; i < n; i++) params.push(first + i, randomUUID());
    params.push(data);
    await clients[laneIndex]?.query(sql, params);
    versions[laneIndex] = first + n;
    lengths[stream] = first + n;
    return { events: n, ok: true };
  };
  try {
    return { ...(await runLanes({ ...spec, step })), streamLengths: lengths };
  } finally {
    for (const c of clients) c.release();
    await pool.end();
  }
}

async function pgRead(spec: Extract<WorkloadSpec, { kind: 'pg-read' }>): Promise<WorkloadResult> {
  const streams = Object.entries(spec.streamLengths).filter(([, n]) => n > 0);
  const connections = Math.min(spec.connections, streams.length * 4);
  const pool = new pg.Pool({ connectionString: spec.connectionString, max: connections });
  const clients = await Promise.all(Array.from({ length: connections }, () => pool.connect()));
  const cursors = streams.map(() => 0);
  const sql =
    'SELECT stream, version, event_id, event_type, data, created_at FROM events ' +
    'WHERE stream = $1 AND version >= $2 ORDER BY version LIMIT $3';
  const step: LaneStep = async (laneIndex) => {
    const streamIndex = laneIndex % streams.length;
    const [stream, length] = streams[streamIndex] ?? ['', 0];
    const from = cursors[streamIndex] ?? 0;
    cursors[streamIndex] = from + spec.pageSize >= length ? 0 : from + spec.pageSize;
    const result = await clients[laneIndex]?.query(sql, [stream, from, spec.pageSize]);
    return { events: result?.rowCount ?? 0, ok: true };
  };
  try {
    return await runLanes({ ...spec, connections, step });
  } finally {
    for (const c of clients) c.release();
    await pool.end();
  }
}

/**
 * gRPC appends with the official Node client (grpc-js underneath): one client, one HTTP/2
 * connection, `connections` appends in flight, each lane its own stream.
 */
async function grpcAppend(spec: Extract<WorkloadSpec, { kind: 'grpc-append' }>): Promise<WorkloadResult> {
  const client = KurrentDBClient.connectionString(spec.connectionString);
  const data = JSON.parse(payload(spec.payloadBytes)) as JSONEventType['data'];
  const step: LaneStep = async (laneIndex) => {
    const events = Array.from({ length: spec.eventsPerRequest }, () => jsonEvent({ type: 'bench-event', data }));
    const result = await client.appendToStream(`${spec.streamPrefix}-${laneIndex}`, events);
    return result.success ? { events: spec.eventsPerRequest, ok: true } : { events: 0, ok: false, error: 'append not successful' };
  };
  try {
    return await runLanes({ ...spec, step });
  } finally {
    await client.dispose();
  }
}

/**
 * Reads $all forwards from the start with the official Node client (its Rust bridge), a whole
 * lap of `expectedEvents` per request, lanes in parallel; or (subscribe) a catch-up subscription
 * to $all from the start, one request = until it has received `expectedEvents` events.
 */
async function grpcReadAll(spec: Extract<WorkloadSpec, { kind: 'grpc-read-all' | 'grpc-subscribe-all' }>): Promise<WorkloadResult> {
  const client = KurrentDBClient.connectionString(spec.connectionString);
  const step: LaneStep = async () => {
    let events = 0;
    if (spec.kind === 'grpc-read-all') {
      for await (const resolved of client.readAll({ direction: FORWARDS, fromPosition: START, maxCount: spec.expectedEvents })) {
        if (resolved.event !== undefined) events++;
      }
    } else {
      const subscription = client.subscribeToAll({ fromPosition: START });
      try {
        for await (const resolved of subscription) {
          if (resolved.event !== undefined) events++;
          if (events >= spec.expectedEvents) break;
        }
      } finally {
        await subscription.unsubscribe();
      }
    }
    return events >= spec.expectedEvents ? { events, ok: true } : { events: 0, ok: false, error: `read ${events} of ${spec.expectedEvents} events` };
  };
  try {
    return await runLanes({ ...spec, step });
  } finally {
    await client.dispose();
  }
}

function round(value: number): number {
  return Math.round(value * 100) / 100;
}

async function main(): Promise<void> {
  const spec = JSON.parse(process.argv[2] ?? '{}') as WorkloadSpec;
  const result =
    spec.kind === 'http-append'
      ? await httpAppend(spec)
      : spec.kind === 'http-read'
        ? await httpRead(spec)
        : spec.kind === 'pg-append'
          ? await pgAppend(spec)
          : spec.kind === 'pg-read'
            ? await pgRead(spec)
            : spec.kind === 'grpc-append'
              ? await grpcAppend(spec)
              : await grpcReadAll(spec);
  process.stdout.write(`${JSON.stringify(result)}\n`);
}

main().catch((err: unknown) => {
  process.stderr.write(`load worker failed: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
