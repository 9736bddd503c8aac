/**
 * Real measurements behind `GET /stats`: process (CPU, memory, threads, GC, disk I/O, TCP),
 * system (CPU, load, memory, the data directory's drive) and service (HTTP request queue, writer
 * flushes and read-index cache counters from the engine).
 *
 * Rates are computed over the interval since the previous sample; samples are memoized for one
 * second (as EventStoreDB does) so rates are never taken over a meaningless sliver of time. GC
 * figures come from v8.GCProfiler, drained periodically so its buffer stays small.
 */
import { readFile, realpath, statfs } from 'node:fs/promises';
import type { Socket } from 'node:net';
import os from 'node:os';
import v8 from 'node:v8';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';

import type { EventDb } from '../../storage/event-db-types.js';

export type StatsTree = { [key: string]: StatsValue };
export type StatsValue = string | number | boolean | null | StatsTree;

export interface StatsSamplerOptions {
  readonly db: EventDb;
  readonly server: Server;
  /** Directory whose drive is reported under sys.drive (the data directory). */
  readonly dataPath?: string;
  readonly nowMs?: () => number;
  /** A cluster member's replication group (svc.replication); absent for a node alone. */
  readonly replication?: () => StatsTree;
}

const MEMO_MS = 1000;
const GC_DRAIN_INTERVAL_MS = 5000;
const QUEUE_PEAK_WINDOW_MS = 100;

interface GcTotals {
  gen0Count: number;
  gen1Count: number;
  gen2Count: number;
  costMicros: number;
  freedBytes: number;
}

export class StatsSampler {
  private readonly db: EventDb;
  private readonly dataPath: string | undefined;
  private readonly replication: (() => StatsTree) | undefined;
  private readonly nowMs: () => number;
  private readonly startMs: number;
  private readonly queue: RequestQueueMeter;
  private readonly tcp: TcpMeter;
  private readonly gcProfiler = new v8.GCProfiler();
  private readonly gcTotals: GcTotals = {
    gen0Count: 0,
    gen1Count: 0,
    gen2Count: 0,
    costMicros: 0,
    freedBytes: 0,
  };
  private readonly gcTimer: NodeJS.Timeout;
  private previous: {
    atMs: number;
    cpu: NodeJS.CpuUsage;
    sysCpu: CpuTimes;
    gcCostMicros: number;
    allocated: number;
  };
  private memo: { atMs: number; tree: Promise<StatsTree> } | undefined;

  constructor(options: StatsSamplerOptions) {
    this.db = options.db;
    this.dataPath = options.dataPath;
    this.replication = options.replication;
    this.nowMs = options.nowMs ?? (() => Date.now());
    this.startMs = this.nowMs() - process.uptime() * 1000;
    this.queue = new RequestQueueMeter(options.server, this.nowMs);
    this.tcp = new TcpMeter(options.server);
    this.gcProfiler.start();
    this.gcTimer = setInterval(() => this.drainGc(), GC_DRAIN_INTERVAL_MS).unref();
    this.previous = {
      atMs: this.nowMs(),
      cpu: process.cpuUsage(),
      sysCpu: systemCpuTimes(),
      gcCostMicros: 0,
      allocated: v8.getHeapStatistics().used_heap_size,
    };
  }

  /** Names an in-flight request by its route, e.g. `POST /streams/:stream`. */
  labelRequest(req: IncomingMessage, method: string, route: string | undefined): void {
    this.queue.label(req, method, route);
  }

  close(): void {
    clearInterval(this.gcTimer);
    this.gcProfiler.stop();
  }

  /** The current statistics tree; recomputed at most once per second. */
  sample(): Promise<StatsTree> {
    const now = this.nowMs();
    if (this.memo !== undefined && now - this.memo.atMs < MEMO_MS) return this.memo.tree;
    const tree = this.collect(now);
    this.memo = { atMs: now, tree };
    return tree;
  }

  private async collect(now: number): Promise<StatsTree> {
    this.drainGc();
    const elapsedMs = Math.max(1, now - this.previous.atMs);
    const cpu = process.cpuUsage();
    const sysCpu = systemCpuTimes();
    const heap = v8.getHeapStatistics();
    const allocated = heap.used_heap_size + this.gcTotals.freedBytes;
    const [status, io, drive] = await Promise.all([
      readProcStatus(),
      readProcIo(),
      this.driveStats(),
    ]);
    const procCpuPercent =
      ((cpu.user + cpu.system - this.previous.cpu.user - this.previous.cpu.system) /
        1000 /
        elapsedMs) *
      100;
    const tree: StatsTree = {
      proc: {
        startTime: new Date(this.startMs).toISOString(),
        id: process.pid,
        // EventStoreDB's figure: the virtual size (large under V8: address space reserved, not used).
        mem: status.vmSizeBytes ?? process.memoryUsage().rss,
        // What the process really holds in RAM, beside it (issue 29): the figure to watch.
        memResidentBytes: process.memoryUsage.rss(),
        cpu: round(procCpuPercent),
        cpuScaled: round(procCpuPercent / os.availableParallelism()),
        threadsCount: status.threads ?? 0,
        // Node has no managed-lock contention or first-chance exception counters to report.
        contentionsRate: 0,
        thrownExceptionsRate: 0,
        gc: this.gcStats(heap, allocated, elapsedMs),
        diskIo: io,
        tcp: this.tcp.sample(elapsedMs),
      },
      sys: {
        cpu: round(systemCpuPercent(this.previous.sysCpu, sysCpu)),
        loadavg: loadAverages(),
        freeMem: os.freemem(),
        totalMem: os.totalmem(),
        drive,
      },
      svc: this.serviceStats(elapsedMs),
    };
    this.previous = { atMs: now, cpu, sysCpu, gcCostMicros: this.gcTotals.costMicros, allocated };
    return tree;
  }

  private gcStats(heap: v8.HeapInfo, allocated: number, elapsedMs: number): StatsTree {
    const spaces = new Map(
      v8.getHeapSpaceStatistics().map((s) => [s.space_name, s.space_used_size]),
    );
    const gcMs = (this.gcTotals.costMicros - this.previous.gcCostMicros) / 1000;
    return {
      allocationSpeed: round(Math.max(0, allocated - this.previous.allocated) / (elapsedMs / 1000)),
      fragmentation: round(
        heap.total_heap_size === 0 ? 0 : (1 - heap.used_heap_size / heap.total_heap_size) * 100,
      ),
      gen0ItemsCount: this.gcTotals.gen0Count,
      gen0Size: spaces.get('new_space') ?? 0,
      gen1ItemsCount: this.gcTotals.gen1Count,
      gen1Size: spaces.get('old_space') ?? 0,
      gen2ItemsCount: this.gcTotals.gen2Count,
      gen2Size: (spaces.get('code_space') ?? 0) + (spaces.get('shared_space') ?? 0),
      largeHeapSize:
        (spaces.get('large_object_space') ?? 0) + (spaces.get('new_large_object_space') ?? 0),
      timeInGc: round(Math.min(100, (gcMs / elapsedMs) * 100)),
      totalBytesInHeaps: heap.used_heap_size,
    };
  }

  private serviceStats(elapsedMs: number): StatsTree {
    const engine = this.db.stats();
    return {
      checksum: engine.writerCheckpoint,
      checksumNonFlushed: engine.writerCheckpoint,
      // The spec documents one queue object under svc.queue (EventStoreDB nests one per queue
      // name); the node has one request queue, reported here directly.
      queue: this.queue.sample(elapsedMs),
      writer: {
        lastFlushSize: engine.writer.lastFlushSizeBytes,
        lastFlushDelayMs: round(engine.writer.lastFlushDelayMs),
        meanFlushSize: round(engine.writer.meanFlushSizeBytes),
        meanFlushDelayMs: round(engine.writer.meanFlushDelayMs),
        maxFlushSize: engine.writer.maxFlushSizeBytes,
        maxFlushDelayMs: round(engine.writer.maxFlushDelayMs),
        queuedFlushMessages: engine.writer.queuedFlushMessages,
      },
      readIndex: {
        cachedRecord: engine.readIndex.cachedRecord,
        notCachedRecord: engine.readIndex.notCachedRecord,
        cachedStreamInfo: engine.readIndex.cachedStreamInfo,
        notCachedStreamInfo: engine.readIndex.notCachedStreamInfo,
        cachedTransInfo: 0,
        notCachedTransInfo: 0,
        hashCollisions: engine.readIndex.hashCollisions,
      },
      ...(this.replication === undefined ? {} : { replication: this.replication() }),
    };
  }

  private async driveStats(): Promise<StatsTree> {
    if (this.dataPath === undefined) return {};
    try {
      const path = await realpath(this.dataPath);
      const [fs, mountPoint] = await Promise.all([statfs(path), mountPointOf(path)]);
      const totalBytes = fs.blocks * fs.bsize;
      const availableBytes = fs.bavail * fs.bsize;
      const usedBytes = totalBytes - fs.bfree * fs.bsize;
      return {
        [mountPoint]: {
          availableBytes,
          totalBytes,
          usage: totalBytes === 0 ? 0 : Math.round((usedBytes / totalBytes) * 100),
          usedBytes,
        },
      };
    } catch {
      return {};
    }
  }

  private drainGc(): void {
    const profile = this.gcProfiler.stop();
    this.gcProfiler.start();
    for (const entry of profile?.statistics ?? []) {
      const kind = entry.gcType;
      if (kind === 'Scavenge' || kind === 'MinorMarkCompact' || kind === 'MinorMarkSweep')
        this.gcTotals.gen0Count += 1;
      else if (kind === 'MarkSweepCompact') this.gcTotals.gen2Count += 1;
      else this.gcTotals.gen1Count += 1;
      this.gcTotals.costMicros += entry.cost;
      const freed =
        entry.beforeGC.heapStatistics.usedHeapSize - entry.afterGC.heapStatistics.usedHeapSize;
      this.gcTotals.freedBytes += Math.max(0, freed);
    }
  }
}

/**
 * In-flight HTTP requests seen as EventStoreDB's main queue: length, peaks, throughput,
 * processing time and idle time, from the raw server's request and finish events.
 */
class RequestQueueMeter {
  /** Insertion-ordered: the first entry is the oldest request. */
  private readonly inFlight = new Map<IncomingMessage, QueueEntry>();
  private totalProcessed = 0;
  private processingMsTotal = 0;
  private lifetimePeak = 0;
  private windowStartMs = 0;
  private windowPeak = 0;
  private idleSinceMs: number;
  private idleMsTotal = 0;
  private lastProcessed: QueueEntry | undefined;
  private previous = { processed: 0, processingMs: 0, idleMs: 0 };

  constructor(
    server: Server,
    private readonly nowMs: () => number,
  ) {
    this.idleSinceMs = nowMs();
    // First listener: the entry exists before fastify routes the request and its hooks label it.
    server.prependListener('request', (req: IncomingMessage, res: ServerResponse) =>
      this.onRequest(req, res),
    );
  }

  sample(elapsedMs: number): StatsTree {
    const now = this.nowMs();
    const idleMs = this.idleMsTotal + (this.inFlight.size === 0 ? now - this.idleSinceMs : 0);
    const processed = this.totalProcessed - this.previous.processed;
    const processingMs = this.processingMsTotal - this.previous.processingMs;
    const oldest = this.inFlight.values().next();
    const stats: StatsTree = {
      queueName: 'MainQueue',
      groupName: 'HTTP',
      avgItemsPerSecond: Math.round(processed / (elapsedMs / 1000)),
      avgProcessingTime: round(processed === 0 ? 0 : processingMs / processed),
      currentIdleTime: timeSpan(this.inFlight.size === 0 ? now - this.idleSinceMs : 0),
      currentItemProcessingTime: timeSpan(oldest.done === true ? 0 : now - oldest.value.startMs),
      idleTimePercent: round(Math.min(100, ((idleMs - this.previous.idleMs) / elapsedMs) * 100)),
      length: this.inFlight.size,
      lengthCurrentTryPeak:
        now - this.windowStartMs < QUEUE_PEAK_WINDOW_MS ? this.windowPeak : this.inFlight.size,
      lengthLifetimePeak: this.lifetimePeak,
      totalItemsProcessed: this.totalProcessed,
      inProgressMessage: oldest.done === true ? '<none>' : entryLabel(oldest.value),
      lastProcessedMessage:
        this.lastProcessed === undefined ? '<none>' : entryLabel(this.lastProcessed),
    };
    this.previous = {
      processed: this.totalProcessed,
      processingMs: this.processingMsTotal,
      idleMs,
    };
    return stats;
  }

  /** Names an in-flight request by its route instead of its raw path (from a fastify hook). */
  label(req: IncomingMessage, method: string, route: string | undefined): void {
    const entry = this.inFlight.get(req);
    if (entry === undefined) return;
    entry.method = method;
    entry.route = route ?? '(unrouted)';
  }

  private onRequest(req: IncomingMessage, res: ServerResponse): void {
    const now = this.nowMs();
    if (this.inFlight.size === 0) this.idleMsTotal += now - this.idleSinceMs;
    // Labels are built only when /stats shows them, not per request.
    const entry: QueueEntry = { startMs: now, req, method: undefined, route: undefined };
    this.inFlight.set(req, entry);
    this.notePeak(now);
    let done = false;
    const finish = (): void => {
      if (done) return;
      done = true;
      const end = this.nowMs();
      this.inFlight.delete(req);
      this.totalProcessed += 1;
      this.processingMsTotal += end - entry.startMs;
      this.lastProcessed = entry;
      if (this.inFlight.size === 0) this.idleSinceMs = end;
    };
    res.once('finish', finish);
    res.once('close', finish);
  }

  private notePeak(now: number): void {
    const length = this.inFlight.size;
    this.lifetimePeak = Math.max(this.lifetimePeak, length);
    if (now - this.windowStartMs >= QUEUE_PEAK_WINDOW_MS) {
      this.windowStartMs = now;
      this.windowPeak = length;
    } else {
      this.windowPeak = Math.max(this.windowPeak, length);
    }
  }
}

/** TCP connections and byte counters of the HTTP server. */
class TcpMeter {
  private readonly sockets = new Set<Socket>();
  private closedReceivedBytes = 0;
  private closedSentBytes = 0;
  private previous = { received: 0, sent: 0 };

  constructor(server: Server) {
    server.on('connection', (socket: Socket) => {
      this.sockets.add(socket);
      socket.once('close', () => {
        this.sockets.delete(socket);
        this.closedReceivedBytes += socket.bytesRead;
        this.closedSentBytes += socket.bytesWritten;
      });
    });
  }

  sample(elapsedMs: number): StatsTree {
    let received = this.closedReceivedBytes;
    let sent = this.closedSentBytes;
    let inSend = 0;
    let pendingReceived = 0;
    for (const socket of this.sockets) {
      received += socket.bytesRead;
      sent += socket.bytesWritten;
      inSend += socket.writableLength;
      pendingReceived += socket.readableLength;
    }
    const seconds = elapsedMs / 1000;
    const receivedSinceLastRun = received - this.previous.received;
    const sentSinceLastRun = sent - this.previous.sent;
    this.previous = { received, sent };
    return {
      connections: this.sockets.size,
      // The spec types receivingSpeed as a string (sendingSpeed as a number); both are B/s.
      receivingSpeed: String(round(receivedSinceLastRun / seconds)),
      sendingSpeed: round(sentSinceLastRun / seconds),
      inSend,
      measureTime: round(seconds),
      pendingReceived,
      pendingSend: inSend,
      receivedBytesSinceLastRun: receivedSinceLastRun,
      receivedBytesTotal: received,
      sentBytesSinceLastRun: sentSinceLastRun,
      sentBytesTotal: sent,
    };
  }
}

interface CpuTimes {
  readonly idle: number;
  readonly total: number;
}

function systemCpuTimes(): CpuTimes {
  let idle = 0;
  let total = 0;
  for (const cpu of os.cpus()) {
    const t = cpu.times;
    idle += t.idle;
    total += t.user + t.nice + t.sys + t.idle + t.irq;
  }
  return { idle, total };
}

function systemCpuPercent(before: CpuTimes, after: CpuTimes): number {
  const total = after.total - before.total;
  return total <= 0 ? 0 : (1 - (after.idle - before.idle) / total) * 100;
}

function loadAverages(): StatsTree {
  const [m1 = 0, m5 = 0, m15 = 0] = os.loadavg();
  return { '1m': round(m1), '5m': round(m5), '15m': round(m15) };
}

async function readProcStatus(): Promise<{ vmSizeBytes?: number; threads?: number }> {
  try {
    const text = await readFile('/proc/self/status', 'utf8');
    const vmSizeKb = /^VmSize:\s+(\d+)\s+kB/m.exec(text)?.[1];
    const threads = /^Threads:\s+(\d+)/m.exec(text)?.[1];
    return {
      ...(vmSizeKb === undefined ? {} : { vmSizeBytes: Number(vmSizeKb) * 1024 }),
      ...(threads === undefined ? {} : { threads: Number(threads) }),
    };
  } catch {
    return {};
  }
}

/** Storage I/O of this process since it started (Linux /proc/self/io); zeros elsewhere. */
async function readProcIo(): Promise<StatsTree> {
  const field = (text: string, name: string): number =>
    Number(new RegExp(`^${name}:\\s+(\\d+)`, 'm').exec(text)?.[1] ?? 0);
  try {
    const text = await readFile('/proc/self/io', 'utf8');
    return {
      readBytes: field(text, 'read_bytes'),
      writtenBytes: field(text, 'write_bytes'),
      readOps: field(text, 'syscr'),
      writeOps: field(text, 'syscw'),
    };
  } catch {
    return { readBytes: 0, writtenBytes: 0, readOps: 0, writeOps: 0 };
  }
}

/** The mount point holding `path` (longest prefix in /proc/self/mountinfo), else `path`. */
async function mountPointOf(path: string): Promise<string> {
  try {
    const text = await readFile('/proc/self/mountinfo', 'utf8');
    let best = '';
    for (const line of text.split('\n')) {
      const mount = line.split(' ')[4]?.replace(/\\040/g, ' ');
      if (mount === undefined) continue;
      const covers = mount === '/' || path === mount || path.startsWith(`${mount}/`);
      if (covers && mount.length > best.length) best = mount;
    }
    return best === '' ? path : best;
  } catch {
    return path;
  }
}

interface QueueEntry {
  readonly startMs: number;
  readonly req: IncomingMessage;
  /** Set once fastify has routed the request; until then the label is the raw path's head. */
  method: string | undefined;
  route: string | undefined;
}

/** `POST /streams/:stream` once routed, else `POST /streams` (method and first path segment). */
function entryLabel(entry: QueueEntry): string {
  if (entry.route !== undefined) return `${entry.method ?? 'GET'} ${entry.route}`;
  const firstSegment = /^\/[^/?]*/.exec(entry.req.url ?? '/')?.[0] ?? '/';
  return `${entry.req.method ?? 'GET'} ${firstSegment}`;
}

/** .NET TimeSpan text (`hh:mm:ss.fffffff`), as EventStoreDB prints elapsed times. */
function timeSpan(ms: number): string {
  const totalMs = Math.max(0, ms);
  const hours = Math.floor(totalMs / 3_600_000);
  const minutes = Math.floor((totalMs % 3_600_000) / 60_000);
  const seconds = Math.floor((totalMs % 60_000) / 1000);
  const ticks = Math.round((totalMs % 1000) * 10_000);
  const pad = (n: number, width: number): string => String(n).padStart(width, '0');
  return `${pad(hours, 2)}:${pad(minutes, 2)}:${pad(seconds, 2)}.${pad(ticks, 7)}`;
}

function round(value: number): number {
  return Number.isFinite(value) ? Math.round(value * 100) / 100 : 0;
}
