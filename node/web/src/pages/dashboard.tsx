import { useRef, useState } from 'preact/hooks';
import { getJson, request, type Session } from '../api.js';
import { Chart } from '../chart.js';
import { ErrorBanner, formatBytes, Notice, Section, useAction, usePoll } from '../ui.js';

interface Member {
  instanceId: string;
  state: string;
  isAlive: boolean;
  httpEndPointIp: string;
  httpEndPointPort: number;
  writerCheckpoint: number;
  chaserCheckpoint: number;
  epochNumber: number;
  nodePriority: number;
  isReadOnlyReplica: boolean;
  timeStamp: string;
}

interface Stats {
  proc: { mem: number; cpu: number; gc: { totalBytesInHeaps: number }; diskIo: { readBytes: number; writtenBytes: number } };
  sys: { freeMem: number; totalMem: number; drive?: Record<string, { usedBytes?: number; totalBytes?: number; availableBytes?: number; usage?: number | string }> };
  svc: {
    checksum: number;
    queue: { length: number; totalItemsProcessed: number; avgProcessingTime: number };
    writer: { queuedFlushMessages: number; lastFlushDelayMs: number };
    readIndex: { cachedRecord: number; notCachedRecord: number };
  };
}

interface Sample {
  t: number;
  stats: Stats;
}

const POINTS = 90;
const EVERY_MS = 2000;

export function Dashboard({ session }: { session: Session }) {
  const info = usePoll((s) => getJson<{ state: string; esVersion: string }>('/info', s), EVERY_MS, []);
  const gossip = usePoll((s) => getJson<{ members: Member[]; serverIp: string; serverPort: number }>('/gossip', s), EVERY_MS, []);
  const samples = useRef<Sample[]>([]);
  const [series, setSeries] = useState<Record<string, number[][]>>({});
  const stats = usePoll(
    async (s) => {
      const next = await getJson<Stats>('/stats', s);
      samples.current = [...samples.current, { t: Date.now() / 1000, stats: next }].slice(-(POINTS + 1));
      setSeries(toSeries(samples.current));
      return next;
    },
    EVERY_MS,
    [],
  );
  const resign = useAction();
  const members = gossip.value?.members ?? [];
  const leader = members.find((m) => m.state === 'Leader' && m.isAlive);
  const self = members.find((m) => m.httpEndPointPort === gossip.value?.serverPort && m.httpEndPointIp === gossip.value?.serverIp);
  const latest = stats.value;
  return (
    <div class="page">
      <h1>Dashboard</h1>
      <ErrorBanner error={info.error ?? gossip.error ?? stats.error} />
      <Section title="This node">
        <dl class="facts">
          <dt>State</dt>
          <dd data-testid="node-state">{info.value?.state ?? '…'}</dd>
          <dt>Role</dt>
          <dd>{self === undefined ? (members.length <= 1 ? 'single node' : '…') : self.isReadOnlyReplica ? 'read-only replica' : self.state}</dd>
          <dt>Version</dt>
          <dd>{info.value?.esVersion ?? '…'}</dd>
          {latest !== undefined && (
            <>
              <dt>Memory</dt>
              <dd>
                heap {formatBytes(latest.proc.gc.totalBytesInHeaps)}, system free {formatBytes(latest.sys.freeMem)} of {formatBytes(latest.sys.totalMem)}
              </dd>
              <dt>Writer checkpoint</dt>
              <dd>{latest.svc.checksum}</dd>
            </>
          )}
        </dl>
        {session.operator && info.value?.state === 'leader' && (
          <p>
            <button type="button" disabled={resign.busy} onClick={() => resign.run(async () => { await request('/admin/node/resign', { method: 'POST' }); return 'Resign requested: the cluster elects another leader.'; })}>
              Resign leadership
            </button>
          </p>
        )}
        <Notice text={resign.done} />
        <ErrorBanner error={resign.error} />
      </Section>
      <Section title="Cluster members">
        <div class="scroll">
          <table data-testid="members">
            <thead>
              <tr>
                <th>Endpoint</th>
                <th>State</th>
                <th>Alive</th>
                <th>Writer checkpoint</th>
                <th>Chaser checkpoint</th>
                <th>Lag</th>
                <th>Epoch</th>
              </tr>
            </thead>
            <tbody>
              {members.map((m) => (
                <tr key={m.instanceId} data-state={m.state}>
                  <td>
                    {m.httpEndPointIp}:{m.httpEndPointPort}
                  </td>
                  <td>{m.state}</td>
                  <td>{m.isAlive ? 'yes' : 'no'}</td>
                  <td>{m.writerCheckpoint}</td>
                  <td>{m.chaserCheckpoint}</td>
                  <td>{leader === undefined ? '' : formatBytes(Math.max(0, leader.writerCheckpoint - m.writerCheckpoint))}</td>
                  <td>{m.epochNumber}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      </Section>
      <div class="charts">
        <Chart title="Log written per second" series={['bytes/s']} data={series.written ?? [[], []]} unit={formatBytes} />
        <Chart title="Reads per second" series={['records/s']} data={series.reads ?? [[], []]} />
        <Chart title="HTTP requests per second" series={['requests/s']} data={series.requests ?? [[], []]} />
        <Chart title="Latency (ms)" series={['HTTP request (mean)', 'log flush (last)']} data={series.latency ?? [[], [], []]} />
        <Chart title="Queue lengths" series={['HTTP queue', 'writer flushes queued']} data={series.queues ?? [[], [], []]} />
        <Chart title="Memory" series={['JS heap', 'process (virtual)']} data={series.memory ?? [[], [], []]} unit={formatBytes} />
        <Chart title="Disk I/O per second" series={['read', 'written']} data={series.disk ?? [[], [], []]} unit={formatBytes} />
      </div>
    </div>
  );
}

/** Rates from successive /stats samples (counters differ over the time between them). */
function toSeries(samples: Sample[]): Record<string, number[][]> {
  const t: number[] = [];
  const written: number[] = [];
  const reads: number[] = [];
  const requests: number[] = [];
  const httpQueue: number[] = [];
  const flushes: number[] = [];
  const heap: number[] = [];
  const mem: number[] = [];
  const diskRead: number[] = [];
  const diskWritten: number[] = [];
  const httpLatency: number[] = [];
  const flushLatency: number[] = [];
  for (let i = 1; i < samples.length; i++) {
    const a = samples[i - 1]!;
    const b = samples[i]!;
    const dt = Math.max(0.001, b.t - a.t);
    const rate = (x: number, y: number) => Math.max(0, (y - x) / dt);
    t.push(b.t);
    written.push(rate(a.stats.svc.checksum, b.stats.svc.checksum));
    reads.push(rate(a.stats.svc.readIndex.cachedRecord + a.stats.svc.readIndex.notCachedRecord, b.stats.svc.readIndex.cachedRecord + b.stats.svc.readIndex.notCachedRecord));
    requests.push(rate(a.stats.svc.queue.totalItemsProcessed, b.stats.svc.queue.totalItemsProcessed));
    httpQueue.push(b.stats.svc.queue.length);
    flushes.push(b.stats.svc.writer.queuedFlushMessages);
    heap.push(b.stats.proc.gc.totalBytesInHeaps);
    mem.push(b.stats.proc.mem);
    diskRead.push(rate(a.stats.proc.diskIo.readBytes, b.stats.proc.diskIo.readBytes));
    diskWritten.push(rate(a.stats.proc.diskIo.writtenBytes, b.stats.proc.diskIo.writtenBytes));
    httpLatency.push(b.stats.svc.queue.avgProcessingTime);
    flushLatency.push(b.stats.svc.writer.lastFlushDelayMs);
  }
  return {
    written: [t, written],
    reads: [t, reads],
    requests: [t, requests],
    latency: [t, httpLatency, flushLatency],
    queues: [t, httpQueue, flushes],
    memory: [t, heap, mem],
    disk: [t, diskRead, diskWritten],
  };
}
