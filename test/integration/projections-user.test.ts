/**
 * User projections on a real node with a data directory: a continuous projection (partitioned,
 * emitting, with results) keeps exactly the right state across a clean restart and across
 * SIGKILL, continuing from its checkpoint instead of starting over; a one-time query completes
 * with its result; a bi-state projection keeps its shared state.
 */
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { appendEvents, httpClient, newEvent, type Http } from '../support/http-client.js';
import { startNode, tempDir, type NodeProcess } from '../support/node-process.js';
import { createProjection, readRawStream, statistics, waitCaughtUp, waitFor } from '../support/projection-helpers.js';

const dir = tempDir('edb-proj-user-');
let node: NodeProcess | undefined;
let http: Http;

async function start(): Promise<void> {
  node = await startNode({
    memDb: false,
    args: ['--db', path.join(dir.path, 'db'), '--index', path.join(dir.path, 'index'), '--run-projections', 'All', '--start-standard-projections'],
  });
  http = httpClient(node.baseUrl);
}

afterAll(async () => {
  if (node !== undefined) await node.stop();
  dir.remove();
});

const category = `acct${Math.random().toString(36).slice(2, 7)}`;
const BALANCES = `fromCategory('${category}')
  .foreachStream()
  .when({
    $init: function () { return { balance: 0, moves: 0 }; },
    Deposited: function (s, e) { s.balance += e.body.amount; s.moves += 1; emit('audit-${category}', 'Moved', { account: e.streamId, balance: s.balance }); },
    Withdrawn: function (s, e) { s.balance -= e.body.amount; s.moves += 1; emit('audit-${category}', 'Moved', { account: e.streamId, balance: s.balance }); }
  })
  .outputState()`;
const TOTAL = `fromAll()
  .when({
    $init: function () { return { deposits: 0 }; },
    Deposited: function (s, e) { if (e.streamId.indexOf('${category}-') === 0) s.deposits += e.body.amount; }
  })
  .transformBy(function (s) { return { total: s.deposits }; })
  .outputState()`;

const expected = new Map<string, { balance: number; moves: number }>();
let totalDeposits = 0;
let audit = 0;

async function move(account: number, kind: 'Deposited' | 'Withdrawn', amount: number): Promise<void> {
  const stream = `${category}-${account}`;
  const res = await appendEvents(http, stream, [newEvent(kind, { amount })]);
  expect(res.status).toBe(201);
  const e = expected.get(stream) ?? { balance: 0, moves: 0 };
  e.balance += kind === 'Deposited' ? amount : -amount;
  e.moves += 1;
  expected.set(stream, e);
  if (kind === 'Deposited') totalDeposits += amount;
  audit += 1;
}

async function moves(count: number): Promise<void> {
  for (let i = 0; i < count; i++) await move(i % 4, i % 3 === 0 ? 'Withdrawn' : 'Deposited', 1 + (i % 7));
}

async function checkStates(): Promise<void> {
  await waitCaughtUp(http, ['$by_category', 'balances', 'total']);
  for (const [stream, state] of expected) {
    const res = await http('GET', `/projection/balances/state?partition=${encodeURIComponent(stream)}`);
    expect(res.status).toBe(200);
    expect(JSON.parse(res.text), stream).toEqual(state);
  }
  expect(JSON.parse((await http('GET', '/projection/total/state')).text)).toEqual({ deposits: totalDeposits });
  expect(JSON.parse((await http('GET', '/projection/total/result')).text)).toEqual({ total: totalDeposits });
  const moved = await readRawStream(http, `audit-${category}`);
  expect(moved?.length, 'one audit event per move, none twice').toBe(audit);
}

describe('continuous user projections across restarts', () => {
  beforeAll(start);

  it('project, emit and output their state', async () => {
    await createProjection(http, 'continuous', 'balances', BALANCES, { emit: 'yes' });
    await createProjection(http, 'continuous', 'total', TOTAL);
    await moves(40);
    await checkStates();
    const results = await readRawStream(http, '$projections-total-result');
    expect(results?.map((e) => e.eventType)).toContain('Result');
    expect(JSON.parse(results?.[results.length - 1]?.data ?? '{}')).toEqual({ total: totalDeposits });
    const partitionResults = await readRawStream(http, `$projections-balances-${category}-0-result`);
    expect(JSON.parse(partitionResults?.[partitionResults.length - 1]?.data ?? '{}')).toEqual(expected.get(`${category}-0`));
    // The projection's result stream links to each partition's results.
    const links = await readRawStream(http, '$projections-balances-result');
    expect(links?.every((e) => e.eventType === '$>' && /^\d+@\$projections-balances-.*-result$/.test(e.data))).toBe(true);
    expect(links?.filter((e) => e.data.endsWith(`@$projections-balances-${category}-0-result`)).length).toBe(partitionResults?.length);
  });

  it('continue from their checkpoint after a clean restart', async () => {
    expect(await node?.stop()).toBe(0);
    await start();
    await waitFor('the projections to run', async () => ((await statistics(http, 'balances')).status === 'Running' ? true : undefined));
    // The stop wrote a checkpoint: nothing is processed again.
    await checkStates();
    expect((await statistics(http, 'balances')).eventsProcessedAfterRestart).toBe(0);
    expect((await statistics(http, 'balances')).lastCheckpoint).not.toBe('');
    await moves(12);
    await checkStates();
    expect((await statistics(http, 'balances')).eventsProcessedAfterRestart).toBe(12);
  });

  it('keep exactly the right state after SIGKILL', async () => {
    await moves(25);
    node?.child.kill('SIGKILL');
    await node?.exited();
    await start();
    await checkStates();
    await moves(9);
    await checkStates();
  });
});

describe('deleted streams', () => {
  it('call $deleted for a deleted stream of a foreachStream projection', async () => {
    await createProjection(http, 'continuous', 'closures', `fromCategory('${category}').foreachStream().when({
      $init: function () { return { moves: 0, deleted: false }; },
      $any: function (s) { s.moves += 1; },
      $deleted: function (s, e, partition) { s.deleted = true; s.partition = partition; }
    })`);
    const stream = `${category}-closing`;
    expect((await appendEvents(http, stream, [newEvent('Deposited', { amount: 1 })])).status).toBe(201);
    expect((await http('DELETE', `/streams/${stream}`)).status).toBe(204);
    await waitCaughtUp(http, ['$by_category', 'closures']);
    expect(JSON.parse((await http('GET', `/projection/closures/state?partition=${stream}`)).text)).toEqual({ moves: 1, deleted: true, partition: stream });
    expect(JSON.parse((await http('GET', `/projection/closures/state?partition=${category}-1`)).text)).toMatchObject({ deleted: false });
  });
});

describe('queries', () => {
  it('run a one-time query over partitions to completion and write its results', async () => {
    const res = await http('POST', '/projections/onetime?name=count-moves&type=JS', {
      headers: { 'content-type': 'application/javascript' },
      body: `fromCategory('${category}').foreachStream().when({ $init: function () { return { n: 0 }; }, $any: function (s) { s.n += 1; } })`,
    });
    expect(res.status).toBe(201);
    await waitFor('completion', async () => ((await statistics(http, 'count-moves')).status === 'Completed' ? true : undefined));
    for (const [stream, state] of expected)
      expect(JSON.parse((await http('GET', `/projection/count-moves/result?partition=${encodeURIComponent(stream)}`)).text)).toEqual({ n: state.moves });
    const results = await readRawStream(http, '$projections-count-moves-result');
    expect(results?.map((e) => JSON.parse(e.data) as { n: number }).map((r) => r.n).sort()).toEqual([...expected.values()].map((s) => s.moves).sort());
  });

  it('keep a bi-state projection shared state in the root partition', async () => {
    await createProjection(http, 'continuous', 'bistate', `fromCategory('${category}').foreachStream().when({
      $init: function () { return { n: 0 }; },
      $initShared: function () { return { all: 0 }; },
      $any: function (s) { s[0].n += 1; s[1].all += 1; return s; }
    })`);
    await waitCaughtUp(http, ['bistate']);
    const total = [...expected.values()].reduce((sum, s) => sum + s.moves, 0);
    expect(JSON.parse((await http('GET', '/projection/bistate/state')).text)).toEqual({ all: total });
    expect(JSON.parse((await http('GET', `/projection/bistate/state?partition=${category}-1`)).text)).toEqual({ n: expected.get(`${category}-1`)?.moves });
  });
});
