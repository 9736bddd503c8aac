/**
 * The node's Prometheus metrics (`GET /metrics`), through prom-client, under the `eventdb_`
 * prefix and modelled on KurrentDB's families (checkpoints, elections, statuses, caches, disk,
 * persistent subscriptions, projections).
 *
 * Cheap on the write path: every gauge and counter of the node's state is read at scrape time
 * from the accessors the capabilities already have (engine stats, gossip, replication, scavenge,
 * subscriptions, projections, TLS); the only work done per request is one observation of a
 * latency histogram with few buckets, and once a second the writer checkpoint is sampled for the
 * replication lag in seconds (writer-progress.ts).
 *
 * Process figures (CPU, memory, event-loop delay, GC) are prom-client's default metrics, collected
 * once per process in their own registry (process-metrics.ts) and merged at scrape time.
 */
import { statfs } from 'node:fs/promises';
import { Counter, Gauge, Histogram, Registry } from 'prom-client';

import type { EngineStats } from '../storage/event-db-types.js';
import { WriterProgress } from './writer-progress.js';

/** Latency buckets in seconds: few, so an observation stays cheap (1 ms to 10 s). */
export const LATENCY_BUCKETS_SECONDS = [0.001, 0.005, 0.025, 0.1, 0.5, 2.5, 10];

/** The node states reported by `eventdb_node_state` (EventStoreDB's VNodeState names). */
export type NodeStateName = string;

/** A member of the cluster as this node's gossip sees it. */
export interface GossipMemberFigures {
  readonly instanceId: string;
  readonly state: string;
  readonly isAlive: boolean;
  readonly isReadOnlyReplica: boolean;
  readonly epochNumber: number;
}

/** The replication figures of the leader (svc.replication of /stats). */
export interface ReplicationFigures {
  readonly writerCheckpoint: number;
  readonly commitPosition: number;
  readonly replicas: readonly { readonly instanceId: string; readonly remoteAddress: string; readonly ackedPosition: number; readonly isReadOnlyReplica: boolean }[];
}

export interface ScavengeFiguresSource {
  readonly running: { readonly scavengeId: string; readonly startedAtMs: number; readonly chunksScavengedUpTo: number } | undefined;
  readonly last: { readonly scavengeId: string | undefined; readonly result: string };
  readonly finishedByResult: ReadonlyMap<string, number>;
  readonly lastFinishedAtMs: ReadonlyMap<string, number>;
}

export interface SubscriptionFigures {
  readonly stream: string;
  readonly group: string;
  readonly connections: number;
  readonly parkedMessages: number;
  readonly inFlightMessages: number;
  readonly itemsProcessed: number;
  readonly lastKnownEventPosition: number | undefined;
  readonly lastCheckpointedEventPosition: number | undefined;
}

export interface ProjectionFigures {
  readonly name: string;
  readonly status: string;
  readonly progress: number;
  readonly eventsProcessedAfterRestart: number;
}

/** Where the figures come from: accessors of the capabilities, all read at scrape time. */
export interface NodeMetricsSources {
  readonly version: string;
  readonly engine: () => EngineStats;
  /** The node's state; absent for a node alone (always Leader). */
  readonly nodeState?: () => string;
  /** A cluster member: its own instance id and gossip's members (self included). */
  readonly cluster?: {
    readonly instanceId: string;
    readonly clusterSize: number;
    members(): readonly GossipMemberFigures[];
    replication(): ReplicationFigures;
  };
  readonly scavenges?: () => ScavengeFiguresSource;
  /** The auto-scavenge status (NotConfigured, Waiting, InProgress, Pausing, Paused); undefined when not ready. */
  readonly autoScavenge?: () => string | undefined;
  /** Undefined while the subscriptions do not run here (a follower). */
  readonly subscriptions?: () => readonly SubscriptionFigures[] | undefined;
  readonly projections?: () => readonly ProjectionFigures[];
  /** With TLS: expiry (ms since the epoch) of the node certificate and of each trusted root. */
  readonly certificates?: () => { readonly nodeNotAfterMs: number; readonly rootsNotAfterMs: readonly { readonly subject: string; readonly notAfterMs: number }[] };
  /** Data and index directories, for their volumes' usage; absent with MemDb. */
  readonly volumes?: { readonly data: string; readonly index: string };
  /** prom-client's default process metrics (one registry per process). */
  readonly processRegistry?: Registry;
  readonly nowMs?: () => number;
}

export type Protocol = 'http' | 'grpc';
export type Outcome = 'successful' | 'failed';

const PROJECTION_STATUSES = ['Running', 'Stopped', 'Faulted'] as const;
const AUTO_SCAVENGE_STATUSES = ['NotConfigured', 'Waiting', 'InProgress', 'Pausing', 'Paused'] as const;
const SCAVENGE_RESULTS = ['Success', 'Stopped', 'Errored', 'Interrupted'] as const;
const WRITER_SAMPLE_INTERVAL_MS = 1000;

export const OPENMETRICS_CONTENT_TYPE = Registry.OPENMETRICS_CONTENT_TYPE;
export const PROMETHEUS_CONTENT_TYPE = Registry.PROMETHEUS_CONTENT_TYPE;

export class NodeMetrics {
  readonly registry = new Registry();
  readonly #sources: NodeMetricsSources;
  readonly #nowMs: () => number;
  readonly #writerProgress = new WriterProgress();
  readonly #timer: NodeJS.Timeout | undefined;
  readonly #appendSeconds: Histogram<'protocol' | 'status'>;
  readonly #readSeconds: Histogram<'protocol' | 'status'>;
  /** The epoch number seen first: elections completed since are the epochs started since. */
  #firstEpoch: number | undefined;
  #lastEpoch = -1;

  constructor(sources: NodeMetricsSources) {
    this.#sources = sources;
    this.#nowMs = sources.nowMs ?? Date.now;
    const registers = [this.registry];
    this.#appendSeconds = new Histogram({
      name: 'eventdb_append_duration_seconds', help: 'Time to answer an append (a write of events, a delete or a metadata write), by protocol and status.',
      labelNames: ['protocol', 'status'], buckets: LATENCY_BUCKETS_SECONDS, registers,
    });
    this.#readSeconds = new Histogram({
      name: 'eventdb_read_duration_seconds', help: 'Time to answer a read of a stream, an event or $all (long polls included), by protocol and status.',
      labelNames: ['protocol', 'status'], buckets: LATENCY_BUCKETS_SECONDS, registers,
    });
    this.#registerNodeFamilies(registers);
    this.#registerEngineFamilies(registers);
    this.#registerClusterFamilies(registers);
    this.#registerServiceFamilies(registers);
    if (sources.cluster !== undefined) {
      const cluster = sources.cluster;
      this.#timer = setInterval(() => this.#sampleWriter(cluster), WRITER_SAMPLE_INTERVAL_MS).unref();
    }
  }

  /** One answered append or read: cheap (a bucket increment on a pre-bound child). */
  observeAppend(protocol: Protocol, seconds: number, outcome: Outcome): void {
    this.#appendSeconds.observe({ protocol, status: outcome }, seconds);
  }

  observeRead(protocol: Protocol, seconds: number, outcome: Outcome): void {
    this.#readSeconds.observe({ protocol, status: outcome }, seconds);
  }

  /** The exposition, in OpenMetrics when asked for, else the Prometheus text format 0.0.4. */
  async scrape(openMetrics: boolean): Promise<{ readonly contentType: string; readonly body: string }> {
    const registries = this.#sources.processRegistry === undefined ? [this.registry] : [this.registry, this.#sources.processRegistry];
    const contentType = openMetrics ? OPENMETRICS_CONTENT_TYPE : PROMETHEUS_CONTENT_TYPE;
    // a registry renders in its own content type; the metrics themselves do not depend on it
    // (a fresh registry per scrape: two scrapes in different formats cannot disturb each other)
    const merged = Registry.merge(registries);
    merged.setContentType(contentType as typeof PROMETHEUS_CONTENT_TYPE);
    return { contentType, body: await merged.metrics() };
  }

  close(): void {
    if (this.#timer !== undefined) clearInterval(this.#timer);
  }

  #sampleWriter(cluster: NonNullable<NodeMetricsSources['cluster']>): void {
    try {
      this.#writerProgress.record(cluster.replication().writerCheckpoint, this.#nowMs());
    } catch {
      // storage not open yet (starting) or closed (stopping): nothing to sample
    }
  }

  #registerNodeFamilies(registers: Registry[]): void {
    const sources = this.#sources;
    new Gauge({
      name: 'eventdb_build_info', help: 'Always 1: the node\'s version.', labelNames: ['version'], registers,
      collect() { this.set({ version: sources.version }, 1); },
    });
    new Gauge({
      name: 'eventdb_node_state', help: '1 for the state this node is in (Leader, Follower, ...), by state; the last known state only.',
      labelNames: ['state'], registers,
      collect() {
        this.reset();
        this.set({ state: sources.nodeState?.() ?? 'Leader' }, 1);
      },
    });
  }

  #registerEngineFamilies(registers: Registry[]): void {
    const engine = (): EngineStats | undefined => {
      try { return this.#sources.engine(); } catch { return undefined; }
    };
    const cluster = this.#sources.cluster;
    new Gauge({
      name: 'eventdb_checkpoints_bytes', help: 'Log positions (bytes) of the writer, chaser and (on a cluster) replication (commit) checkpoints, by name.',
      labelNames: ['name'], registers,
      collect() {
        const stats = engine();
        if (stats === undefined) return;
        this.set({ name: 'writer' }, stats.writerCheckpoint);
        this.set({ name: 'chaser' }, stats.chaserCheckpoint);
        if (cluster !== undefined) {
          try { this.set({ name: 'replication' }, cluster.replication().commitPosition); } catch { /* starting */ }
        }
      },
    });
    counterAtScrape(registers, 'eventdb_cache_hits_misses_total', 'Read-index cache hits and misses, by cache (record, stream-info) and kind (hits, misses).', ['cache', 'kind'], (set) => {
      const stats = engine();
      if (stats === undefined) return;
      set({ cache: 'record', kind: 'hits' }, stats.readIndex.cachedRecord);
      set({ cache: 'record', kind: 'misses' }, stats.readIndex.notCachedRecord);
      set({ cache: 'stream-info', kind: 'hits' }, stats.readIndex.cachedStreamInfo);
      set({ cache: 'stream-info', kind: 'misses' }, stats.readIndex.notCachedStreamInfo);
    });
    counterAtScrape(registers, 'eventdb_index_hash_collisions_total', 'Stream-hash collisions met by index reads.', [], (set) => {
      const stats = engine();
      if (stats !== undefined) set({}, stats.readIndex.hashCollisions);
    });
    gaugeAtScrape(registers, 'eventdb_index_memtable_entries', 'Entries in the index memtable (not yet in a table).', [], (set) => {
      const stats = engine();
      if (stats !== undefined) set({}, stats.index.memTableEntries);
    });
    gaugeAtScrape(registers, 'eventdb_index_tables', 'Index tables (PTables) on disk.', [], (set) => {
      const stats = engine();
      if (stats !== undefined) set({}, stats.index.tableCount);
    });
    gaugeAtScrape(registers, 'eventdb_chunks', 'Chunk files of the log.', [], (set) => {
      const stats = engine();
      if (stats !== undefined) set({}, stats.chunkCount);
    });
    counterAtScrape(registers, 'eventdb_writer_flushes_total', 'Flushes (fdatasync of a batch) of the log writer.', [], (set) => {
      const stats = engine();
      if (stats !== undefined) set({}, stats.writer.flushCount);
    });
    gaugeAtScrape(registers, 'eventdb_writer_last_flush_size_bytes', 'Size of the log writer\'s last flush.', [], (set) => {
      const stats = engine();
      if (stats !== undefined) set({}, stats.writer.lastFlushSizeBytes);
    });
    gaugeAtScrape(registers, 'eventdb_writer_last_flush_duration_seconds', 'Duration of the log writer\'s last flush.', [], (set) => {
      const stats = engine();
      if (stats !== undefined) set({}, stats.writer.lastFlushDelayMs / 1000);
    });
    gaugeAtScrape(registers, 'eventdb_writer_queued_flush_messages', 'Writes waiting for the log writer.', [], (set) => {
      const stats = engine();
      if (stats !== undefined) set({}, stats.writer.queuedFlushMessages);
    });
    counterAtScrape(registers, 'eventdb_disk_io_bytes_total', 'Bytes the storage engine read from and wrote to disk, by activity (read, written).', ['activity'], (set) => {
      const stats = engine();
      if (stats === undefined) return;
      set({ activity: 'read' }, stats.diskIo.readBytes);
      set({ activity: 'written' }, stats.diskIo.writtenBytes);
    });
    counterAtScrape(registers, 'eventdb_disk_io_operations_total', 'Read and write operations the storage engine issued, by activity (read, written).', ['activity'], (set) => {
      const stats = engine();
      if (stats === undefined) return;
      set({ activity: 'read' }, stats.diskIo.readOps);
      set({ activity: 'written' }, stats.diskIo.writeOps);
    });
    const volumes = this.#sources.volumes;
    if (volumes !== undefined) {
      new Gauge({
        name: 'eventdb_volume_bytes', help: 'Size, used and available bytes of the file systems holding the data and index directories, by volume (data, index) and kind (total, used, available).',
        labelNames: ['volume', 'kind'], registers,
        async collect() {
          for (const [volume, dir] of [['data', volumes.data], ['index', volumes.index]] as const) {
            try {
              const fs = await statfs(dir);
              const total = fs.blocks * fs.bsize;
              this.set({ volume, kind: 'total' }, total);
              this.set({ volume, kind: 'used' }, total - fs.bfree * fs.bsize);
              this.set({ volume, kind: 'available' }, fs.bavail * fs.bsize);
            } catch {
              // the directory is gone (being restored): report nothing rather than a stale figure
              for (const kind of ['total', 'used', 'available']) this.remove({ volume, kind });
            }
          }
        },
      });
    }
  }

  #registerClusterFamilies(registers: Registry[]): void {
    const cluster = this.#sources.cluster;
    if (cluster === undefined) return;
    const self = (): GossipMemberFigures | undefined => cluster.members().find((m) => m.instanceId === cluster.instanceId);
    const nowMs = this.#nowMs;
    const progress = this.#writerProgress;
    const noteEpoch = (epoch: number): void => {
      if (epoch < 0) return;
      this.#firstEpoch ??= epoch;
      this.#lastEpoch = Math.max(this.#lastEpoch, epoch);
    };
    const electionsSince = (): number => (this.#firstEpoch === undefined ? 0 : this.#lastEpoch - this.#firstEpoch);
    new Gauge({
      name: 'eventdb_node_epoch_number', help: 'The latest epoch (leadership term) this node has; -1 before the first.', registers,
      collect() {
        const epoch = self()?.epochNumber;
        if (epoch === undefined) return;
        noteEpoch(epoch);
        this.set(epoch);
      },
    });
    new Counter({
      name: 'eventdb_elections_total', help: 'Elections completed (new epochs begun) since this node started, as this node has seen them.', registers,
      collect() {
        const epoch = self()?.epochNumber;
        if (epoch !== undefined) noteEpoch(epoch);
        this.reset();
        this.inc(electionsSince());
      },
    });
    new Gauge({
      name: 'eventdb_cluster_members', help: 'Members of the cluster as this node\'s gossip sees them, by role (voter, read-only-replica) and alive (true, false).',
      labelNames: ['role', 'alive'], registers,
      collect() {
        this.reset();
        const counts = new Map<string, number>();
        for (const role of ['voter', 'read-only-replica']) for (const alive of ['true', 'false']) counts.set(`${role}|${alive}`, 0);
        for (const m of cluster.members()) {
          const key = `${m.isReadOnlyReplica ? 'read-only-replica' : 'voter'}|${m.isAlive}`;
          counts.set(key, (counts.get(key) ?? 0) + 1);
        }
        for (const [key, count] of counts) {
          const [role = '', alive = ''] = key.split('|');
          this.set({ role, alive }, count);
        }
      },
    });
    new Gauge({
      name: 'eventdb_cluster_size', help: 'The configured number of voting members (ClusterSize).', registers,
      collect() { this.set(cluster.clusterSize); },
    });
    const replicas = (): ReplicationFigures['replicas'] => {
      try { return cluster.replication().replicas; } catch { return []; }
    };
    const writer = (): number => {
      try { return cluster.replication().writerCheckpoint; } catch { return 0; }
    };
    new Gauge({
      name: 'eventdb_replication_lag_bytes', help: 'On the leader: log bytes each connected replica has not acknowledged yet, by replica (instance id) and address.',
      labelNames: ['replica', 'address'], registers,
      collect() {
        this.reset();
        const end = writer();
        for (const r of replicas()) this.set({ replica: r.instanceId, address: r.remoteAddress }, Math.max(0, end - r.ackedPosition));
      },
    });
    new Gauge({
      name: 'eventdb_replication_lag_seconds', help: 'On the leader: age of the oldest data each connected replica has not acknowledged (a lower bound, within a second), by replica and address.',
      labelNames: ['replica', 'address'], registers,
      collect() {
        this.reset();
        const now = nowMs();
        progress.record(writer(), now);
        for (const r of replicas()) this.set({ replica: r.instanceId, address: r.remoteAddress }, progress.secondsBehind(r.ackedPosition, now));
      },
    });
  }

  #registerServiceFamilies(registers: Registry[]): void {
    const { scavenges, autoScavenge, subscriptions, projections, certificates } = this.#sources;
    const nowMs = this.#nowMs;
    if (scavenges !== undefined) {
      gaugeAtScrape(registers, 'eventdb_scavenge_running', '1 while a scavenge runs on this node.', [], (set) => set({}, scavenges().running === undefined ? 0 : 1));
      gaugeAtScrape(registers, 'eventdb_scavenge_chunks_scavenged', 'The running scavenge\'s progress: the last chunk number it has scavenged (compare with eventdb_chunks).', [], (set) => {
        const running = scavenges().running;
        if (running !== undefined) set({}, running.chunksScavengedUpTo);
      }, true);
      gaugeAtScrape(registers, 'eventdb_scavenge_running_seconds', 'How long the running scavenge has run.', [], (set) => {
        const running = scavenges().running;
        if (running !== undefined) set({}, Math.max(0, (nowMs() - running.startedAtMs) / 1000));
      }, true);
      counterAtScrape(registers, 'eventdb_scavenges_total', 'Scavenges this process finished, by result (Success, Stopped, Errored, Interrupted).', ['result'], (set) => {
        const byResult = scavenges().finishedByResult;
        for (const result of SCAVENGE_RESULTS) set({ result }, byResult.get(result) ?? 0);
      });
      gaugeAtScrape(registers, 'eventdb_scavenge_last_finished_timestamp_seconds', 'When the last scavenge of each result this process ran finished (Unix seconds), by result.', ['result'], (set) => {
        for (const [result, atMs] of scavenges().lastFinishedAtMs) set({ result }, atMs / 1000);
      });
      gaugeAtScrape(registers, 'eventdb_scavenge_last_result', '1 for the result of the last scavenge this process started (InProgress, Success, Stopped, Errored), by result.', ['result'], (set) => {
        const last = scavenges().last;
        if (last.scavengeId !== undefined) set({ result: last.result }, 1);
      }, true);
    }
    if (autoScavenge !== undefined) {
      gaugeAtScrape(registers, 'eventdb_auto_scavenge_status', '1 for the auto-scavenge status on this node (NotConfigured, Waiting, InProgress, Pausing, Paused), by status; none while it is not ready.', ['status'], (set) => {
        const status = autoScavenge();
        if (status === undefined) return;
        for (const candidate of AUTO_SCAVENGE_STATUSES) set({ status: candidate }, candidate === status ? 1 : 0);
      }, true);
    }
    if (subscriptions !== undefined) {
      const labels = ['event_stream_id', 'group_name'] as const;
      const each = (pick: (s: SubscriptionFigures) => number | undefined) => (set: Setter) => {
        for (const s of subscriptions() ?? []) {
          const value = pick(s);
          if (value !== undefined) set({ event_stream_id: s.stream, group_name: s.group }, value);
        }
      };
      gaugeAtScrape(registers, 'eventdb_persistent_sub_connections', 'Consumers connected to each persistent subscription group (on the node that runs them).', labels, each((s) => s.connections), true);
      gaugeAtScrape(registers, 'eventdb_persistent_sub_parked_messages', 'Parked messages of each group.', labels, each((s) => s.parkedMessages), true);
      gaugeAtScrape(registers, 'eventdb_persistent_sub_in_flight_messages', 'Messages in flight (sent, not acknowledged) of each group.', labels, each((s) => s.inFlightMessages), true);
      counterAtScrape(registers, 'eventdb_persistent_sub_items_processed_total', 'Items each group has processed since it started on this node.', labels, each((s) => s.itemsProcessed));
      gaugeAtScrape(registers, 'eventdb_persistent_sub_last_known_event_position', 'The last event (number, or commit position for $all) each group knows of.', labels, each((s) => s.lastKnownEventPosition), true);
      gaugeAtScrape(registers, 'eventdb_persistent_sub_checkpointed_event_position', 'The last checkpointed event (number, or commit position for $all) of each group.', labels, each((s) => s.lastCheckpointedEventPosition), true);
    }
    if (projections !== undefined) {
      gaugeAtScrape(registers, 'eventdb_projection_status', '1 for the status each projection is in (Running, Stopped, Faulted), by projection and status.', ['projection', 'status'], (set) => {
        for (const p of projections()) {
          const status = PROJECTION_STATUSES.find((s) => p.status.startsWith(s)) ?? 'Stopped';
          for (const candidate of PROJECTION_STATUSES) set({ projection: p.name, status: candidate }, candidate === status ? 1 : 0);
        }
      }, true);
      gaugeAtScrape(registers, 'eventdb_projection_progress_ratio', 'Progress of each projection, 0 to 1.', ['projection'], (set) => {
        for (const p of projections()) set({ projection: p.name }, Math.max(0, Math.min(1, p.progress / 100)));
      }, true);
      counterAtScrape(registers, 'eventdb_projection_events_processed_after_restart_total', 'Events each projection processed since it last started.', ['projection'], (set) => {
        for (const p of projections()) set({ projection: p.name }, p.eventsProcessedAfterRestart);
      });
    }
    if (certificates !== undefined) {
      gaugeAtScrape(registers, 'eventdb_certificate_expiry_timestamp_seconds', 'When the certificates this node serves and trusts expire (Unix seconds), by kind (node, ca) and subject.', ['kind', 'subject'], (set) => {
        const c = certificates();
        set({ kind: 'node', subject: '' }, c.nodeNotAfterMs / 1000);
        for (const root of c.rootsNotAfterMs) set({ kind: 'ca', subject: root.subject }, root.notAfterMs / 1000);
      }, true);
    }
  }
}

type LabelValues = Record<string, string>;
type Setter = (labels: LabelValues, value: number) => void;

/** A gauge whose series are set at scrape time; `replace`: series not set this time go away. */
function gaugeAtScrape(registers: Registry[], name: string, help: string, labelNames: readonly string[], fill: (set: Setter) => void, replace = false): void {
  new Gauge({
    name, help, labelNames: [...labelNames], registers,
    collect() {
      if (replace) this.reset();
      fill((labels, value) => { if (Number.isFinite(value)) this.set(labels, value); });
    },
  });
}

/**
 * A counter whose totals live elsewhere (the engine's counters, the scavenge service's): set at
 * scrape time by a reset and an increment by the total (prom-client counters have no set).
 */
function counterAtScrape(registers: Registry[], name: string, help: string, labelNames: readonly string[], fill: (set: Setter) => void): void {
  new Counter({
    name, help, labelNames: [...labelNames], registers,
    collect() {
      // every series is rebuilt from the totals (a series that is gone, e.g. a deleted group, goes)
      this.reset();
      fill((labels, value) => { if (Number.isFinite(value) && value >= 0) this.inc(labels, value); });
    },
  });
}
