/**
 * A user projection's JavaScript, run on a worker thread of its own, from the main thread's side.
 *
 * Isolation (see node/ARCHITECTURE.md, "Projections"):
 * - the source runs in a vm context on that thread (sandbox-worker.ts) with no `require`,
 *   `process`, timers, network or files, code generation from strings disabled, and only
 *   primitives crossing into it;
 * - memory: the thread's V8 heap is bounded (`resourceLimits`); a projection that allocates
 *   without bound kills only its own thread, which ends as an ERR_WORKER_OUT_OF_MEMORY error;
 * - time: vm's own timeout for the definition (`compilationTimeoutMs`); for each event a watchdog
 *   here samples a shared counter the thread bumps per call into user code and terminates the
 *   thread when one call has run longer than `executionTimeoutMs`. A vm timeout per call would
 *   start a watchdog thread per event (about 0.13 ms each here, more than the handler itself).
 *
 * Every failure (a handler that throws, a timeout, the memory limit, the thread dying) rejects the
 * pending and later calls with a ProjectionFault; the projection then stops with its message in
 * `stateReason`, and the node goes on.
 */
import { Worker } from 'node:worker_threads';
import type { Logger } from 'pino';
import { installProjectionApi } from './sandbox-api.js';
import { sandboxWorkerMain } from './sandbox-worker.js';

/**
 * One event as the sandbox sees it: [streamId, eventType, category, sequenceNumber, eventId,
 * isJson, bodyRaw, metadataRaw, linkMetadataRaw, kind (0 event, 1 deleted notification),
 * isSoftDelete (1/0)].
 */
export type SandboxEvent = [
  string, string, string | null, number, string, boolean, string, string | null, string | null, 0 | 1, 0 | 1,
];

/** Per event that produced something: its index in the batch and the sandbox's JSON output. */
export type SandboxOutput = [number, string];

export type FaultKind = 'error' | 'timeout' | 'memory' | 'crashed';

/** The projection's code failed; `message` is what stateReason shows. */
export class ProjectionFault extends Error {
  constructor(
    message: string,
    readonly kind: FaultKind,
    /** Index in the batch of the event that failed, when known. */
    readonly index?: number,
    /** Outputs of the events before it in the same batch. */
    readonly outputs?: readonly SandboxOutput[],
  ) {
    super(message);
    this.name = 'ProjectionFault';
  }
}

export interface JsRuntimeOptions {
  readonly source: string;
  /** Longest time one call into a handler may run (projectionExecutionTimeout, default 250). */
  readonly executionTimeoutMs: number;
  /** Longest time the definition (the source's top level) may run (default 500). */
  readonly compilationTimeoutMs: number;
  /** V8 old-generation heap limit of the projection's thread, in MiB. */
  readonly memoryLimitMb: number;
  readonly log: Logger;
}

interface Pending {
  readonly resolve: (value: unknown) => void;
  readonly reject: (err: ProjectionFault) => void;
}

interface Reply {
  readonly id: number;
  readonly ok: boolean;
  readonly value?: unknown;
  readonly error?: { message: string; stack: string; code?: string };
  readonly index?: number;
  readonly outputs?: SandboxOutput[];
  readonly logs?: string;
}

const WORKER_CODE = `(${sandboxWorkerMain.toString()})()`;
const API_SOURCE = installProjectionApi.toString();
const YOUNG_GENERATION_MB_MAX = 16;

/** .NET TimeSpan "c" format, as the original's timeout messages: `00:00:00.2500000`. */
export function formatTimeSpan(ms: number): string {
  const totalTicks = Math.round(ms * 10_000);
  const ticks = totalTicks % 10_000_000;
  const totalSeconds = Math.floor(totalTicks / 10_000_000);
  const pad = (n: number, width = 2): string => String(n).padStart(width, '0');
  const base = `${pad(Math.floor(totalSeconds / 3600))}:${pad(Math.floor(totalSeconds / 60) % 60)}:${pad(totalSeconds % 60)}`;
  return ticks === 0 ? base : `${base}.${pad(ticks, 7)}`;
}

export class JsProjectionRuntime {
  private readonly worker: Worker;
  private readonly control: Int32Array;
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private failure: ProjectionFault | undefined;
  private watchdog: NodeJS.Timeout | undefined;
  private lastCalls = -1;
  private lastChangeMs = 0;
  private disposed = false;

  private constructor(private readonly options: JsRuntimeOptions) {
    const shared = new SharedArrayBuffer(Int32Array.BYTES_PER_ELEMENT * 4);
    this.control = new Int32Array(shared);
    this.worker = new Worker(WORKER_CODE, {
      eval: true,
      workerData: { apiSource: API_SOURCE, control: shared },
      resourceLimits: {
        maxOldGenerationSizeMb: options.memoryLimitMb,
        maxYoungGenerationSizeMb: Math.min(YOUNG_GENERATION_MB_MAX, Math.max(1, Math.floor(options.memoryLimitMb / 4))),
        stackSizeMb: 4,
      },
      stdout: true,
      stderr: true,
      env: {},
    });
    this.worker.unref();
    // The context has no console; anything the thread itself might print is discarded.
    this.worker.stdout.resume();
    this.worker.stderr.resume();
    this.worker.on('message', (reply: Reply) => this.onReply(reply));
    this.worker.on('error', (err: Error & { code?: string }) => {
      const memory = err.code === 'ERR_WORKER_OUT_OF_MEMORY';
      this.fail(
        new ProjectionFault(
          memory
            ? `Projection exceeded its memory limit of ${options.memoryLimitMb} MB (${err.message})`
            : `Projection runtime failed: ${err.message}`,
          memory ? 'memory' : 'crashed',
        ),
      );
    });
    this.worker.on('exit', (code) => {
      this.stopWatchdog();
      if (!this.disposed) this.fail(new ProjectionFault(`Projection runtime exited (code ${code})`, 'crashed'));
    });
  }

  /**
   * Starts the thread and runs the source's definition; resolves with the definition JSON
   * (sources and options) or rejects with a ProjectionFault (syntax error, exception, timeout).
   */
  static async start(options: JsRuntimeOptions): Promise<{ runtime: JsProjectionRuntime; definitionJson: string }> {
    const runtime = new JsProjectionRuntime(options);
    try {
      const definitionJson = (await runtime.request({
        op: 'compile',
        source: options.source,
        compileTimeoutMs: options.compilationTimeoutMs,
      })) as string;
      return { runtime, definitionJson };
    } catch (err) {
      await runtime.dispose();
      throw err;
    }
  }

  /** The partition of each event (partitionBy), or null when the event maps to none (skipped). */
  async partitions(events: readonly SandboxEvent[]): Promise<Array<string | null>> {
    return (await this.request({ op: 'partitions', events })) as Array<string | null>;
  }

  /** Runs the handlers over the events, each in its partition; outputs of events that produced any. */
  async process(events: readonly SandboxEvent[], partitions: readonly string[]): Promise<SandboxOutput[]> {
    return (await this.request({ op: 'process', events, partitions })) as SandboxOutput[];
  }

  /** Loads stored partition states ([partition, state|null, result|null]) and the shared state. */
  async load(states: ReadonlyArray<readonly [string, string | null, string | null]>, shared?: string | null): Promise<void> {
    await this.request(shared === undefined ? { op: 'load', states } : { op: 'load', states, shared });
  }

  /** Forgets cached partition states (they are in their checkpoint streams); resolves with how many remain. */
  async unload(partitions: readonly string[]): Promise<number> {
    return (await this.request({ op: 'unload', partitions })) as number;
  }

  async state(partition: string): Promise<string> {
    return (await this.request({ op: 'state', partition })) as string;
  }

  async result(partition: string): Promise<string> {
    return (await this.request({ op: 'result', partition })) as string;
  }

  async shared(): Promise<string> {
    return (await this.request({ op: 'shared' })) as string;
  }

  /** States changed since the last call: `{p: [[partition, state, result|null]], s: shared|null}`. */
  async takeDirty(): Promise<{ p: Array<[string, string, string | null]>; s: string | null }> {
    return JSON.parse((await this.request({ op: 'dirty' })) as string) as {
      p: Array<[string, string, string | null]>;
      s: string | null;
    };
  }

  /** Every held partition's result: [partition, result|null]. */
  async results(): Promise<Array<[string, string | null]>> {
    return JSON.parse((await this.request({ op: 'results' })) as string) as Array<[string, string | null]>;
  }

  get faulted(): ProjectionFault | undefined {
    return this.failure;
  }

  async dispose(): Promise<void> {
    if (this.disposed) return;
    this.disposed = true;
    this.stopWatchdog();
    for (const [, pending] of this.pending) pending.reject(new ProjectionFault('Projection stopped', 'crashed'));
    this.pending.clear();
    await this.worker.terminate();
  }

  private request(message: Record<string, unknown>): Promise<unknown> {
    if (this.failure !== undefined) return Promise.reject(this.failure);
    if (this.disposed) return Promise.reject(new ProjectionFault('Projection stopped', 'crashed'));
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.worker.postMessage({ ...message, id });
      this.startWatchdog();
    });
  }

  private onReply(reply: Reply): void {
    const pending = this.pending.get(reply.id);
    if (reply.logs !== undefined) {
      for (const line of JSON.parse(reply.logs) as string[]) this.options.log.debug({ projectionLog: line }, 'PROJECTIONS (JS)');
    }
    if (pending === undefined) return;
    this.pending.delete(reply.id);
    if (this.pending.size === 0) this.stopWatchdog();
    if (reply.ok) {
      pending.resolve(reply.value);
      return;
    }
    const error = reply.error ?? { message: 'Unknown error', stack: '' };
    if (error.code === 'ERR_SCRIPT_EXECUTION_TIMEOUT') {
      const allowed = formatTimeSpan(this.options.compilationTimeoutMs);
      pending.reject(new ProjectionFault(`Projection script took too long to compile (took: ${allowed}, allowed: ${allowed})`, 'timeout'));
      return;
    }
    pending.reject(new ProjectionFault(error.message, 'error', reply.index, reply.outputs));
  }

  private fail(fault: ProjectionFault): void {
    if (this.failure !== undefined) return;
    this.failure = fault;
    this.stopWatchdog();
    for (const [, pending] of this.pending) pending.reject(fault);
    this.pending.clear();
    if (!this.disposed) {
      this.disposed = true;
      void this.worker.terminate();
    }
  }

  private startWatchdog(): void {
    if (this.watchdog !== undefined) return;
    const timeoutMs = this.options.executionTimeoutMs;
    this.lastCalls = -1;
    this.watchdog = setInterval(() => this.checkWatchdog(timeoutMs), Math.max(5, Math.min(50, Math.floor(timeoutMs / 5))));
    this.watchdog.unref();
  }

  private stopWatchdog(): void {
    if (this.watchdog === undefined) return;
    clearInterval(this.watchdog);
    this.watchdog = undefined;
  }

  /** No false alarms: the time is measured from when this thread last saw the count move. */
  private checkWatchdog(timeoutMs: number): void {
    const now = performance.now();
    const calls = Atomics.load(this.control, 1);
    const busy = Atomics.load(this.control, 0) === 1;
    if (!busy || calls !== this.lastCalls) {
      this.lastCalls = calls;
      this.lastChangeMs = now;
      return;
    }
    const tookMs = now - this.lastChangeMs;
    if (tookMs < timeoutMs) return;
    this.fail(
      new ProjectionFault(
        `Projection script took too long to execute (took: ${formatTimeSpan(tookMs)}, allowed: ${formatTimeSpan(timeoutMs)})`,
        'timeout',
      ),
    );
  }
}
