/**
 * The seam between the processing core and what a projection computes: a user's JavaScript (on
 * its own thread, js-runtime.ts) or a native system projection (system-handlers.ts). The core
 * hands over batches of events with their partitions and gets back, per event, what to emit and
 * whether the partition's result changed.
 */
import type { Logger } from 'pino';
import { ProjectionFault, JsProjectionRuntime, type SandboxEvent } from '../runtime/js-runtime.js';
import { SourceDefinitionSchema, type SourceDefinition } from '../source-definition.js';
import type { EmittedSpec, NativeHandler } from '../system/system-handlers.js';
import type { SourceEvent } from './event-reader.js';

export interface HandlerItem {
  readonly source: SourceEvent;
  readonly partition: string;
  /** The category of a fromCategory projection (envelope `category`). */
  readonly category: string | null;
  /** Set for a deleted-stream notification of partition `partition` ($deleted). */
  readonly deleted?: { readonly soft: boolean };
}

export interface HandlerOutput {
  readonly emitted: readonly EmittedSpec[];
  /** The partition's result changed (projections that produce results). */
  readonly resultChanged: boolean;
  readonly result: string | null;
  /** The partition's state was initialised by this event. */
  readonly created: boolean;
}

export interface DirtyStates {
  readonly partitions: ReadonlyArray<readonly [string, string, string | null]>;
  readonly shared: string | null;
}

export interface ProjectionHandler {
  readonly definition: SourceDefinition;
  /** True when partitions come from the handler (partitionBy). */
  readonly customPartitions: boolean;
  partitionsOf(items: ReadonlyArray<{ source: SourceEvent; category: string | null }>): Promise<Array<string | null>>;
  /** Outputs per item (undefined = nothing); rejects with a ProjectionFault. */
  process(items: readonly HandlerItem[]): Promise<Array<HandlerOutput | undefined>>;
  load(states: ReadonlyArray<readonly [string, string | null, string | null]>, shared?: string | null): Promise<void>;
  unload(partitions: readonly string[]): Promise<void>;
  state(partition: string): Promise<string>;
  result(partition: string): Promise<string>;
  shared(): Promise<string>;
  takeDirty(): Promise<DirtyStates>;
  results(): Promise<Array<[string, string | null]>>;
  /** Events written with each checkpoint (native `$by_event_type`). */
  checkpointEvents(tagJson: string): EmittedSpec[];
  dispose(): Promise<void>;
}

function text(buffer: Buffer): string {
  return buffer.toString('utf8');
}

/** The sandbox's view of an event (strings and numbers only). */
export function toSandboxEvent(item: { source: SourceEvent; category: string | null; deleted?: { soft: boolean } }): SandboxEvent {
  const { event, link } = item.source;
  const metadata = event.metadata.byteLength === 0 ? null : text(event.metadata);
  const linkMetadata = link === undefined || link.metadata.byteLength === 0 ? null : text(link.metadata);
  return [
    event.stream,
    event.eventType,
    item.category,
    event.eventNumber,
    event.eventId,
    event.isJson,
    text(event.data),
    metadata,
    linkMetadata,
    item.deleted === undefined ? 0 : 1,
    item.deleted?.soft === true ? 1 : 0,
  ];
}

interface SandboxOutputJson {
  readonly e?: Array<{ s: string; t: string; d: string; j: boolean; m: Record<string, string> | null }>;
  readonly c?: 1;
  readonly r?: string | null;
  readonly n?: 1;
}

export function parseSandboxOutput(json: string): HandlerOutput {
  const out = JSON.parse(json) as SandboxOutputJson;
  return {
    emitted: (out.e ?? []).map((e) => ({ stream: e.s, eventType: e.t, data: e.d, isJson: e.j, extra: e.m })),
    resultChanged: out.c === 1,
    result: out.r ?? null,
    created: out.n === 1,
  };
}

export class JsHandler implements ProjectionHandler {
  private constructor(
    private readonly runtime: JsProjectionRuntime,
    readonly definition: SourceDefinition,
  ) {}

  get customPartitions(): boolean {
    return this.definition.byCustomPartitions;
  }

  /** Starts the runtime and runs the definition; rejects with a ProjectionFault. */
  static async create(options: {
    source: string;
    executionTimeoutMs: number;
    compilationTimeoutMs: number;
    memoryLimitMb: number;
    log: Logger;
  }): Promise<JsHandler> {
    const { runtime, definitionJson } = await JsProjectionRuntime.start(options);
    const parsed = SourceDefinitionSchema.safeParse(JSON.parse(definitionJson));
    if (!parsed.success) {
      await runtime.dispose();
      throw new ProjectionFault('The projection definition could not be read', 'error');
    }
    return new JsHandler(runtime, parsed.data);
  }

  async partitionsOf(items: ReadonlyArray<{ source: SourceEvent; category: string | null }>): Promise<Array<string | null>> {
    return this.runtime.partitions(items.map((item) => toSandboxEvent(item)));
  }

  async process(items: readonly HandlerItem[]): Promise<Array<HandlerOutput | undefined>> {
    const outputs = await this.runtime.process(
      items.map((item) => toSandboxEvent(item)),
      items.map((item) => item.partition),
    );
    const result: Array<HandlerOutput | undefined> = new Array(items.length);
    for (const [index, json] of outputs) result[index] = parseSandboxOutput(json);
    return result;
  }

  load(states: ReadonlyArray<readonly [string, string | null, string | null]>, shared?: string | null): Promise<void> {
    return this.runtime.load(states, shared);
  }

  async unload(partitions: readonly string[]): Promise<void> {
    await this.runtime.unload(partitions);
  }

  state(partition: string): Promise<string> {
    return this.runtime.state(partition);
  }

  result(partition: string): Promise<string> {
    return this.runtime.result(partition);
  }

  shared(): Promise<string> {
    return this.runtime.shared();
  }

  async takeDirty(): Promise<DirtyStates> {
    const dirty = await this.runtime.takeDirty();
    return { partitions: dirty.p, shared: dirty.s };
  }

  results(): Promise<Array<[string, string | null]>> {
    return this.runtime.results();
  }

  checkpointEvents(): EmittedSpec[] {
    return [];
  }

  dispose(): Promise<void> {
    return this.runtime.dispose();
  }
}

/** A system projection: no state, one emitted event at most per input event. */
export class NativeProjectionHandler implements ProjectionHandler {
  readonly customPartitions = false;

  constructor(private readonly native: NativeHandler) {}

  get definition(): SourceDefinition {
    return this.native.definition;
  }

  async partitionsOf(items: ReadonlyArray<unknown>): Promise<Array<string | null>> {
    return items.map(() => '');
  }

  async process(items: readonly HandlerItem[]): Promise<Array<HandlerOutput | undefined>> {
    const out: Array<HandlerOutput | undefined> = new Array(items.length);
    for (let index = 0; index < items.length; index++) {
      const item = items[index] as HandlerItem;
      const emitted = this.native.process({ event: item.source.event });
      if (emitted !== undefined) out[index] = { emitted: [emitted], resultChanged: false, result: null, created: false };
    }
    return out;
  }

  async load(): Promise<void> {}

  async unload(): Promise<void> {}

  async state(): Promise<string> {
    return '';
  }

  async result(): Promise<string> {
    return '';
  }

  async shared(): Promise<string> {
    return '';
  }

  async takeDirty(): Promise<DirtyStates> {
    return { partitions: [], shared: null };
  }

  async results(): Promise<Array<[string, string | null]>> {
    return [];
  }

  checkpointEvents(tagJson: string): EmittedSpec[] {
    return this.native.checkpointEvents?.(tagJson) ?? [];
  }

  async dispose(): Promise<void> {}
}
