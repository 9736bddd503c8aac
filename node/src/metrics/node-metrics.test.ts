import { afterEach, describe, expect, it } from 'vitest';

import type { EngineStats } from '../storage/event-db-types.js';
import { NodeMetrics, type NodeMetricsSources, type ScavengeFiguresSource, type SubscriptionFigures } from './node-metrics.js';
import { wantsOpenMetrics } from '../api/routes/metrics.js';

function engineStats(over: Partial<EngineStats> = {}): EngineStats {
  return {
    writerCheckpoint: 5000, chaserCheckpoint: 4000,
    writer: { lastFlushSizeBytes: 512, meanFlushSizeBytes: 400, maxFlushSizeBytes: 900, lastFlushDelayMs: 3, meanFlushDelayMs: 2, maxFlushDelayMs: 9, queuedFlushMessages: 2, flushCount: 17, onWriterThread: true },
    readIndex: { cachedRecord: 10, notCachedRecord: 3, cachedStreamInfo: 20, notCachedStreamInfo: 4, hashCollisions: 1 },
    diskIo: { readBytes: 100, writtenBytes: 200, readOps: 5, writeOps: 6 },
    index: { memTableEntries: 42, tableCount: 2 },
    chunkCount: 3,
    ...over,
  };
}

type Sample = { value: number; labels: Record<string, string | number> };

const opened: NodeMetrics[] = [];
afterEach(() => { for (const m of opened.splice(0)) m.close(); });

function metricsOf(sources: Partial<NodeMetricsSources> = {}): NodeMetrics {
  const m = new NodeMetrics({ version: '1.2.3', engine: () => engineStats(), ...sources });
  opened.push(m);
  return m;
}

async function samples(m: NodeMetrics, name: string): Promise<Sample[]> {
  const all = await m.registry.getMetricsAsJSON();
  const metric = all.find((x) => x.name === name);
  if (metric === undefined) throw new Error(`no metric ${name}`);
  return (metric.values as Sample[]).map((v) => ({ value: v.value, labels: { ...v.labels } }));
}

async function value(m: NodeMetrics, name: string, labels: Record<string, string> = {}): Promise<number | undefined> {
  const all = await samples(m, name);
  return all.find((s) => Object.entries(labels).every(([k, v]) => String(s.labels[k]) === v) && Object.keys(s.labels).length === Object.keys(labels).length)?.value;
}

describe('NodeMetrics', () => {
  it('reports the engine figures at scrape time', async () => {
    let stats = engineStats();
    const m = metricsOf({ engine: () => stats });
    expect(await value(m, 'eventdb_checkpoints_bytes', { name: 'writer' })).toBe(5000);
    expect(await value(m, 'eventdb_checkpoints_bytes', { name: 'chaser' })).toBe(4000);
    expect(await value(m, 'eventdb_cache_hits_misses_total', { cache: 'stream-info', kind: 'misses' })).toBe(4);
    expect(await value(m, 'eventdb_writer_flushes_total')).toBe(17);
    expect(await value(m, 'eventdb_writer_last_flush_duration_seconds')).toBeCloseTo(0.003);
    expect(await value(m, 'eventdb_index_memtable_entries')).toBe(42);
    expect(await value(m, 'eventdb_disk_io_bytes_total', { activity: 'written' })).toBe(200);
    // the next scrape sees the engine's new totals, not a sum of scrapes
    stats = engineStats({ writerCheckpoint: 9000, writer: { ...stats.writer, flushCount: 20 } });
    expect(await value(m, 'eventdb_checkpoints_bytes', { name: 'writer' })).toBe(9000);
    expect(await value(m, 'eventdb_writer_flushes_total')).toBe(20);
    expect(await value(m, 'eventdb_writer_flushes_total')).toBe(20);
    expect(await value(m, 'eventdb_node_state', { state: 'Leader' })).toBe(1);
    expect(await value(m, 'eventdb_build_info', { version: '1.2.3' })).toBe(1);
  });

  it('times appends and reads by protocol and status in few buckets', async () => {
    const m = metricsOf();
    m.observeAppend('http', 0.002, 'successful');
    m.observeAppend('http', 0.3, 'successful');
    m.observeAppend('http', 0.01, 'failed');
    m.observeRead('http', 0.0005, 'successful');
    const append = await samples(m, 'eventdb_append_duration_seconds');
    const count = (status: string) => append.find((s) => s.labels.status === status && s.labels.protocol === 'http' && s.labels.le === '+Inf')?.value;
    expect(count('successful')).toBe(2);
    expect(count('failed')).toBe(1);
    expect(append.find((s) => s.labels.status === 'successful' && s.labels.le === 0.005)?.value).toBe(1);
    const read = await samples(m, 'eventdb_read_duration_seconds');
    expect(read.find((s) => s.labels.le === 0.001)?.value).toBe(1);
  });

  it('reports state, epoch, elections, members and per-replica lag of a cluster member; a gone replica goes', async () => {
    let nowMs = 10_000;
    let epoch = 4;
    let replicas = [
      { instanceId: 'b', remoteAddress: '10.0.0.2:1', ackedPosition: 1000, isReadOnlyReplica: false },
      { instanceId: 'c', remoteAddress: '10.0.0.3:1', ackedPosition: 3000, isReadOnlyReplica: false },
    ];
    let writer = 1000;
    const m = metricsOf({
      nowMs: () => nowMs,
      nodeState: () => 'Leader',
      cluster: {
        instanceId: 'a', clusterSize: 3,
        members: () => [
          { instanceId: 'a', state: 'Leader', isAlive: true, isReadOnlyReplica: false, epochNumber: epoch },
          { instanceId: 'b', state: 'Follower', isAlive: true, isReadOnlyReplica: false, epochNumber: epoch },
          { instanceId: 'c', state: 'Follower', isAlive: false, isReadOnlyReplica: false, epochNumber: epoch },
        ],
        replication: () => ({ writerCheckpoint: writer, commitPosition: 900, replicas }),
      },
    });
    expect(await value(m, 'eventdb_node_epoch_number')).toBe(4);
    expect(await value(m, 'eventdb_elections_total')).toBe(0);
    expect(await value(m, 'eventdb_cluster_members', { role: 'voter', alive: 'true' })).toBe(2);
    expect(await value(m, 'eventdb_cluster_members', { role: 'voter', alive: 'false' })).toBe(1);
    expect(await value(m, 'eventdb_checkpoints_bytes', { name: 'replication' })).toBe(900);
    // the leader wrote up to 3000 at 11 s; b has 1000 of it
    nowMs = 11_000; writer = 3000;
    await samples(m, 'eventdb_replication_lag_seconds');
    nowMs = 15_000;
    expect(await value(m, 'eventdb_replication_lag_bytes', { replica: 'b', address: '10.0.0.2:1' })).toBe(2000);
    expect(await value(m, 'eventdb_replication_lag_bytes', { replica: 'c', address: '10.0.0.3:1' })).toBe(0);
    expect(await value(m, 'eventdb_replication_lag_seconds', { replica: 'b', address: '10.0.0.2:1' })).toBe(4);
    expect(await value(m, 'eventdb_replication_lag_seconds', { replica: 'c', address: '10.0.0.3:1' })).toBe(0);
    // two elections later, and c disconnected
    epoch = 6;
    replicas = replicas.slice(0, 1);
    expect(await value(m, 'eventdb_elections_total')).toBe(2);
    expect(await value(m, 'eventdb_node_epoch_number')).toBe(6);
    expect((await samples(m, 'eventdb_replication_lag_bytes')).map((s) => s.labels.replica)).toEqual(['b']);
  });

  it('reports scavenge progress and results', async () => {
    let figures: ScavengeFiguresSource = { running: undefined, last: { scavengeId: undefined, result: 'Unknown' }, finishedByResult: new Map(), lastFinishedAtMs: new Map() };
    const m = metricsOf({ nowMs: () => 70_000, scavenges: () => figures });
    expect(await value(m, 'eventdb_scavenge_running')).toBe(0);
    expect(await samples(m, 'eventdb_scavenge_last_result')).toEqual([]);
    figures = { ...figures, running: { scavengeId: 's1', startedAtMs: 10_000, chunksScavengedUpTo: 7 }, last: { scavengeId: 's1', result: 'InProgress' } };
    expect(await value(m, 'eventdb_scavenge_running')).toBe(1);
    expect(await value(m, 'eventdb_scavenge_chunks_scavenged')).toBe(7);
    expect(await value(m, 'eventdb_scavenge_running_seconds')).toBe(60);
    expect(await value(m, 'eventdb_scavenge_last_result', { result: 'InProgress' })).toBe(1);
    figures = { running: undefined, last: { scavengeId: 's1', result: 'Errored' }, finishedByResult: new Map([['Errored', 1], ['Success', 3]]), lastFinishedAtMs: new Map([['Errored', 80_000]]) };
    expect(await value(m, 'eventdb_scavenge_running')).toBe(0);
    expect(await value(m, 'eventdb_scavenges_total', { result: 'Errored' })).toBe(1);
    expect(await value(m, 'eventdb_scavenges_total', { result: 'Success' })).toBe(3);
    expect(await value(m, 'eventdb_scavenge_last_finished_timestamp_seconds', { result: 'Errored' })).toBe(80);
    expect((await samples(m, 'eventdb_scavenge_last_result')).map((s) => s.labels.result)).toEqual(['Errored']);
  });

  it('reports subscriptions, projections, auto-scavenge and certificates; deleted objects lose their series', async () => {
    const group = (name: string): SubscriptionFigures => ({
      stream: 'orders', group: name, connections: 2, parkedMessages: 1, inFlightMessages: 3, itemsProcessed: 10,
      lastKnownEventPosition: 20, lastCheckpointedEventPosition: 15,
    });
    let groups: SubscriptionFigures[] | undefined = [group('g1'), group('g2')];
    let autoStatus: string | undefined = 'Waiting';
    const m = metricsOf({
      subscriptions: () => groups,
      projections: () => [{ name: '$by_category', status: 'Running', progress: 50, eventsProcessedAfterRestart: 8 }, { name: 'p2', status: 'Faulted (Enabled)', progress: 100, eventsProcessedAfterRestart: 1 }],
      autoScavenge: () => autoStatus,
      certificates: () => ({ nodeNotAfterMs: 2_000_000, rootsNotAfterMs: [{ subject: 'CN=ca', notAfterMs: 5_000_000 }] }),
    });
    const labels = { event_stream_id: 'orders', group_name: 'g2' };
    expect(await value(m, 'eventdb_persistent_sub_connections', labels)).toBe(2);
    expect(await value(m, 'eventdb_persistent_sub_parked_messages', labels)).toBe(1);
    expect(await value(m, 'eventdb_persistent_sub_in_flight_messages', labels)).toBe(3);
    expect(await value(m, 'eventdb_persistent_sub_items_processed_total', labels)).toBe(10);
    expect(await value(m, 'eventdb_persistent_sub_checkpointed_event_position', labels)).toBe(15);
    groups = [group('g1')];
    expect((await samples(m, 'eventdb_persistent_sub_connections')).map((s) => s.labels.group_name)).toEqual(['g1']);
    expect((await samples(m, 'eventdb_persistent_sub_items_processed_total')).map((s) => s.labels.group_name)).toEqual(['g1']);
    groups = undefined; // a follower: the subscriptions run on the leader
    expect(await samples(m, 'eventdb_persistent_sub_connections')).toEqual([]);
    expect(await value(m, 'eventdb_projection_status', { projection: '$by_category', status: 'Running' })).toBe(1);
    expect(await value(m, 'eventdb_projection_status', { projection: 'p2', status: 'Faulted' })).toBe(1);
    expect(await value(m, 'eventdb_projection_status', { projection: 'p2', status: 'Running' })).toBe(0);
    expect(await value(m, 'eventdb_projection_progress_ratio', { projection: '$by_category' })).toBe(0.5);
    expect(await value(m, 'eventdb_projection_events_processed_after_restart_total', { projection: '$by_category' })).toBe(8);
    expect(await value(m, 'eventdb_auto_scavenge_status', { status: 'Waiting' })).toBe(1);
    expect(await value(m, 'eventdb_auto_scavenge_status', { status: 'Paused' })).toBe(0);
    autoStatus = undefined;
    expect(await samples(m, 'eventdb_auto_scavenge_status')).toEqual([]);
    expect(await value(m, 'eventdb_certificate_expiry_timestamp_seconds', { kind: 'node', subject: '' })).toBe(2000);
    expect(await value(m, 'eventdb_certificate_expiry_timestamp_seconds', { kind: 'ca', subject: 'CN=ca' })).toBe(5000);
  });

  it('renders the Prometheus text format, or OpenMetrics on request', async () => {
    const m = metricsOf();
    const text = await m.scrape(false);
    expect(text.contentType).toMatch(/^text\/plain; version=0\.0\.4/);
    expect(text.body).toMatch(/^eventdb_checkpoints_bytes\{name="writer"\} 5000$/m);
    const om = await m.scrape(true);
    expect(om.contentType).toMatch(/^application\/openmetrics-text; version=1\.0\.0/);
    expect(om.body.trimEnd().endsWith('# EOF')).toBe(true);
    // a text scrape after an OpenMetrics one is text again (the format is per scrape)
    expect((await m.scrape(false)).body).not.toContain('# EOF');
  });

  it('chooses OpenMetrics only when Accept asks for it', () => {
    expect(wantsOpenMetrics(undefined)).toBe(false);
    expect(wantsOpenMetrics('text/plain')).toBe(false);
    expect(wantsOpenMetrics('application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5,*/*;q=0.1')).toBe(true);
    expect(wantsOpenMetrics('application/openmetrics-text; q=0')).toBe(false);
  });
});
