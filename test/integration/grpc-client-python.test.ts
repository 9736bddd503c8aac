/**
 * The official Python client (kurrentdbclient from PyPI, unchanged; grpcio, the third HTTP/2
 * stack after grpc-js and the Node client's Rust bridge) against real node processes over gRPC
 * on the node's HTTP port, insecure (h2c) and TLS (ALPN h2). The client runs in a child Python
 * process (test/integration/python/kurrentdb_client_checks.py) that prints what it saw; this file
 * asserts on it as a user of that client would.
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { pythonClientPython } from '../support/python-client.js';
import { startTlsNode } from '../support/tls-node.js';
import { startNode, tempDir, type NodeProcess } from '../support/node-process.js';

const SCRIPT = join(import.meta.dirname, 'python', 'kurrentdb_client_checks.py').replace(`${join('dist', 'test')}`, 'test');
const SCRIPT_TIMEOUT_MS = 180_000;

type Checks = Record<string, Record<string, unknown>>;

function runChecks(uri: string, prefix: string, withAcl: boolean): Promise<Checks> {
  return new Promise((resolve, reject) => {
    execFile(pythonClientPython(), [SCRIPT, uri, prefix, 'ops', 'changeit', ...(withAcl ? ['acl'] : [])], { timeout: SCRIPT_TIMEOUT_MS, maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => {
      if (error !== null) {
        reject(new Error(`the Python client's checks failed: ${error.message}\n${stderr}`));
        return;
      }
      resolve(JSON.parse(stdout.trim().split('\n').at(-1) ?? '{}') as Checks);
    });
  });
}

/** The checks every run makes; `acl` only over TLS (the client sends credentials only there). */
function expectStreamsChecks(checks: Checks, prefix: string): void {
  for (const [name, result] of Object.entries(checks)) expect(result['unexpected'], `${name}: ${String(result['trace'] ?? '')}`).toBeUndefined();
  expect(checks['append_and_read']).toEqual({
    commitPositions: [true, true, true],
    currentVersion: 100,
    forwardCount: 101,
    firstEvent: { type: 'OrderPlaced', data: { id: 1 }, position: 0, stream: `${prefix}orders` },
    backwardPositions: [100, 99, 98],
    middleTypes: ['Line49', 'Line50'],
    commitPositionsIncrease: true,
  });
  expect(checks['expected_versions']).toEqual({
    exists_on_missing: 'WrongCurrentVersionError',
    exact_on_missing: 'WrongCurrentVersionError',
    no_stream_first: null,
    no_stream_again: 'WrongCurrentVersionError',
    exists: null,
    any: null,
    exact_right: null,
    exact_wrong: 'WrongCurrentVersionError',
    batch_exact_wrong: 'WrongCurrentVersionError',
    current_version: 3,
    missing_current_version: 'StreamState.NO_STREAM',
    types: ['A', 'B', 'C', 'D'],
    missing_read: 'NotFoundError',
  });
  const all = checks['read_all'] as { forwards: string[]; backwards: string[]; byType: string[]; byStreamPrefix: string[]; systemEventsInDefaultRead: string[] };
  expect(all.forwards).toEqual([`${prefix}AllA`, `${prefix}AllB`]);
  expect(all.backwards).toEqual([`${prefix}AllB`, `${prefix}AllA`]);
  expect(all.byType).toEqual([`${prefix}AllB`]);
  expect(all.byStreamPrefix).toEqual([`${prefix}all-1`]);
  // the client's default filter excludes system events
  expect(all.systemEventsInDefaultRead).toEqual([]);
  const subAll = checks['subscribe_to_all_filtered'] as { types: string[]; caughtUp: boolean; checkpoints: number };
  expect(subAll.types).toEqual([`${prefix}Early`, `${prefix}Live`]);
  expect(subAll.caughtUp).toBe(true);
  expect(subAll.checkpoints).toBeGreaterThan(0);
  expect(checks['subscribe_to_stream']).toEqual({ types: ['Before1', 'Before2', 'After'], caughtUpAfter: ['Before1', 'Before2'] });
  expect(checks['delete_and_tombstone']).toEqual({
    afterDelete: 'NotFoundError',
    recreatedAt: [2],
    afterRecreate: ['C'],
    // the client maps Append's FAILED_PRECONDITION (trailers exception=stream-deleted, as the
    // original sends) to its generic class, BatchAppend's stream-deleted result to StreamIsDeletedError
    appendAfterTombstone: 'FailedPreconditionError',
    batchAppendAfterTombstone: 'StreamIsDeletedError',
    readAfterTombstone: 'StreamIsDeletedError',
  });
  expect(checks['metadata']).toEqual({
    before: [{}, 'StreamState.NO_STREAM'],
    after: { $maxCount: 2, custom: 'kept' },
    version: 0,
    visible: ['E3', 'E4'],
  });
}

describe('insecure node (h2c): the official Python client', () => {
  let node: NodeProcess;
  beforeAll(async () => {
    node = await startNode();
  });
  afterAll(async () => {
    await node?.stop();
  });

  it('appends with every expected version, reads streams and $all both ways and filtered, subscribes (checkpoints, caught-up, live), deletes, tombstones, sets metadata', async () => {
    const prefix = `py-${randomUUID().slice(0, 8)}-`;
    const checks = await runChecks(`kurrentdb://127.0.0.1:${node.port}?Tls=false`, prefix, false);
    expectStreamsChecks(checks, prefix);
    expect(checks['credentials_and_acl']).toBeUndefined();
  });
});

describe('TLS node (ALPN h2): the official Python client with credentials and ACLs', () => {
  const dir = tempDir('eventdb-grpc-python-tls-');
  let node: NodeProcess;
  let caPath: string;
  beforeAll(async () => {
    const tls = await startTlsNode(dir.path);
    node = tls.node;
    caPath = tls.ca.certPath;
  });
  afterAll(async () => {
    await node?.stop();
    dir.remove();
  });

  it('everything above, and wrong credentials are refused, a stream ACL denies another user reads, writes and its events in $all', async () => {
    const prefix = `pytls-${randomUUID().slice(0, 8)}-`;
    const checks = await runChecks(`kurrentdb://admin:changeit@localhost:${node.port}?TlsCaFile=${encodeURIComponent(caPath)}`, prefix, true);
    expectStreamsChecks(checks, prefix);
    expect(checks['credentials_and_acl']).toEqual({
      // bad credentials are UNAUTHENTICATED, an ACL's refusal PERMISSION_DENIED, as the original answers
      wrongPasswordRead: 'UnauthenticatedError',
      wrongPasswordAppend: 'UnauthenticatedError',
      readerReadDenied: 'AccessDeniedError',
      readerAppendDenied: 'AccessDeniedError',
      readerAllHasSecret: false,
      readerPublicRead: ['OrderPlaced'],
      perCallCredentials: ['Private'],
    });
  });
});
