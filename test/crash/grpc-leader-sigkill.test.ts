/**
 * The official Node client, given all three members' addresses, appends one event at a time in a
 * loop to a 3-node cluster on disk while the leader is SIGKILLed. The client must rediscover the
 * new leader through gossip and go on appending; afterwards every acknowledged event is read
 * back from a surviving node exactly once. Failed appends are retried with a new event id, so an
 * unacknowledged append that was written anyway is allowed but never counted.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { KurrentDBClient, jsonEvent } from '@kurrent/kurrentdb-client';

import { createCluster, FAST_CLUSTER_ARGS, type TestCluster } from '../support/cluster.js';

const BEFORE_KILL = 50;
const AFTER_KILL = 50;
const RECOVERY_BUDGET_MS = 60_000;
const STREAM = 'grpc-sigkill-loop';

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

describe('the leader SIGKILLed under the official Node client', () => {
  let cluster: TestCluster | undefined;
  afterAll(async () => cluster?.stop());

  it('the client reconnects to the new leader and no acknowledged append is lost', { timeout: 300_000 }, async () => {
    await cluster?.stop(); // a retry starts a new cluster
    cluster = await createCluster({ size: 3, onDisk: true, firstHost: 71, args: FAST_CLUSTER_ARGS });
    const c = cluster;
    await c.waitForStable(120_000);
    const hosts = c.members.map((m) => `${m.spec.ip}:${m.spec.httpPort}`).join(',');
    const client = KurrentDBClient.connectionString(`kurrentdb://${hosts}?tls=false&nodePreference=leader`);
    const acknowledged: string[] = [];
    const errors: string[] = [];
    let killedAt = -1;
    let stop = false;
    const loop = (async () => {
      while (!stop) {
        const id = randomUUID();
        try {
          await client.appendToStream(STREAM, jsonEvent({ id, type: 'Loop', data: { n: acknowledged.length } }));
          acknowledged.push(id);
        } catch (err) {
          errors.push(String((err as Error)?.message ?? err));
          await sleep(50);
        }
      }
    })();
    try {
      const deadline = Date.now() + 60_000;
      while (acknowledged.length < BEFORE_KILL && Date.now() < deadline) await sleep(20);
      expect(acknowledged.length, 'appends before the kill').toBeGreaterThanOrEqual(BEFORE_KILL);
      const leader = await c.leader();
      killedAt = acknowledged.length;
      const killMs = Date.now();
      await leader.process!.stop('SIGKILL');
      const recoveryDeadline = killMs + RECOVERY_BUDGET_MS;
      let firstAfterMs = -1;
      while (acknowledged.length < killedAt + AFTER_KILL && Date.now() < recoveryDeadline) {
        if (firstAfterMs < 0 && acknowledged.length > killedAt + 1) firstAfterMs = Date.now() - killMs;
        await sleep(20);
      }
      stop = true;
      await loop;
      process.stdout.write(`acknowledged ${acknowledged.length} (${killedAt} before the kill), failed attempts ${errors.length}, ` +
        `first append after the kill at ${firstAfterMs} ms; errors: ${[...new Set(errors)].slice(0, 5).join(' | ')}\n`);
      expect(acknowledged.length, 'appends after the kill').toBeGreaterThanOrEqual(killedAt + AFTER_KILL);

      // Read everything back from a survivor (one the client was not pinned to).
      const survivor = c.members.find((m) => m !== leader)!;
      const reader = KurrentDBClient.connectionString(`kurrentdb://${survivor.spec.ip}:${survivor.spec.httpPort}?tls=false&nodePreference=follower`);
      try {
        const counts = new Map<string, number>();
        const readDeadline = Date.now() + 30_000;
        let missing = acknowledged.length;
        while (missing > 0 && Date.now() < readDeadline) {
          counts.clear();
          try {
            for await (const event of reader.readStream(STREAM)) counts.set(event.event!.id, (counts.get(event.event!.id) ?? 0) + 1);
          } catch {
            // the survivor may still be catching up with the new leader
          }
          missing = acknowledged.filter((id) => !counts.has(id)).length;
          if (missing > 0) await sleep(200);
        }
        expect(missing, 'acknowledged events missing on the survivor').toBe(0);
        for (const id of acknowledged) expect(counts.get(id), `event ${id}`).toBe(1);
      } finally {
        await reader.dispose();
      }
    } finally {
      stop = true;
      await loop;
      await client.dispose();
    }
  });
});
