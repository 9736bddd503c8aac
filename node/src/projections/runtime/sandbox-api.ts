/**
 * The projection JavaScript API as it runs INSIDE a projection's vm context (never in the node's
 * own realm): the selectors (`fromAll`, `fromStream`, `fromStreams`, `fromCategory`,
 * `fromCategories`), the chaining object (`when`, `partitionBy`, `foreachStream`, `outputState`,
 * `transformBy`, `filterBy`, `outputTo`, `$defines_state_transform`) with EventStoreDB's chaining
 * rules, `options`, `on_event`, `on_any`, `log`, and, once the definition has run, `emit`,
 * `linkTo`, `linkStreamTo` and `copyTo`.
 *
 * `installProjectionApi` is self-contained: the sandbox worker evaluates its source text
 * (`Function.prototype.toString`) inside the context, so it must not refer to anything outside
 * its own body, and it only ever exchanges primitives (strings, numbers, booleans, null) with
 * the host, so no object of the host's realm (and no way to reach its `Function` constructor)
 * ever enters the context. It leaves one global, `__edb`, the host's handle, which the worker
 * takes and deletes before the user's source runs.
 *
 * Semantics follow EventStoreDB's JintProjectionStateHandler: a handler gets `(state, event)`
 * and its return value replaces the state unless it is `undefined`; a specific handler wins over
 * `$any`; with neither, the state becomes the event's raw body; `$init` (default `{}`) and
 * `$initShared` initialise a partition's state and the shared state; `$created(state, event)`
 * runs when a partition's state is initialised; `$deleted(state, null, partition, isSoftDelete)`
 * on a deleted stream (foreachStream only); a bi-state projection's handlers get
 * `[state, sharedState]`. `filterBy` keeps the result only when its function returns exactly
 * `true`. The envelope carries isJson, data/body (parsed lazily), bodyRaw, sequenceNumber,
 * metadataRaw, metadata, linkMetadataRaw, linkMetadata, partition, eventType, streamId, category
 * and eventId.
 */

/* eslint-disable */
export function installProjectionApi(): void {
  'use strict';
  const g: any = globalThis;
  // Taken before the user's source runs: replacing JSON or Object later only affects user code.
  const stringify = JSON.stringify;
  const parse = JSON.parse;
  const ownKeys = Object.keys;
  const isArray = Array.isArray;
  const hasOwn = Object.prototype.hasOwnProperty;

  const sources: any = {
    allStreams: false,
    categories: [] as string[],
    streams: [] as string[],
    allEvents: true,
    events: [] as string[],
    byStreams: false,
    byCustomPartitions: false,
    options: {
      definesStateTransform: false,
      producesResults: false,
      definesFold: false,
      handlesDeletedNotifications: false,
      resultStreamName: null as string | null,
      partitionResultStreamNamePattern: null as string | null,
      $includeLinks: false,
      reorderEvents: false,
      processingLag: null as number | null,
      biState: false,
    },
  };
  const handlers: any = Object.create(null);
  let initHandler: any;
  let initSharedHandler: any;
  let anyHandler: any;
  let deletedHandler: any;
  const createdHandlers: any[] = [];
  let partitionFunction: any;
  const transforms: Array<{ filter: boolean; fn: any }> = [];
  let logs: string[] = [];
  let emitted: any[] = [];

  function fail(message: string): never {
    throw new Error(message);
  }

  // ---------------------------------------------------------------- definition (chaining)

  const query: any = {};
  const available: any = {
    fromStream: ['when', 'partitionBy', 'outputState'],
    fromAll: ['when', 'partitionBy', 'outputState', 'foreachStream'],
    fromStreams: ['when', 'partitionBy', 'outputState'],
    fromCategory: ['when', 'partitionBy', 'outputState', 'foreachStream'],
    when: ['transformBy', 'filterBy', 'outputState', 'outputTo', '$defines_state_transform'],
    foreachStream: ['when'],
    outputState: ['transformBy', 'filterBy', 'outputTo'],
    partitionBy: ['when'],
    transformBy: ['transformBy', 'filterBy', 'outputState', 'outputTo'],
    filterBy: ['transformBy', 'filterBy', 'outputState', 'outputTo'],
    outputTo: [],
    execution: [],
  };
  const methods: any = {
    when(handlerMap: any) {
      if (handlerMap !== null && typeof handlerMap === 'object') {
        for (const key of ownKeys(handlerMap)) {
          const fn = handlerMap[key];
          if (typeof fn === 'function') addHandler(key, fn);
        }
      }
      sources.options.definesFold = true;
      restrict('when');
      return query;
    },
    partitionBy(fn: any) {
      if (typeof fn !== 'function') fail('partitionBy');
      sources.byCustomPartitions = true;
      partitionFunction = fn;
      restrict('partitionBy');
      return query;
    },
    foreachStream() {
      sources.byStreams = true;
      restrict('foreachStream');
      return query;
    },
    outputState() {
      restrict('outputState');
      sources.options.producesResults = true;
      return query;
    },
    transformBy(fn: any) {
      if (typeof fn !== 'function') fail('expected function');
      sources.options.definesStateTransform = true;
      sources.options.producesResults = true;
      transforms.push({ filter: false, fn });
      restrict('transformBy');
      return query;
    },
    filterBy(fn: any) {
      if (typeof fn !== 'function') fail('expected function');
      sources.options.definesStateTransform = true;
      sources.options.producesResults = true;
      transforms.push({ filter: true, fn });
      restrict('filterBy');
      return query;
    },
    outputTo(resultStream: any, partitionPattern: any) {
      const count = arguments.length;
      if (count !== 1 && count !== 2) fail('invalid number of parameters');
      if (typeof resultStream !== 'string') fail('expected string value (resultStream)');
      if (count === 2 && typeof partitionPattern !== 'string')
        fail('expected string value (partitionResultStreamPattern)');
      sources.options.resultStreamName = resultStream.trim() === '' ? null : resultStream;
      if (count === 2)
        sources.options.partitionResultStreamNamePattern =
          partitionPattern.trim() === '' ? null : partitionPattern;
      restrict('outputTo');
      return query;
    },
    $defines_state_transform() {
      sources.options.definesStateTransform = true;
      sources.options.producesResults = true;
      return undefined;
    },
  };

  /** Leaves on the chaining object exactly the methods EventStoreDB allows after `stage`. */
  function restrict(stage: string): void {
    const allowed: string[] = available[stage];
    for (const key of ownKeys(query)) if (allowed.indexOf(key) < 0) delete query[key];
    for (const key of allowed) if (!hasOwn.call(query, key)) query[key] = methods[key];
  }

  function addHandler(name: string, fn: any): void {
    switch (name) {
      case '$init':
        initHandler = fn;
        return;
      case '$initShared':
        sources.options.biState = true;
        initSharedHandler = fn;
        return;
      case '$any':
        anyHandler = fn;
        sources.allEvents = true;
        return;
      case '$created':
        createdHandlers.push(fn);
        return;
      case '$deleted':
        if (sources.options.biState) fail('Cannot handle deletes in bi-state projections');
        sources.options.handlesDeletedNotifications = true;
        deletedHandler = fn;
        return;
      default:
        if (anyHandler === undefined) sources.allEvents = false;
        if (sources.events.indexOf(name) < 0) sources.events.push(name);
        handlers[name] = fn;
    }
  }

  function category(name: any): string {
    if (typeof name !== 'string') fail('category');
    return name;
  }

  const setters: any = {
    $includelinks(value: any) {
      if (typeof value !== 'boolean') fail('Invalid value');
      sources.options.$includeLinks = value;
    },
    reorderevents(value: any) {
      if (typeof value !== 'boolean') fail('Invalid value');
      sources.options.reorderEvents = value;
    },
    processinglag(value: any) {
      if (typeof value !== 'number') fail('Invalid value');
      sources.options.processingLag = Math.trunc(value);
    },
    resultstreamname(value: any) {
      if (typeof value !== 'string') fail('Invalid value');
      sources.options.resultStreamName = value.trim() === '' ? null : value;
    },
    bistate(value: any) {
      if (typeof value !== 'boolean') fail('Invalid value');
      sources.options.biState = value;
    },
  };

  const definitionFunctions: any = {
    options(opts: any) {
      if (opts !== null && typeof opts === 'object') {
        for (const key of ownKeys(opts)) {
          const setter = setters[key.toLowerCase()];
          if (setter === undefined) fail(`Unrecognized option: ${key}`);
          setter(opts[key]);
        }
      }
      return undefined;
    },
    fromStream(stream: any) {
      if (typeof stream !== 'string') fail('stream');
      sources.streams.push(stream);
      restrict('fromStream');
      return query;
    },
    fromCategory(...names: any[]) {
      if (names.length === 0) return query;
      if (names.length === 1 && isArray(names[0])) {
        for (const name of names[0]) sources.streams.push(`$ce-${category(name)}`);
      } else if (names.length > 1) {
        for (const name of names) sources.streams.push(`$ce-${category(name)}`);
      } else {
        sources.categories.push(category(names[0]));
      }
      restrict('fromCategory');
      return query;
    },
    fromAll() {
      sources.allStreams = true;
      restrict('fromAll');
      return query;
    },
    fromStreams(...streams: any[]) {
      const list = streams.length > 0 && isArray(streams[0]) ? streams[0] : streams;
      for (const stream of list) {
        if (typeof stream !== 'string') fail('streams');
        sources.streams.push(stream);
      }
      restrict('fromStreams');
      return query;
    },
    on_event(eventName: any, fn: any) {
      if (arguments.length !== 2) fail('invalid number of parameters');
      if (typeof eventName !== 'string') fail('eventName');
      if (typeof fn !== 'function') fail('eventHandler');
      addHandler(eventName, fn);
      return undefined;
    },
    on_any(fn: any) {
      if (arguments.length !== 1) fail('invalid number of parameters');
      if (typeof fn !== 'function') fail('eventHandler');
      addHandler('$any', fn);
      return undefined;
    },
  };
  definitionFunctions.fromCategories = definitionFunctions.fromCategory;

  function define(name: string, value: any): void {
    Object.defineProperty(g, name, { value, writable: true, enumerable: false, configurable: true });
  }

  for (const name of ownKeys(definitionFunctions)) define(name, definitionFunctions[name]);
  define('log', function log(...args: any[]) {
    if (args.length === 0) return undefined;
    const parts: string[] = [];
    for (const arg of args) {
      if (arg !== null && typeof arg === 'object') parts.push(stringify(arg));
      else parts.push(String(arg));
    }
    if (logs.length < 1000) logs.push(parts.join(' '));
    return undefined;
  });

  // ---------------------------------------------------------------- execution (emits)

  function nonEmptyString(value: any, parameter: string): string {
    if (typeof value === 'string' && value.trim() !== '') return value;
    if (value === null || value === undefined || typeof value === 'string')
      fail(`Value cannot be null. (Parameter '${parameter}')`);
    fail(`string expected (Parameter '${parameter}')`);
  }

  function objectValue(value: any, parameter: string): any {
    if (value === null || value === undefined) fail(`Value cannot be null. (Parameter '${parameter}')`);
    if (typeof value !== 'object') fail(`object expected (Parameter '${parameter}')`);
    return value;
  }

  /** Extra metadata: each own property's value as raw JSON text (undefined values skipped). */
  function extraMetadata(value: any): any {
    const out: any = {};
    let any = false;
    for (const key of ownKeys(value)) {
      const v = value[key];
      if (v === undefined) continue;
      out[key] = stringify(v);
      any = true;
    }
    return any ? out : null;
  }

  const executionFunctions: any = {
    emit(streamId: any, eventType: any, body: any, metadata: any) {
      if (arguments.length < 3) fail('invalid number of parameters');
      const stream = nonEmptyString(streamId, 'streamId');
      const type = nonEmptyString(eventType, 'eventName');
      const data = stringify(objectValue(body, 'eventBody'));
      let extra = null;
      if (arguments.length >= 4) {
        if (metadata === null || typeof metadata !== 'object') fail("object expected (Parameter 'metadata')");
        extra = extraMetadata(metadata);
      }
      emitted.push({ s: stream, t: type, d: data, j: true, m: extra });
      return undefined;
    },
    linkTo(streamId: any, event: any, metadata: any) {
      if (arguments.length !== 2 && arguments.length !== 3) fail('wrong number of parameters');
      const stream = nonEmptyString(streamId, 'streamId');
      const target = objectValue(event, 'event');
      const number = target.sequenceNumber;
      const source = target.streamId;
      if (typeof number !== 'number' || typeof source !== 'string')
        fail(`Invalid link to event ${number}@${source}`);
      const extra = arguments.length === 3 ? extraMetadata(objectValue(metadata, 'metaData')) : null;
      emitted.push({ s: stream, t: '$>', d: `${Math.trunc(number)}@${source}`, j: false, m: extra });
      return undefined;
    },
    linkStreamTo(streamId: any, linkedStreamId: any, metadata: any) {
      const stream = nonEmptyString(streamId, 'streamId');
      const linked = nonEmptyString(linkedStreamId, 'linkedStreamId');
      const extra = arguments.length >= 3 && metadata !== undefined
        ? extraMetadata(objectValue(metadata, 'metaData'))
        : null;
      emitted.push({ s: stream, t: '$@', d: linked, j: false, m: extra });
      return undefined;
    },
    copyTo(streamId: any, event: any, metadata: any) {
      const stream = nonEmptyString(streamId, 'streamId');
      const source = objectValue(event, 'event');
      const merged: any = {};
      const eventMetadata = source.metadata;
      if (eventMetadata !== null && typeof eventMetadata === 'object') {
        for (const key of ownKeys(eventMetadata))
          if (key.indexOf('$') !== 0 || key === '$correlationId') merged[key] = eventMetadata[key];
      }
      if (metadata !== null && typeof metadata === 'object') {
        for (const key of ownKeys(metadata)) if (key.indexOf('$') !== 0) merged[key] = metadata[key];
      }
      const type = nonEmptyString(source.eventType, 'eventType');
      const raw = typeof source.bodyRaw === 'string' ? source.bodyRaw : '';
      emitted.push({ s: stream, t: type, d: raw, j: source.isJson === true, m: extraMetadata(merged) });
      return undefined;
    },
  };

  // ---------------------------------------------------------------- states

  interface Partition {
    state: any;
    /** The state as last serialized (only kept when the projection produces results). */
    json: string;
    result: string | null;
    initialised: boolean;
  }
  const partitions = new Map<string, Partition>();
  let shared: any;
  let sharedInitialised = false;
  const dirty = new Set<string>();
  let sharedDirty = false;

  function serialize(value: any): string {
    if (value === null || value === undefined) return '';
    if (typeof value === 'string') return value;
    const text = stringify(value);
    return text === undefined ? '' : text;
  }

  function parseState(text: string | null): any {
    if (text === null || text === '') return undefined;
    try {
      return parse(text);
    } catch {
      return text;
    }
  }

  function entry(partition: string): Partition {
    let p = partitions.get(partition);
    if (p === undefined) {
      p = { state: undefined, json: '', result: null, initialised: false };
      partitions.set(partition, p);
    }
    return p;
  }

  function ensureShared(): void {
    if (!sources.options.biState || sharedInitialised) return;
    shared = initSharedHandler === undefined ? {} : initSharedHandler();
    sharedInitialised = true;
    sharedDirty = true;
  }

  /**
   * Initialises the partition when its state is empty (never set, or a handler left it null,
   * undefined or ''); true when it did, i.e. the partition is new.
   */
  function ensureInitialised(p: Partition): boolean {
    if (p.initialised && p.state !== undefined && p.state !== null && p.state !== '') return false;
    p.state = initHandler === undefined ? {} : initHandler();
    p.initialised = true;
    return true;
  }

  function handlerState(p: Partition): any {
    return sources.options.biState ? [p.state, shared] : p.state;
  }

  function takeHandlerState(p: Partition, value: any): void {
    if (sources.options.biState && isArray(value)) {
      p.state = value[0];
      shared = value[1];
      sharedDirty = true;
    } else {
      p.state = value;
    }
  }

  function transformToResult(value: any): string | null {
    let current = value;
    for (const step of transforms) {
      if (step.filter) {
        const keep = step.fn(current);
        if (keep !== true) return null;
      } else {
        current = step.fn(current);
      }
      if (current === null || current === undefined) return null;
    }
    const text = serialize(current);
    return text === '' ? null : text;
  }

  function resultOfState(p: Partition): string | null {
    if (!sources.options.definesStateTransform) {
      const text = serialize(p.state);
      return text === '' ? null : text;
    }
    if (p.state === null || p.state === undefined) return null;
    return transformToResult(handlerState(p));
  }

  function envelope(
    partition: string, streamId: string, eventType: string, categoryName: string | null,
    sequenceNumber: number, eventId: string, isJson: boolean, bodyRaw: string,
    metadataRaw: string | null, linkMetadataRaw: string | null,
  ): any {
    let body: any;
    let bodyParsed = false;
    let metadata: any;
    let metadataParsed = false;
    let linkMetadata: any;
    let linkMetadataParsed = false;
    const lazyBody = (): any => {
      if (!bodyParsed) {
        bodyParsed = true;
        if (isJson) {
          try {
            body = parse(bodyRaw);
          } catch {
            body = undefined;
          }
        }
      }
      return body;
    };
    const lazyJson = (raw: string | null): any => {
      if (raw === null || raw === '') return undefined;
      try {
        return parse(raw);
      } catch {
        return undefined;
      }
    };
    return {
      isJson,
      get data() {
        return lazyBody();
      },
      get body() {
        return lazyBody();
      },
      bodyRaw,
      sequenceNumber,
      metadataRaw: metadataRaw ?? '',
      get metadata() {
        if (!metadataParsed) {
          metadataParsed = true;
          metadata = lazyJson(metadataRaw);
        }
        return metadata;
      },
      linkMetadataRaw: linkMetadataRaw ?? '',
      get linkMetadata() {
        if (!linkMetadataParsed) {
          linkMetadataParsed = true;
          linkMetadata = lazyJson(linkMetadataRaw);
        }
        return linkMetadata;
      },
      partition,
      eventType,
      streamId,
      category: categoryName ?? '',
      eventId,
    };
  }

  /**
   * '' when nothing to report, else JSON `{e: emitted[], c: 1 (result changed), r: result,
   * n: 1 (the partition was created)}`.
   */
  function output(p: Partition | undefined, before: string | undefined, created = false): string {
    let resultChanged = false;
    if (p !== undefined && sources.options.producesResults) {
      const json = serialize(p.state);
      if (json !== before) {
        p.json = json;
        p.result = resultOfState(p);
        resultChanged = true;
      }
    }
    if (emitted.length === 0 && !resultChanged && !created) return '';
    const out: any = {};
    if (emitted.length > 0) out.e = emitted;
    if (created) out.n = 1;
    if (resultChanged) {
      out.c = 1;
      out.r = p === undefined ? null : p.result;
    }
    emitted = [];
    return stringify(out);
  }

  function stateText(p: Partition): string {
    return serialize(p.state);
  }

  g.__edb = {
    definition(): string {
      return stringify(sources);
    },
    startExecution(): void {
      restrict('execution');
      for (const name of ownKeys(definitionFunctions)) delete g[name];
      delete g.fromCategories;
      for (const name of ownKeys(executionFunctions)) define(name, executionFunctions[name]);
    },
    loadState(partition: string, stateJson: string | null, resultJson: string | null): void {
      const p = entry(partition);
      p.state = parseState(stateJson);
      p.initialised = stateJson !== null && stateJson !== '';
      p.json = p.initialised && sources.options.producesResults ? stateText(p) : '';
      p.result = resultJson;
    },
    loadShared(stateJson: string | null): void {
      if (stateJson === null || stateJson === '') {
        sharedInitialised = false;
        shared = undefined;
        return;
      }
      shared = parseState(stateJson);
      sharedInitialised = true;
    },
    unload(partition: string): void {
      partitions.delete(partition);
    },
    partitionOf(
      streamId: string, eventType: string, categoryName: string | null, sequenceNumber: number,
      eventId: string, isJson: boolean, bodyRaw: string, metadataRaw: string | null,
      linkMetadataRaw: string | null,
    ): string | null {
      if (partitionFunction === undefined) return '';
      const e = envelope('', streamId, eventType, categoryName, sequenceNumber, eventId, isJson, bodyRaw, metadataRaw, linkMetadataRaw);
      const partition = partitionFunction(e);
      if (typeof partition === 'string') return partition;
      if (typeof partition === 'number') return String(partition);
      return null;
    },
    process(
      partition: string, streamId: string, eventType: string, categoryName: string | null,
      sequenceNumber: number, eventId: string, isJson: boolean, bodyRaw: string,
      metadataRaw: string | null, linkMetadataRaw: string | null,
    ): string {
      emitted = [];
      const p = entry(partition);
      const before = p.json;
      ensureShared();
      const e = envelope(partition, streamId, eventType, categoryName, sequenceNumber, eventId, isJson, bodyRaw, metadataRaw, linkMetadataRaw);
      const created = ensureInitialised(p);
      if (created) {
        for (const handler of createdHandlers) handler(handlerState(p), e);
      }
      const handler = handlers[eventType];
      let next: any;
      if (handler !== undefined) next = handler(handlerState(p), e);
      else if (anyHandler !== undefined) next = anyHandler(handlerState(p), e);
      else next = bodyRaw;
      if (next !== undefined) takeHandlerState(p, next);
      dirty.add(partition);
      return output(p, before, created);
    },
    deleted(partition: string, isSoftDelete: boolean): string {
      emitted = [];
      const p = entry(partition);
      const before = p.json;
      ensureInitialised(p);
      if (deletedHandler !== undefined) deletedHandler(handlerState(p), null, partition, isSoftDelete);
      dirty.add(partition);
      return output(p, before);
    },
    stateOf(partition: string): string {
      const p = partitions.get(partition);
      return p === undefined ? '' : stateText(p);
    },
    resultOf(partition: string): string {
      const p = partitions.get(partition);
      if (p === undefined) return '';
      if (!sources.options.definesStateTransform) return stateText(p);
      return resultOfState(p) ?? '';
    },
    sharedOf(): string {
      return sources.options.biState && sharedInitialised ? serialize(shared) : '';
    },
    /** JSON `{p: [[partition, state, result|null], ...], s: sharedState|null}` of what changed. */
    takeDirty(): string {
      const list: any[] = [];
      for (const partition of dirty) {
        const p = partitions.get(partition);
        if (p === undefined) continue;
        const state = stateText(p);
        list.push([partition, state, sources.options.definesStateTransform ? resultOfState(p) : null]);
      }
      dirty.clear();
      const out = { p: list, s: sharedDirty && sharedInitialised ? serialize(shared) : null };
      sharedDirty = false;
      return stringify(out);
    },
    /** JSON `[[partition, result|null], ...]` of every partition held. */
    allResults(): string {
      const list: any[] = [];
      for (const [partition, p] of partitions) list.push([partition, resultOfState(p)]);
      return stringify(list);
    },
    takeLogs(): string {
      if (logs.length === 0) return '';
      const text = stringify(logs);
      logs = [];
      return text;
    },
    partitionCount(): number {
      return partitions.size;
    },
  };
}
