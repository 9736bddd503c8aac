/**
 * Scavenge admin over `inject`, against the in-memory engine and a fake scavenger that calls
 * the listener as the real one does (started, per-chunk, merge, index, completed), paused at a
 * gate the test opens or the stop request opens. Pins what the real engine cannot be made to do
 * on demand: exact payloads of every detail event, a run that ends without reporting, a run
 * that fails, and the Interrupted totals summed from detail events.
 */
import type { FastifyInstance } from 'fastify';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';

import { buildServer } from '../../node/src/api/build-server.js';
import {
  createScavengeService,
  type ScavengeService,
} from '../../node/src/scavenge/scavenge-service.js';
import { createSecurity, type Security } from '../../node/src/api/security/security.js';
import { loadConfig } from '../../node/src/config/load.js';
import { EventDbError } from '../../node/src/errors.js';
import type {
  ScavengeHandle,
  ScavengeListener,
  ScavengeOutcome,
  ScavengeParams,
} from '../../node/src/storage/event-db-types.js';
import { openMemEngine } from '../support/engine-fixture.js';
import type { Engine } from '../../node/src/storage/event-db.js';
import { basic } from '../support/credentials.js';

const ADMIN = basic('admin', 'changeit');
const OPS = basic('ops', 'changeit');
const NODE_ENDPOINT = '127.0.0.1:2113';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const log = pino({ level: process.env['TEST_LOG_LEVEL'] ?? 'silent' });
const JSON_ACCEPT = { accept: 'application/json' };

type Ending = 'report' | 'silent' | 'throw';

interface FakeRun {
  readonly scavengeId: string;
  readonly params: ScavengeParams;
  /** Lets the run finish with Success. */
  release(): void;
  readonly done: Promise<ScavengeOutcome>;
}

/** Starts runs that report like the engine and wait at a gate before completing. */
class FakeScavenger {
  readonly runs: FakeRun[] = [];
  ending: Ending = 'report';
  private running = false;

  startScavenge = (
    scavengeId: string,
    params: ScavengeParams,
    listener: ScavengeListener,
  ): ScavengeHandle => {
    if (this.running) throw new EventDbError('EDB_SCAVENGE_RUNNING', 'Scavenge is already running');
    this.running = true;
    let open: (result: 'Success' | 'Stopped') => void = () => undefined;
    const gate = new Promise<'Success' | 'Stopped'>((resolve) => (open = resolve));
    const done = this.script(scavengeId, listener, gate).finally(() => (this.running = false));
    this.runs.push({ scavengeId, params, release: () => open('Success'), done });
    return {
      scavengeId,
      done,
      stop: async () => {
        open('Stopped');
        return done;
      },
    };
  };

  private async script(
    scavengeId: string,
    listener: ScavengeListener,
    gate: Promise<'Success' | 'Stopped'>,
  ): Promise<ScavengeOutcome> {
    const scavengePoint = { number: 0, position: 4096, effectiveNowMs: 0, threshold: 0 };
    await listener.started({ scavengeId, scavengePoint });
    await listener.chunkExecuted({
      scavengeId, chunkStartNumber: 0, chunkEndNumber: 1, timeTakenMs: 1500,
      spaceSavedBytes: 100, wasScavenged: true, weight: 4, errorMessage: '',
    });
    await listener.chunkExecuted({
      scavengeId, chunkStartNumber: 2, chunkEndNumber: 2, timeTakenMs: 250,
      spaceSavedBytes: 55, wasScavenged: false, weight: 2, errorMessage: 'chunk is busy',
    });
    await listener.chunksMerged({
      scavengeId, chunkStartNumber: 0, chunkEndNumber: 1, timeTakenMs: 20,
      spaceSavedBytes: 30, wasMerged: true, errorMessage: '',
    });
    await listener.indexExecuted({ scavengeId, timeTakenMs: 5, entriesDeleted: 6, entriesKept: 7 });
    const result = await gate;
    if (this.ending === 'throw') throw new Error('disk on fire');
    const outcome: ScavengeOutcome = {
      result, error: null, spaceSavedBytes: 130, timeTakenMs: 2000,
    };
    if (this.ending === 'report') {
      await listener.completed({ scavengeId, ...outcome, maxChunkScavenged: 1 });
    }
    return outcome;
  }
}

interface Harness {
  readonly db: Engine;
  readonly fake: FakeScavenger;
  readonly security: Security;
  readonly scavenges: ScavengeService;
  readonly app: FastifyInstance;
}

const open: Harness[] = [];
afterEach(async () => {
  for (const h of open.splice(0)) {
    await h.app.close();
    h.security.close();
  }
});

async function harness(
  options: { db?: Harness['db']; nodeEndpoint?: string; historyMaxAgeDays?: number } = {},
): Promise<Harness> {
  const fake = new FakeScavenger();
  const db: Harness['db'] = options.db ?? (await openMemEngine());
  // The scripted scavenger stands in for the engine's own, so each listener call is exact.
  db.startScavenge = fake.startScavenge;
  const security = await createSecurity({ db, log });
  const scavenges = createScavengeService({
    db,
    log,
    historyMaxAgeDays: options.historyMaxAgeDays ?? 30,
    nodeEndpoint: () => options.nodeEndpoint ?? NODE_ENDPOINT,
  });
  const loaded = loadConfig({ argv: ['--mem-db'], env: {}, readFile: () => '' });
  const app = buildServer({
    db, security, log, loaded, version: '0.0.0', requestShutdown: () => undefined, scavenges,
  });
  await app.ready();
  const h = { db, fake, security, scavenges, app };
  open.push(h);
  return h;
}

async function inject(
  h: Harness,
  method: 'GET' | 'POST' | 'PUT' | 'DELETE',
  url: string,
  headers: Record<string, string> = {},
) {
  return h.app.inject({ method, url, headers: { authorization: ADMIN, ...headers } });
}

async function startRun(h: Harness, query = ''): Promise<string> {
  const response = await inject(h, 'POST', `/admin/scavenge${query}`, JSON_ACCEPT);
  expect(response.statusCode, response.body).toBe(200);
  return (response.json() as { scavengeId: string }).scavengeId;
}

async function eventsOf(db: Engine, stream: string) {
  const read = await db.readStream(stream, 0, 4096, 'forward');
  if (read.kind !== 'success') return [];
  return read.events.map((e) => ({
    eventType: e.eventType,
    isJson: e.isJson,
    text: e.data.toString('utf8'),
    data: e.isJson ? (JSON.parse(e.data.toString('utf8')) as Record<string, unknown>) : undefined,
  }));
}

/** Waits until the service has no current run (the fake settles in microtasks). */
async function settled(h: Harness): Promise<void> {
  for (let attempt = 0; attempt < 100 && h.scavenges.currentScavengeId() !== undefined; attempt++) {
    await new Promise((resolve) => setImmediate(resolve));
  }
  expect(h.scavenges.currentScavengeId()).toBeUndefined();
}

describe('scavenge history written from the engine listener', () => {
  it('writes EventStoreDB payloads; links start and end into $scavenges', async () => {
    const h = await harness();
    const id = await startRun(h);
    h.fake.runs[0]?.release();
    await settled(h);
    const stream = `$scavenges-${id}`;
    const events = await eventsOf(h.db, stream);
    expect(events.map((e) => e.eventType)).toEqual([
      '$scavengeStarted',
      '$scavengeChunksCompleted',
      '$scavengeChunksCompleted',
      '$scavengeMergeCompleted',
      '$scavengeIndexCompleted',
      '$scavengeCompleted',
    ]);
    const [started, chunk, notScavenged, merge, index, completed] = events.map((e) => e.text);
    expect(started).toBe(JSON.stringify({ scavengeId: id, nodeEndpoint: NODE_ENDPOINT }));
    expect(chunk).toBe(JSON.stringify({
      scavengeId: id, chunkStartNumber: 0, chunkEndNumber: 1, timeTaken: '00:00:01.5000000',
      wasScavenged: true, spaceSaved: 100, nodeEndpoint: NODE_ENDPOINT, errorMessage: '',
    }));
    expect(notScavenged).toBe(JSON.stringify({
      scavengeId: id, chunkStartNumber: 2, chunkEndNumber: 2, timeTaken: '00:00:00.2500000',
      wasScavenged: false, spaceSaved: 0, nodeEndpoint: NODE_ENDPOINT,
      errorMessage: 'chunk is busy',
    }));
    expect(merge).toBe(JSON.stringify({
      scavengeId: id, chunkStartNumber: 0, chunkEndNumber: 1, timeTaken: '00:00:00.0200000',
      spaceSaved: 30, wasMerged: true, nodeEndpoint: NODE_ENDPOINT, errorMessage: '',
    }));
    expect(index).toBe(JSON.stringify({
      scavengeId: id, level: 0, index: 0, timeTaken: '00:00:00.0050000', entriesDeleted: 6,
      entriesKept: 7, spaceSaved: 0, wasScavenged: true, nodeEndpoint: NODE_ENDPOINT,
      errorMessage: '',
    }));
    expect(completed).toBe(JSON.stringify({
      scavengeId: id, nodeEndpoint: NODE_ENDPOINT, result: 'Success', error: null,
      timeTaken: '00:00:02', spaceSaved: 130, maxChunkScavenged: 2,
    }));

    const links = await eventsOf(h.db, '$scavenges');
    expect(links).toEqual([
      { eventType: '$>', isJson: false, text: `0@${stream}`, data: undefined },
      { eventType: '$>', isJson: false, text: `5@${stream}`, data: undefined },
    ]);
    const { metadata } = await h.db.getStreamMetadata(stream);
    expect(metadata.raw).toEqual({
      $maxAge: 2_592_000,
      $acl: { $r: '$ops', $w: [], $d: [], $mr: [], $mw: [] },
    });
    expect(h.scavenges.last()).toEqual({ scavengeId: id, result: 'Success' });
  });

  it('writes $scavengeCompleted from the outcome when the engine does not report', async () => {
    const h = await harness();
    h.fake.ending = 'silent';
    const id = await startRun(h);
    h.fake.runs[0]?.release();
    await settled(h);
    const last = (await eventsOf(h.db, `$scavenges-${id}`)).at(-1);
    expect(last?.eventType).toBe('$scavengeCompleted');
    expect(last?.data).toMatchObject({ result: 'Success', spaceSaved: 130, maxChunkScavenged: 2 });
    expect((await eventsOf(h.db, '$scavenges')).map((e) => e.text)).toEqual([
      `0@$scavenges-${id}`,
      `5@$scavenges-${id}`,
    ]);
  });

  it('records Errored with the reason when the run fails', async () => {
    const h = await harness();
    h.fake.ending = 'throw';
    const id = await startRun(h);
    h.fake.runs[0]?.release();
    await settled(h);
    const last = (await eventsOf(h.db, `$scavenges-${id}`)).at(-1);
    expect(last?.data).toMatchObject({
      result: 'Errored',
      error: 'Error while scavenging DB: disk on fire',
    });
    const response = await inject(h, 'GET', '/admin/scavenge/last', { accept: 'application/json' });
    expect(response.json()).toEqual({
      scavengeId: id,
      scavengeLink: `/admin/scavenge/${id}`,
      scavengeResult: 'Errored',
    });
  });
});

describe('scavenge admin routes', () => {
  it('start, already running, current, stop by id or current, last', async () => {
    const h = await harness();
    const none = await inject(h, 'GET', '/admin/scavenge/current', { accept: 'application/json' });
    expect(none.json()).toEqual({ scavengeId: '', scavengeLink: '' });
    const neverRan = await inject(h, 'GET', '/admin/scavenge/last', { accept: 'application/json' });
    expect(neverRan.json()).toEqual({
      scavengeId: '00000000-0000-0000-0000-000000000000',
      scavengeLink: '',
      scavengeResult: 'Unknown',
    });

    const started = await inject(h, 'POST', '/admin/scavenge?threads=9&threshold=-1&syncOnly=true');
    expect(started.statusCode).toBe(200);
    expect(started.headers['content-type']).toBe('text/plain; charset=utf-8');
    const id = /^ScavengeId: (.+)$/.exec(started.body)?.[1] ?? '';
    expect(id).toMatch(UUID);
    expect(h.fake.runs[0]?.params).toEqual({
      threads: 4, threshold: -1, throttlePercent: 100, syncOnly: true,
    });

    const again = await inject(h, 'POST', '/admin/scavenge');
    expect([again.statusCode, again.statusMessage, again.body]).toEqual([
      400, 'Bad Request', 'Scavenge is already running',
    ]);
    const current = await inject(h, 'GET', '/admin/scavenge/current');
    // With its progress: this fake engine reports no stage, so the run is still Starting.
    expect(current.body).toBe(`ScavengeId: ${id}, ScavengeLink: /admin/scavenge/${id}, Stage: Starting, ChunksDone: 0, ChunksTotal: 0, Percent: 0`);
    const inProgress = await inject(h, 'GET', '/admin/scavenge/last', JSON_ACCEPT);
    expect(inProgress.json()).toMatchObject({ scavengeId: id, scavengeResult: 'InProgress' });

    const wrong = await inject(h, 'DELETE', '/admin/scavenge/not-this-one');
    expect([wrong.statusCode, wrong.body]).toEqual([404, 'Scavenge Id does not exist']);
    const stopped = await inject(h, 'DELETE', '/admin/scavenge/current', JSON_ACCEPT);
    expect([stopped.statusCode, stopped.json()]).toEqual([200, id]);
    // The answer came after the run had stopped and its history was written.
    expect(h.scavenges.currentScavengeId()).toBeUndefined();
    const history = await eventsOf(h.db, `$scavenges-${id}`);
    expect(history.at(-1)?.data).toMatchObject({ result: 'Stopped' });
    const last = await inject(h, 'GET', '/admin/scavenge/last', { accept: 'application/json' });
    expect(last.json()).toMatchObject({ scavengeId: id, scavengeResult: 'Stopped' });
    const noneAgain = await inject(h, 'DELETE', '/admin/scavenge/current');
    expect([noneAgain.statusCode, noneAgain.body]).toEqual([404, 'Scavenge Id does not exist']);

    const second = await startRun(h);
    const byId = await inject(h, 'DELETE', `/admin/scavenge/${second}`);
    expect([byId.statusCode, byId.body]).toEqual([200, second]);
  });

  it('knows a finished run by its id before its history reaches this node\'s log (a follower writing through the leader)', async () => {
    const engine = await openMemEngine();
    // A cluster follower's history writes are acknowledged by the leader once a quorum has
    // them; its own log may get them later. Here the reads of a run stream lag: they do not see
    // its $scavengeCompleted yet.
    let lagging = true;
    const readStream = engine.readStream.bind(engine);
    engine.readStream = async (...args: Parameters<Engine['readStream']>) => {
      const read = await readStream(...args);
      if (!lagging || read.kind !== 'success' || !args[0].startsWith('$scavenges-')) return read;
      return { ...read, events: read.events.filter((e) => e.eventType !== '$scavengeCompleted') };
    };
    const h = await harness({ db: engine });
    const id = await startRun(h);
    h.fake.runs[0]?.release();
    await settled(h);
    const state = await inject(h, 'GET', `/admin/scavenge/${id}`, JSON_ACCEPT);
    expect([state.statusCode, state.json()]).toEqual([200, expect.objectContaining({ scavengeId: id, scavengeResult: 'Success' })]);
    // The history says so too once it arrives.
    lagging = false;
    expect((await eventsOf(h.db, `$scavenges-${id}`)).at(-1)?.data).toMatchObject({ result: 'Success' });
  });

  it('answers 400 already running when the engine refuses to start', async () => {
    const h = await harness();
    h.db.startScavenge = () => {
      throw new EventDbError('EDB_SCAVENGE_RUNNING', 'Scavenge is already running');
    };
    const response = await inject(h, 'POST', '/admin/scavenge');
    expect([response.statusCode, response.body]).toEqual([400, 'Scavenge is already running']);
    expect(h.scavenges.last().result).toBe('Unknown');
    h.db.startScavenge = () => {
      throw new EventDbError('EDB_CLOSED', 'the database is shutting down', { httpStatus: 503 });
    };
    const closing = await inject(h, 'POST', '/admin/scavenge');
    expect([closing.statusCode, closing.body]).toEqual([503, 'the database is shutting down']);
    expect(h.scavenges.currentScavengeId()).toBeUndefined();
  });

  it('negotiates text (default), JSON and XML; 406 for anything else', async () => {
    const h = await harness();
    const id = await startRun(h);
    const json = await inject(h, 'GET', '/admin/scavenge/current?format=json');
    expect(json.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(json.body).toBe(
      `{\n  "scavengeId": "${id}",\n  "scavengeLink": "/admin/scavenge/${id}",\n  "progress": {\n    "stage": "Starting",\n    "chunksDone": 0,\n    "chunksTotal": 0,\n    "percent": 0\n  }\n}`,
    );
    const xml = await inject(h, 'GET', '/admin/scavenge/current', { accept: 'application/xml' });
    expect(xml.headers['content-type']).toBe('application/xml; charset=utf-8');
    expect(xml.body).toContain(`<ScavengeGetCurrentResultDto><ScavengeId>${id}</ScavengeId>`);
    const wildcard = await inject(h, 'GET', '/admin/scavenge/current', { accept: '*/*' });
    expect(wildcard.headers['content-type']).toBe('text/plain; charset=utf-8');
    const png = await inject(h, 'GET', '/admin/scavenge/current', { accept: 'image/png' });
    expect(png.statusCode).toBe(406);
    const getStart = await inject(h, 'GET', '/admin/scavenge');
    expect([getStart.statusCode, getStart.headers['allow']]).toEqual([405, 'POST, OPTIONS']);
    const putRun = await inject(h, 'PUT', `/admin/scavenge/${id}`);
    expect([putRun.statusCode, putRun.headers['allow']]).toEqual([405, 'GET, DELETE, OPTIONS']);
    const body = await h.app.inject({
      method: 'POST',
      url: '/admin/scavenge',
      headers: { authorization: ADMIN, 'content-type': 'application/json' },
      payload: '',
    });
    expect([body.statusCode, body.body]).toEqual([400, 'Scavenge is already running']);
  });

  it('lets $admins and $ops in and answers 401 with a message to anyone else', async () => {
    const h = await harness();
    await h.security.createUser({ loginName: 'worker', fullName: 'W', groups: [], password: 'pw' });
    const worker = basic('worker', 'pw');
    const wrong = basic('admin', 'nope');
    const routes = [
      ['POST', '/admin/scavenge'],
      ['GET', '/admin/scavenge/current'],
      ['GET', '/admin/scavenge/last'],
      ['DELETE', '/admin/scavenge/current'],
    ] as const;
    for (const [method, url] of routes) {
      for (const authorization of [undefined, worker, wrong]) {
        const response = await h.app.inject({
          method, url, headers: authorization === undefined ? {} : { authorization },
        });
        expect([method, url, response.statusCode]).toEqual([method, url, 401]);
        expect(response.body).toMatch(/^Not authorized: /);
      }
    }
    expect(h.fake.runs).toHaveLength(0);
    const ops = await h.app.inject({
      method: 'POST', url: '/admin/scavenge', headers: { authorization: OPS },
    });
    expect(ops.statusCode).toBe(200);
    const opsStop = await h.app.inject({
      method: 'DELETE', url: '/admin/scavenge/current', headers: { authorization: OPS },
    });
    expect(opsStop.statusCode).toBe(200);
  });

  it('documents the start parameters in /openapi.json', async () => {
    const h = await harness();
    type Parameter = { name: string; in: string; schema: { type?: string; maximum?: number } };
    const doc = (await h.app.inject({ method: 'GET', url: '/openapi.json' })).json() as {
      paths: Record<string, Record<string, { parameters?: Parameter[] }>>;
    };
    const parameters = doc.paths['/admin/scavenge']?.['post']?.parameters ?? [];
    const names = parameters.map((p) => p.name);
    const schemaOf = (name: string) => parameters.find((p) => p.name === name)?.schema;
    expect(schemaOf('threads')?.type).toBe('integer');
    expect(schemaOf('throttlePercent')).toMatchObject({ type: 'integer', maximum: 100 });
    expect(schemaOf('syncOnly')?.type).toBe('boolean');
    expect(names).toEqual(
      expect.arrayContaining([
        'threads', 'threshold', 'throttlePercent', 'syncOnly', 'startFromChunk',
      ]),
    );
    expect(Object.keys(doc.paths)).toEqual(
      expect.arrayContaining([
        '/admin/scavenge/current', '/admin/scavenge/last', '/admin/scavenge/{scavengeId}',
      ]),
    );
  });
});

describe('interrupted scavenges at node start', () => {
  it('completes unfinished runs of this node as Interrupted with totals', async () => {
    const before = await harness();
    const interruptedId = await startRun(before);
    const done = await harness({ db: before.db });
    // A second service on the same data: a completed run must stay as it is.
    const completedId = await startRun(done);
    done.fake.runs[0]?.release();
    await settled(done);
    const elsewhere = await harness({ db: before.db, nodeEndpoint: '10.0.0.2:2113' });
    await elsewhere.scavenges.initialise();
    expect((await eventsOf(before.db, `$scavenges-${interruptedId}`)).at(-1)?.eventType).toBe(
      '$scavengeIndexCompleted',
    );

    const restarted = await harness({ db: before.db });
    await restarted.scavenges.initialise();
    const events = await eventsOf(before.db, `$scavenges-${interruptedId}`);
    expect(events.at(-1)?.text).toBe(JSON.stringify({
      scavengeId: interruptedId, nodeEndpoint: NODE_ENDPOINT, result: 'Interrupted',
      error: 'The node was restarted.', timeTaken: '00:00:01.7750000', spaceSaved: 130,
      maxChunkScavenged: 2,
    }));
    const links = (await eventsOf(before.db, '$scavenges')).map((e) => e.text);
    expect(links.at(-1)).toBe(`5@$scavenges-${interruptedId}`);
    const completedRun = await eventsOf(before.db, `$scavenges-${completedId}`);
    expect(completedRun.filter((e) => e.eventType === '$scavengeCompleted')).toHaveLength(1);

    const again = await harness({ db: before.db });
    await again.scavenges.initialise();
    const completions = (await eventsOf(before.db, `$scavenges-${interruptedId}`)).filter(
      (e) => e.eventType === '$scavengeCompleted',
    );
    expect(completions).toHaveLength(1);
    expect(again.scavenges.last()).toEqual({ scavengeId: undefined, result: 'Unknown' });
  });

  it('marks a run of an earlier process Interrupted when its start reaches this node only after the start-up scan', async () => {
    // A follower killed right after starting a run: the $scavengeStarted it wrote through the
    // leader reaches its own log only while it catches up after the restart, after its start-up
    // scan. Here the scan reads no history at all.
    const before = await harness();
    const cutShort = await startRun(before);
    const engine = before.db;
    const readStream = engine.readStream.bind(engine);
    engine.readStream = async (...args: Parameters<Engine['readStream']>) =>
      args[0].startsWith('$scavenges') ? { kind: 'stream-not-found' as const } : readStream(...args);
    const restarted = await harness({ db: engine });
    await restarted.scavenges.initialise();
    engine.readStream = readStream;
    expect((await eventsOf(engine, `$scavenges-${cutShort}`)).map((e) => e.eventType)).not.toContain('$scavengeCompleted');

    const state = await inject(restarted, 'GET', `/admin/scavenge/${cutShort}`, JSON_ACCEPT);
    expect([state.statusCode, state.json().scavengeResult]).toEqual([200, 'Interrupted']);
    // ... and the history gets its Interrupted completion, once.
    for (let attempt = 0; attempt < 100; attempt++) {
      if ((await eventsOf(engine, `$scavenges-${cutShort}`)).some((e) => e.eventType === '$scavengeCompleted')) break;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    await inject(restarted, 'GET', `/admin/scavenge/${cutShort}`, JSON_ACCEPT);
    const completions = (await eventsOf(engine, `$scavenges-${cutShort}`)).filter((e) => e.eventType === '$scavengeCompleted');
    expect(completions.map((e) => e.data)).toEqual([expect.objectContaining({ result: 'Interrupted', error: 'The node was restarted.' })]);
    // A run started elsewhere and not finished stays Unknown here: it may be running there.
    const other = await harness({ db: engine, nodeEndpoint: '10.0.0.2:2113' });
    const elsewhere = await startRun(other);
    for (let attempt = 0; attempt < 100; attempt++) {
      if ((await eventsOf(engine, `$scavenges-${elsewhere}`)).some((e) => e.eventType === '$scavengeStarted')) break;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    const unknown = await inject(restarted, 'GET', `/admin/scavenge/${elsewhere}`, JSON_ACCEPT);
    expect(unknown.json().scavengeResult).toBe('Unknown');
  });

  it('never marks a run of its own process, and sets $scavenges metadata once', async () => {
    const h = await harness();
    const id = await startRun(h);
    await h.scavenges.initialise();
    expect((await eventsOf(h.db, `$scavenges-${id}`)).map((e) => e.eventType)).not.toContain(
      '$scavengeCompleted',
    );
    const { metadata, metastreamVersion } = await h.db.getStreamMetadata('$scavenges');
    expect(metadata.raw).toEqual({
      $maxAge: 2_592_000,
      $acl: { $r: '$ops', $w: [], $d: [], $mr: [], $mw: [] },
    });
    const other = await harness({ db: h.db });
    await other.scavenges.initialise();
    expect((await h.db.getStreamMetadata('$scavenges')).metastreamVersion).toBe(metastreamVersion);
  });

  it('gives recent runs of this node the current history max age at start', async () => {
    const h = await harness();
    const id = await startRun(h);
    h.fake.runs[0]?.release();
    await settled(h);
    const stream = `$scavenges-${id}`;
    expect((await h.db.getStreamMetadata(stream)).metadata.raw['$maxAge']).toBe(30 * 86_400);
    const elsewhere = await harness({ db: h.db, historyMaxAgeDays: 7, nodeEndpoint: '10.0.0.2:1' });
    await elsewhere.scavenges.initialise();
    expect((await h.db.getStreamMetadata(stream)).metadata.raw['$maxAge']).toBe(30 * 86_400);
    const restarted = await harness({ db: h.db, historyMaxAgeDays: 7 });
    await restarted.scavenges.initialise();
    expect((await h.db.getStreamMetadata(stream)).metadata.raw).toEqual({
      $maxAge: 7 * 86_400,
      $acl: { $r: '$ops', $w: [], $d: [], $mr: [], $mw: [] },
    });
    expect((await h.db.getStreamMetadata('$scavenges')).metadata.raw['$maxAge']).toBe(7 * 86_400);
  });
});
