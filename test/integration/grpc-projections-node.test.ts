/**
 * The Projections gRPC service with the official Node client (@kurrent/kurrentdb-client,
 * unchanged) against a real node running projections (--run-projections All, the standard
 * projections started): create, state and result, update, disable/enable, reset, statistics
 * (one and all continuous, system projections included), delete, and the errors the client
 * decodes; transient / one-time creation and bad input through a connect client. Over TLS: a
 * caller without $admins cannot create or delete, anonymous callers read nothing.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KurrentDBClient, jsonEvent } from '@kurrent/kurrentdb-client';
import { Code, ConnectError, createClient } from '@connectrpc/connect';
import { createGrpcTransport } from '@connectrpc/connect-node';

import { Projections, type StatisticsResp } from '../../node/src/grpc/gen/eventdb/grpc/projections_pb.js';

import { startTlsNode } from '../support/tls-node.js';
import { startNode, tempDir, type NodeProcess } from '../support/node-process.js';
import { waitFor } from '../support/projection-helpers.js';

const PROJECTION_ARGS = ['--run-projections', 'All', '--start-standard-projections', 'true'];

async function errorOf(action: () => Promise<unknown>): Promise<{ type?: string; message?: string }> {
  try {
    await action();
  } catch (err) {
    return err as { type?: string; message?: string };
  }
  throw new Error('expected the call to fail');
}

/** State {count}: the sum of the events' `n`; result (transformBy + outputState) {total: 10 × count}. */
function sumQuery(stream: string, increment: string): string {
  return `fromStream('${stream}')
    .when({
      $init: function () { return { count: 0 }; },
      Added: function (s, e) { s.count += ${increment}; return s; }
    })
    .transformBy(function (s) { return { total: s.count * 10 }; })
    .outputState();`;
}

describe('insecure node: projections through the official Node client', () => {
  let node: NodeProcess;
  let client: KurrentDBClient;
  beforeAll(async () => {
    node = await startNode({ args: PROJECTION_ARGS });
    client = KurrentDBClient.connectionString(`kurrentdb://127.0.0.1:${node.port}?tls=false`);
  });
  afterAll(async () => {
    await client?.dispose();
    await node?.stop();
  });

  it('creates a continuous projection, reads its state and result, updates, disables, enables, resets and deletes it', async () => {
    const stream = `grpcproj-${randomUUID()}`;
    const name = `sum-${randomUUID()}`;
    await client.createProjection(name, sumQuery(stream, 'e.data.n'), { emitEnabled: true, trackEmittedStreams: true });
    await client.appendToStream(stream, [1, 2, 3].map((n) => jsonEvent({ type: 'Added', data: { n } })));

    const state = await waitFor('state {count: 6}', async () => {
      const value = (await client.getProjectionState<{ count: number }>(name)) as { count: number } | null | undefined;
      return value?.count === 6 ? value : undefined;
    });
    expect(state).toEqual({ count: 6 });
    expect(await client.getProjectionResult(name)).toEqual({ total: 60 });

    const status = await client.getProjectionStatus(name);
    expect(status).toMatchObject({ name, effectiveName: name, projectionStatus: 'Running' });
    expect(status.version).toBeGreaterThanOrEqual(1n);
    expect(status.eventsProcessedAfterRestart).toBeGreaterThanOrEqual(3n);

    // A new query (count events instead of summing), then a reset: the state is recomputed with it.
    await client.updateProjection(name, sumQuery(stream, '1'));
    await client.disableProjection(name);
    await waitFor('stopped', async () => ((await client.getProjectionStatus(name)).projectionStatus === 'Stopped' ? true : undefined));
    await client.enableProjection(name);
    await waitFor('running', async () => ((await client.getProjectionStatus(name)).projectionStatus === 'Running' ? true : undefined));
    await client.resetProjection(name);
    await waitFor('state {count: 3} after the reset', async () => {
      const value = (await client.getProjectionState(name)) as { count: number } | null | undefined;
      return value?.count === 3 ? true : undefined;
    });
    expect(await client.getProjectionResult(name)).toEqual({ total: 30 });

    await client.disableProjection(name);
    await waitFor('stopped before the delete', async () => ((await client.getProjectionStatus(name)).projectionStatus === 'Stopped' ? true : undefined));
    await client.deleteProjection(name, { deleteCheckpointStream: true, deleteStateStream: true, deleteEmittedStreams: true });
    expect((await errorOf(() => client.getProjectionStatus(name))).type).toBe('not-found');
    expect((await client.listProjections()).map((p) => p.name)).not.toContain(name);
  });

  it('lists the continuous projections with their statistics, the standard ones included', async () => {
    const name = `listed-${randomUUID()}`;
    await client.createProjection(name, `fromStream('listed-${randomUUID()}').when({ $init: function () { return {}; } });`);
    const listed = await client.listProjections();
    const names = listed.map((p) => p.name);
    expect(names).toEqual(expect.arrayContaining([name, '$by_category', '$by_event_type', '$stream_by_category', '$streams']));
    const mine = listed.find((p) => p.name === name);
    expect(mine).toMatchObject({ name, effectiveName: name });
    expect(typeof mine?.progress).toBe('number');
    expect(typeof mine?.coreProcessingTime).toBe('bigint');
  });

  it('a missing projection answers the client\'s not-found error on every call; a duplicate name is refused', async () => {
    const missing = `missing-${randomUUID()}`;
    for (const call of [
      () => client.getProjectionState(missing),
      () => client.getProjectionResult(missing),
      () => client.getProjectionStatus(missing),
      () => client.enableProjection(missing),
      () => client.disableProjection(missing),
      () => client.resetProjection(missing),
      () => client.updateProjection(missing, 'fromAll().when({})'),
      () => client.deleteProjection(missing),
    ]) {
      expect((await errorOf(call)).type).toBe('not-found');
    }

    const name = `dup-${randomUUID()}`;
    const query = `fromStream('dup-${randomUUID()}').when({ $init: function () { return {}; } });`;
    await client.createProjection(name, query);
    const duplicate = await errorOf(() => client.createProjection(name, query));
    expect(duplicate.message).toMatch(/ALREADY_EXISTS/);
    expect(duplicate.type).not.toBe('not-found');
  });

  it('restarts the projections subsystem; the projections run again afterwards', async () => {
    const stream = `restart-${randomUUID()}`;
    const name = `restart-${randomUUID()}`;
    await client.createProjection(name, sumQuery(stream, 'e.data.n'));
    await client.restartSubsystem();
    await client.appendToStream(stream, jsonEvent({ type: 'Added', data: { n: 5 } }));
    await waitFor('state {count: 5} after the restart', async () => {
      const value = (await client.getProjectionState(name)) as { count: number } | null | undefined;
      return value?.count === 5 ? true : undefined;
    });
  });
});

describe('insecure node: what the Node client does not send (a connect client)', () => {
  let node: NodeProcess;
  let projections: ReturnType<typeof createClient<typeof Projections>>;
  beforeAll(async () => {
    node = await startNode({ args: PROJECTION_ARGS });
    projections = createClient(Projections, createGrpcTransport({ baseUrl: node.baseUrl }));
  });
  afterAll(async () => {
    await node?.stop();
  });

  const codeOf = async (action: () => Promise<unknown>): Promise<Code | undefined> => {
    try {
      await action();
    } catch (err) {
      return err instanceof ConnectError ? err.code : undefined;
    }
    throw new Error('expected the call to fail');
  };
  const listed = async (mode: 'transient' | 'oneTime' | 'all'): Promise<string[]> => {
    const out: string[] = [];
    const responses: AsyncIterable<StatisticsResp> = projections.statistics({ options: { mode: { case: mode, value: {} } } });
    for await (const response of responses) out.push(response.details?.name ?? '?');
    return out;
  };

  it('creates transient and one-time projections, listed under their modes', async () => {
    const transient = `transient-${randomUUID()}`;
    const query = `fromStream('src-${randomUUID()}').when({ $init: function () { return {}; } });`;
    await projections.create({ options: { mode: { case: 'transient', value: { name: transient } }, query } });
    await projections.create({ options: { mode: { case: 'oneTime', value: {} }, query } });
    expect(await listed('transient')).toContain(transient);
    const oneTime = await listed('oneTime');
    expect(oneTime).toHaveLength(1);
    expect(await listed('all')).toEqual(expect.arrayContaining([transient, oneTime[0], '$streams']));
  });

  it('bad input answers INVALID_ARGUMENT and creates nothing', async () => {
    const before = await listed('all');
    const name = `bad-${randomUUID()}`;
    const query = 'fromAll().when({})';
    expect(await codeOf(() => projections.create({ options: { query } }))).toBe(Code.InvalidArgument);
    expect(await codeOf(() => projections.create({ options: { mode: { case: 'continuous', value: { name: '' } }, query } }))).toBe(Code.InvalidArgument);
    expect(await codeOf(() => projections.create({ options: { mode: { case: 'continuous', value: { name } }, query, engineVersion: 2 } }))).toBe(Code.InvalidArgument);
    expect(await codeOf(() => projections.state({ options: { name: '' } }))).toBe(Code.InvalidArgument);
    expect(await listed('all')).toEqual(before);
  });
});

describe('TLS node: projection ACLs over gRPC', () => {
  const dir = tempDir('eventdb-grpc-proj-tls-');
  let node: NodeProcess;
  let caPath: string;
  const connect = (user: string): KurrentDBClient =>
    KurrentDBClient.connectionString(`kurrentdb://${user}@localhost:${node.port}?tls=true&tlsCAFile=${encodeURIComponent(caPath)}`);
  beforeAll(async () => {
    const tls = await startTlsNode(dir.path, { args: PROJECTION_ARGS });
    node = tls.node;
    caPath = tls.ca.certPath;
  });
  afterAll(async () => {
    await node?.stop();
    dir.remove();
  });

  it('a user without $admins cannot create or delete a projection and creates nothing; an admin can, other users read it, anonymous callers not', async () => {
    const ops = connect('ops:changeit');
    const admin = connect('admin:changeit');
    const name = `acl-${randomUUID()}`;
    const stream = `acl-${randomUUID()}`;
    const query = sumQuery(stream, 'e.data.n');
    try {
      expect((await errorOf(() => ops.createProjection(name, query))).type).toBe('access-denied');
      expect((await errorOf(() => admin.getProjectionStatus(name))).type).toBe('not-found');

      await admin.createProjection(name, query);
      await admin.appendToStream(stream, jsonEvent({ type: 'Added', data: { n: 4 } }));
      await waitFor('state {count: 4}, read by a user without $admins', async () => {
        const value = (await ops.getProjectionState(name)) as { count: number } | null | undefined;
        return value?.count === 4 ? true : undefined;
      });
      expect(await ops.getProjectionResult(name)).toEqual({ total: 40 });
      const anonymous = KurrentDBClient.connectionString(`kurrentdb://localhost:${node.port}?tls=true&tlsCAFile=${encodeURIComponent(caPath)}`);
      try {
        expect((await errorOf(() => anonymous.getProjectionState(name))).type).toBe('access-denied');
        expect((await errorOf(() => anonymous.listProjections())).type).toBe('access-denied');
      } finally {
        await anonymous.dispose();
      }
      await admin.disableProjection(name);
      await waitFor('stopped', async () => ((await admin.getProjectionStatus(name)).projectionStatus === 'Stopped' ? true : undefined));
      expect((await errorOf(() => ops.deleteProjection(name))).type).toBe('access-denied');
      expect((await admin.getProjectionStatus(name)).name).toBe(name);
    } finally {
      await ops.dispose();
      await admin.dispose();
    }
  });
});
