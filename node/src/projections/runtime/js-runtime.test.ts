/**
 * The JavaScript runtime on its real worker thread, with projection sources from the original's
 * documentation (samples/http-api, docs/server/features/projections) and the failure cases: a
 * handler that throws, one that never returns, one that allocates without bound, and attempts to
 * reach the host.
 */
import { randomUUID } from 'node:crypto';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import type { RecordedEvent } from '../../storage/event-db-types.js';
import { JsHandler, type HandlerItem } from '../engine/handler.js';
import { validateDefinition } from '../source-definition.js';
import { ProjectionFault } from './js-runtime.js';

const log = pino({ level: 'silent' });
const handlers: JsHandler[] = [];

afterEach(async () => {
  await Promise.all(handlers.splice(0).map((h) => h.dispose()));
});

async function compile(source: string, overrides: { executionTimeoutMs?: number; memoryLimitMb?: number; compilationTimeoutMs?: number } = {}): Promise<JsHandler> {
  const handler = await JsHandler.create({
    source,
    executionTimeoutMs: overrides.executionTimeoutMs ?? 250,
    compilationTimeoutMs: overrides.compilationTimeoutMs ?? 500,
    memoryLimitMb: overrides.memoryLimitMb ?? 64,
    log,
  });
  handlers.push(handler);
  return handler;
}

async function compileFault(source: string, overrides: { compilationTimeoutMs?: number } = {}): Promise<ProjectionFault> {
  try {
    await compile(source, overrides);
  } catch (err) {
    expect(err).toBeInstanceOf(ProjectionFault);
    return err as ProjectionFault;
  }
  throw new Error('the source compiled');
}

let position = 1000;

function recorded(stream: string, eventType: string, body: unknown, options: { number?: number; metadata?: unknown; isJson?: boolean } = {}): RecordedEvent {
  position += 100;
  const isJson = options.isJson ?? true;
  return {
    stream,
    eventNumber: options.number ?? 0,
    eventId: randomUUID(),
    eventType,
    data: Buffer.from(typeof body === 'string' && !isJson ? body : JSON.stringify(body)),
    metadata: options.metadata === undefined ? Buffer.alloc(0) : Buffer.from(JSON.stringify(options.metadata)),
    isJson,
    createdMs: Date.now(),
    logPosition: position,
    commitPosition: position + 50,
  };
}

function item(event: RecordedEvent, partition = '', extra: { link?: RecordedEvent; category?: string } = {}): HandlerItem {
  return { source: { event, link: extra.link, position: extra.link ?? event }, partition, category: extra.category ?? null };
}

const xboxCounter = `fromAll()
.when({
    $init: function(){
        return {
            count: 0
        }
    },
    ItemAdded: function(s,e){
        if(e.body.Description.indexOf("Xbox One S") >= 0){
            s.count += 1;
        }
    }
})`;

describe('projection sources from the original documentation', () => {
  it('counts (xbox-one-s-counter.js): state, definition, no output when nothing is emitted', async () => {
    const handler = await compile(xboxCounter);
    expect(validateDefinition(handler.definition)).toEqual({ kind: 'all' });
    expect(handler.definition).toMatchObject({ allStreams: true, allEvents: false, events: ['ItemAdded'], options: { definesFold: true, producesResults: false } });
    const items = [
      item(recorded('shoppingCart-1', 'ItemAdded', { Description: 'Xbox One S 1TB (Console)' })),
      item(recorded('shoppingCart-1', 'ItemAdded', { Description: 'Gears of War 4' })),
      item(recorded('shoppingCart-2', 'ItemAdded', { Description: 'Xbox One S Controller' })),
      item(recorded('shoppingCart-3', 'ItemAdded', { Description: 'Xbox One S 1TB (Console)' })),
    ];
    const outputs = await handler.process(items);
    expect(outputs[0]?.created).toBe(true);
    expect(outputs.slice(1).every((o) => o === undefined)).toBe(true);
    expect(JSON.parse(await handler.state(''))).toEqual({ count: 3 });
  });

  it('outputs state and transforms it into a result (custom.md: transformBy + outputState)', async () => {
    const handler = await compile(`options({
    resultStreamName: "my_demo_projection_result",
    $includeLinks:    false,
    reorderEvents:    false,
    processingLag:    0
})

fromStream('account-1')
    .when({
        $init: function () {
            return {
                count: 0
            }
        },
        myEventType: function (state, event) {
            state.count += 1;
        }
    })
    .transformBy(function (state) {
        return {Total: state.count}
    })
    .outputState()`);
    expect(validateDefinition(handler.definition)).toEqual({ kind: 'stream', stream: 'account-1', category: undefined });
    expect(handler.definition.options).toMatchObject({ resultStreamName: 'my_demo_projection_result', producesResults: true, definesStateTransform: true, processingLag: 0 });
    const outputs = await handler.process([
      item(recorded('account-1', 'myEventType', {}, { number: 0 })),
      item(recorded('account-1', 'myEventType', {}, { number: 1 })),
    ]);
    expect(outputs.map((o) => o?.resultChanged)).toEqual([true, true]);
    expect(outputs.map((o) => o?.result)).toEqual(['{"Total":1}', '{"Total":2}']);
    expect(await handler.state('')).toBe('{"count":2}');
    expect(await handler.result('')).toBe('{"Total":2}');
  });

  it('keeps a state per stream (shopping-cart-counter.js: fromCategory + foreachStream)', async () => {
    const handler = await compile(`fromCategory('shoppingCart')
.foreachStream()
.when({
    $init: function(){
        return {
            count: 0
        }
    },
    ItemAdded: function(s,e){
        s.count += 1;
    }
})`);
    expect(validateDefinition(handler.definition)).toEqual({ kind: 'stream', stream: '$ce-shoppingCart', category: 'shoppingCart' });
    expect(handler.definition.byStreams).toBe(true);
    await handler.load([['shoppingCart-a', null, null], ['shoppingCart-b', '{"count":10}', null]]);
    const link = (event: RecordedEvent): HandlerItem => item(event, event.stream, { link: recorded('$ce-shoppingCart', '$>', `${event.eventNumber}@${event.stream}`, { isJson: false }), category: 'shoppingCart' });
    await handler.process([
      link(recorded('shoppingCart-a', 'ItemAdded', {}, { number: 0 })),
      link(recorded('shoppingCart-b', 'ItemAdded', {}, { number: 0 })),
      link(recorded('shoppingCart-a', 'ItemAdded', {}, { number: 1 })),
    ]);
    expect(await handler.state('shoppingCart-a')).toBe('{"count":2}');
    expect(await handler.state('shoppingCart-b')).toBe('{"count":11}');
    const dirty = await handler.takeDirty();
    expect([...dirty.partitions].sort()).toEqual([['shoppingCart-a', '{"count":2}', null], ['shoppingCart-b', '{"count":11}', null]]);
    expect((await handler.takeDirty()).partitions).toEqual([]);
  });

  it('partitions by a function of the event (partitionBy), skipping events it maps to nothing', async () => {
    const handler = await compile(`fromAll()
  .partitionBy(function (e) { return e.body.region; })
  .when({
    $init: function () { return { total: 0 }; },
    Sale: function (s, e) { s.total += e.body.amount; }
  })`);
    const events = [
      recorded('sales-1', 'Sale', { region: 'eu', amount: 5 }),
      recorded('sales-2', 'Sale', { region: 'us', amount: 7 }),
      recorded('sales-3', 'Sale', { amount: 1 }),
      recorded('sales-4', 'Sale', { region: 'eu', amount: 3 }),
    ];
    const partitions = await handler.partitionsOf(events.map((event) => ({ source: { event, link: undefined, position: event }, category: null })));
    expect(partitions).toEqual(['eu', 'us', null, 'eu']);
    await handler.process([item(events[0] as RecordedEvent, 'eu'), item(events[1] as RecordedEvent, 'us'), item(events[3] as RecordedEvent, 'eu')]);
    expect(JSON.parse(await handler.state('eu'))).toEqual({ total: 8 });
    expect(JSON.parse(await handler.state('us'))).toEqual({ total: 7 });
  });

  it('passes [state, sharedState] to a bi-state projection', async () => {
    const handler = await compile(`fromCategory('order').foreachStream().when({
  $init: function () { return { items: 0 }; },
  $initShared: function () { return { orders: 0 }; },
  ItemAdded: function (s, e) {
    s[0].items += 1;
    if (s[0].items === 1) s[1].orders += 1;
    return s;
  }
})`);
    expect(handler.definition.options.biState).toBe(true);
    await handler.process([
      item(recorded('order-1', 'ItemAdded', {}), 'order-1'),
      item(recorded('order-1', 'ItemAdded', {}, { number: 1 }), 'order-1'),
      item(recorded('order-2', 'ItemAdded', {}), 'order-2'),
    ]);
    expect(JSON.parse(await handler.state('order-1'))).toEqual({ items: 2 });
    expect(JSON.parse(await handler.shared())).toEqual({ orders: 2 });
    expect((await handler.takeDirty()).shared).toBe('{"orders":2}');
  });

  it('emits, links and copies events with their metadata (emit, linkTo, linkStreamTo, copyTo)', async () => {
    const handler = await compile(`fromAll().when({
  OrderPlaced: function (s, e) {
    emit('invoices-' + e.body.id, 'InvoiceRequested', { order: e.body.id }, { reason: 'order', n: 1 });
    linkTo('big-orders', e, { total: e.body.total });
    linkStreamTo('order-streams', e.streamId);
    copyTo('orders-copy', e, { copied: true, $ignored: 1 });
  }
})`);
    const event = recorded('order-7', 'OrderPlaced', { id: 7, total: 100 }, { number: 3, metadata: { user: 'ann', $correlationId: 'c1', $secret: 'x' } });
    const [out] = await handler.process([item(event)]);
    expect(out?.emitted).toEqual([
      { stream: 'invoices-7', eventType: 'InvoiceRequested', data: '{"order":7}', isJson: true, extra: { reason: '"order"', n: '1' } },
      { stream: 'big-orders', eventType: '$>', data: '3@order-7', isJson: false, extra: { total: '100' } },
      { stream: 'order-streams', eventType: '$@', data: 'order-7', isJson: false, extra: null },
      { stream: 'orders-copy', eventType: 'OrderPlaced', data: '{"id":7,"total":100}', isJson: true, extra: { user: '"ann"', $correlationId: '"c1"', copied: 'true' } },
    ]);
  });

  it('filters results: filterBy keeps only what its predicate accepts exactly with true', async () => {
    const handler = await compile(`fromStream('t').when({
  $init: function () { return { n: 0 }; },
  $any: function (s, e) { s.n += 1; }
}).filterBy(function (s) { return s.n % 2 === 0; }).transformBy(function (s) { return { even: s.n }; })`);
    const outputs = await handler.process([1, 2, 3, 4].map((n) => item(recorded('t', 'X', {}, { number: n - 1 }))));
    expect(outputs.map((o) => o?.result)).toEqual([null, '{"even":2}', null, '{"even":4}']);
    expect(await handler.result('')).toBe('{"even":4}');
  });

  it('gives handlers the whole envelope', async () => {
    const handler = await compile(`fromCategory('acct').when({
  $any: function (s, e) {
    return { isJson: e.isJson, data: e.data, body: e.body, bodyRaw: e.bodyRaw, sequenceNumber: e.sequenceNumber,
      metadataRaw: e.metadataRaw, metadata: e.metadata, linkMetadataRaw: e.linkMetadataRaw, linkMetadata: e.linkMetadata,
      partition: e.partition, eventType: e.eventType, streamId: e.streamId, category: e.category, eventId: e.eventId };
  }
})`);
    const event = recorded('acct-1', 'Opened', { a: 1 }, { number: 4, metadata: { m: 2 } });
    const link = recorded('$ce-acct', '$>', '4@acct-1', { isJson: false });
    const withLinkMetadata = { ...link, metadata: Buffer.from('{"$o":"acct-1"}') };
    await handler.process([item(event, '', { link: withLinkMetadata, category: 'acct' })]);
    expect(JSON.parse(await handler.state(''))).toEqual({
      isJson: true, data: { a: 1 }, body: { a: 1 }, bodyRaw: '{"a":1}', sequenceNumber: 4,
      metadataRaw: '{"m":2}', metadata: { m: 2 }, linkMetadataRaw: '{"$o":"acct-1"}', linkMetadata: { $o: 'acct-1' },
      partition: '', eventType: 'Opened', streamId: 'acct-1', category: 'acct', eventId: event.eventId,
    });
  });

  it('keeps the state the default handler sets (the raw body) and calls $created once per partition', async () => {
    const handler = await compile(`fromAll().foreachStream().when({
  $created: function (s, e) { emit('created', 'PartitionCreated', { p: e.partition }); },
  $init: function () { return { seen: 0 }; },
  Seen: function (s) { s.seen += 1; }
})`);
    const outputs = await handler.process([item(recorded('a-1', 'Seen', {}), 'a-1'), item(recorded('a-1', 'Seen', {}, { number: 1 }), 'a-1'), item(recorded('a-2', 'Seen', {}), 'a-2')]);
    expect(outputs.map((o) => o?.emitted.map((e) => e.data))).toEqual([['{"p":"a-1"}'], undefined, ['{"p":"a-2"}']]);
  });
});

describe('log', () => {
  it("writes the projection's log lines to the node's log", async () => {
    const lines: Array<Record<string, unknown>> = [];
    const capture = pino({ level: 'debug' }, { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) });
    const handler = await JsHandler.create({
      source: "log('defining'); fromAll().when({ $any: function (s, e) { log('saw', e.eventType, { n: e.body.n }); } })",
      executionTimeoutMs: 250, compilationTimeoutMs: 500, memoryLimitMb: 64, log: capture,
    });
    handlers.push(handler);
    await handler.process([item(recorded('a', 'Seen', { n: 3 }))]);
    expect(lines.map((l) => l['projectionLog'])).toEqual(['defining', 'saw Seen {"n":3}']);
  });
});

describe('chaining rules and options', () => {
  it.each([
    ["fromStream('a').foreachStream()", 'foreachStream is not a function'],
    ["fromAll().when({}).when({})", 'when is not a function'],
    ["fromAll().outputState().when({})", 'when is not a function'],
    ["fromAll().when({}).outputTo('x').outputState()", 'outputState is not a function'],
    ["fromAll().partitionBy(function(){}).outputState()", 'outputState is not a function'],
    ["fromAll().foreachStream().partitionBy(function(){})", 'partitionBy is not a function'],
    ["options({ nope: 1 }); fromAll()", 'Unrecognized option: nope'],
    ["options({ biState: 'yes' }); fromAll()", 'Invalid value'],
    ["fromAll().when({ X: function(){ emit('s', 't', {}); } }); emit('s', 't', {});", 'emit is not defined'],
    ["fromAll(", 'Unexpected end of input'],
  ])('%s fails with "%s"', async (source, message) => {
    const fault = await compileFault(source);
    expect(fault.message).toContain(message);
  });

  it('derives the definition of each selector', async () => {
    const streams = await compile("fromStreams(['a', 'b']).when({ $any: function (s, e) {} })");
    expect(validateDefinition(streams.definition)).toEqual({ kind: 'streams', streams: ['a', 'b'] });
    const categories = await compile("fromCategories('x', 'y').when({ $any: function (s, e) {} })");
    expect(categories.definition.streams).toEqual(['$ce-x', '$ce-y']);
    const noSource = await compile('var x = 1;');
    expect(() => validateDefinition(noSource.definition)).toThrow('None of streams and categories are included');
    const deletes = await compile("fromStream('a').when({ $deleted: function () {} })");
    expect(() => validateDefinition(deletes.definition)).toThrow('Deleted stream notifications are only supported with foreachStream()');
    const reorder = await compile("options({ reorderEvents: true, processingLag: 10 }); fromStreams('a', 'b').when({ $any: function () {} })");
    expect(() => validateDefinition(reorder.definition)).toThrow('Event reordering requires processing lag at least of 50ms');
  });

  it('rejects $deleted in a bi-state projection', async () => {
    const fault = await compileFault("fromAll().foreachStream().when({ $initShared: function () { return {}; }, $deleted: function () {} })");
    expect(fault.message).toBe('Cannot handle deletes in bi-state projections');
  });
});

describe('isolation and faults', () => {
  it('stops with the error of a handler that throws, naming the event', async () => {
    const handler = await compile(`fromAll().when({ Boom: function (s, e) { if (e.body.n === 2) throw new Error('bad event ' + e.body.n); } })`);
    const error = await handler.process([item(recorded('a', 'Boom', { n: 1 })), item(recorded('a', 'Boom', { n: 2 }))]).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(ProjectionFault);
    expect(error).toMatchObject({ kind: 'error', index: 1, message: 'bad event 2' });
  });

  it('terminates a handler that never returns after the execution timeout', async () => {
    const handler = await compile(`fromAll().when({ Spin: function () { while (true) {} } })`, { executionTimeoutMs: 100 });
    const started = Date.now();
    const error = await handler.process([item(recorded('a', 'Spin', {}))]).catch((err: unknown) => err);
    expect(error).toMatchObject({ kind: 'timeout' });
    expect((error as Error).message).toMatch(/^Projection script took too long to execute \(took: 00:00:00\.\d+, allowed: 00:00:00\.1000000\)$/);
    expect(Date.now() - started).toBeLessThan(5000);
    await expect(handler.state('')).rejects.toMatchObject({ kind: 'timeout' });
  });

  it('also times out a loop in a promise job the handler queued', async () => {
    const handler = await compile(`fromAll().when({ Later: function () { Promise.resolve().then(function () { while (true) {} }); } })`, { executionTimeoutMs: 100 });
    // The context's own microtask queue only runs when code is evaluated in it: the job never runs on the thread.
    await handler.process([item(recorded('a', 'Later', {}))]);
    expect(await handler.state('')).toBe('{}');
  });

  it('terminates a definition that never returns after the compilation timeout', async () => {
    const fault = await compileFault('while (true) {}', { compilationTimeoutMs: 100 });
    expect(fault).toMatchObject({ kind: 'timeout' });
    expect(fault.message).toContain('Projection script took too long to compile');
  });

  it('stops a handler that allocates without bound at the memory limit', async () => {
    const handler = await compile(`fromAll().when({ Hog: function (s) { var a = []; while (true) a.push(new Array(10000).fill(s)); } })`, { memoryLimitMb: 32, executionTimeoutMs: 30_000 });
    const error = await handler.process([item(recorded('a', 'Hog', {}))]).catch((err: unknown) => err);
    expect(error).toMatchObject({ kind: 'memory' });
    expect((error as Error).message).toContain('memory limit of 32 MB');
  });

  it('offers no way out of the sandbox', async () => {
    const handler = await compile(`fromAll().when({ Probe: function (s, e) {
      var out = {};
      out.globals = [typeof require, typeof process, typeof setTimeout, typeof setInterval, typeof setImmediate, typeof fetch, typeof Buffer, typeof globalThis.__edb, typeof WebAssembly === 'object' ? 'wasm' : 'none'];
      function attempt(name, fn) { try { out[name] = String(fn()); } catch (err) { out[name] = 'blocked: ' + err.message; } }
      attempt('constructor', function () { return this.constructor.constructor('return process')(); }.bind(globalThis));
      attempt('eventConstructor', function () { return e.constructor.constructor('return process')(); });
      attempt('eval', function () { return eval('1 + 1'); });
      attempt('Function', function () { return new Function('return 1')(); });
      attempt('wasm', function () { return new WebAssembly.Module(new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0])); });
      return out;
    } })`);
    await handler.process([item(recorded('a', 'Probe', {}))]);
    const result = JSON.parse(await handler.state('')) as Record<string, unknown>;
    expect(result['globals']).toEqual(['undefined', 'undefined', 'undefined', 'undefined', 'undefined', 'undefined', 'undefined', 'undefined', 'wasm']);
    for (const name of ['constructor', 'eventConstructor', 'eval', 'Function', 'wasm'])
      expect(result[name], name).toMatch(/^blocked: /);
  });
});
