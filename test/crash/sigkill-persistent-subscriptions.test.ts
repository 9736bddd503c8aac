/**
 * A real node on disk serving a persistent subscription to two competing consumers while
 * events keep being appended is SIGKILLed mid-stream, several times. After each restart:
 * the group's checkpoint (info and checkpoint stream agree) never covers an event that was not
 * acknowledged before the kill; delivery resumes right after the checkpoint; and at the end
 * every event of the stream has been delivered at least once.
 */
import { afterAll, describe, expect, it } from 'vitest';

import {
  appendNumbered,
  CompetingConsumer,
  createGroup,
  groupInfo,
} from '../support/competing-consumer.js';
import { httpClient } from '../support/http-client.js';
import { startNode, tempDir, type NodeProcess } from '../support/node-process.js';

const KILLS = 5;
const INITIAL_EVENTS = 2_000;
const STREAM = 'crash-orders';
const GROUP = 'workers';

let dir: ReturnType<typeof tempDir> | undefined;
let node: NodeProcess | undefined;

afterAll(async () => {
  if (node !== undefined && node.child.exitCode === null) await node.stop('SIGKILL');
  dir?.remove();
});

interface Ledger {
  /** Event numbers delivered, in any round. */
  readonly delivered: Set<number>;
  /** Event numbers whose acknowledgement was accepted (202) before the node died. */
  readonly acked: Set<number>;
}

/** Consumers pull and acknowledge until `stop` says so or the node dies. */
async function consume(
  baseUrl: string,
  ledger: Ledger,
  firstDelivered: number[],
  until: () => boolean,
): Promise<void> {
  const worker = new CompetingConsumer(baseUrl, STREAM, GROUP);
  try {
    while (!until()) {
      let result;
      try {
        result = await worker.pull(40);
      } catch {
        return; // the node is gone
      }
      if (result.status !== 200) return;
      if (result.entries.length === 0) {
        await new Promise((r) => setTimeout(r, 10));
        continue;
      }
      for (const entry of result.entries) {
        if (firstDelivered.length === 0) firstDelivered.push(entry.eventNumber);
        ledger.delivered.add(entry.eventNumber);
      }
      try {
        if ((await worker.post(result.links['ackAll'] ?? '')) === 202) {
          for (const entry of result.entries) ledger.acked.add(entry.eventNumber);
        }
      } catch {
        return;
      }
    }
  } finally {
    await worker.close().catch(() => undefined);
  }
}

/** Appends batches of 25 events while the node lives. */
async function keepAppending(baseUrl: string, until: () => boolean): Promise<void> {
  while (!until()) {
    try {
      await appendNumbered(baseUrl, STREAM, 25, { batch: 25 });
    } catch {
      return;
    }
    await new Promise((r) => setTimeout(r, 20));
  }
}

async function checkpointStreamValue(baseUrl: string): Promise<number | undefined> {
  const http = httpClient(baseUrl);
  const response = await http(
    'GET',
    `/streams/${encodeURIComponent(`$persistentsubscription-${STREAM}::${GROUP}-checkpoint`)}/head`,
    { headers: { accept: 'application/json' } },
  );
  if (response.status === 404) return undefined;
  expect(response.status).toBe(200);
  return Number(response.json());
}

describe('persistent subscriptions under SIGKILL', () => {
  it(`resume from the checkpoint after ${KILLS} kills and deliver every event at least once`, async () => {
    // A fresh directory per attempt: a retry starts from an empty database too.
    if (node !== undefined && node.child.exitCode === null) await node.stop('SIGKILL');
    dir?.remove();
    dir = tempDir('eventdb-ps-crash-');
    const args = ['--db', `${dir.path}/db`, '--index', `${dir.path}/index`];
    node = await startNode({ memDb: false, args });
    await appendNumbered(node.baseUrl, STREAM, INITIAL_EVENTS);
    await createGroup(node.baseUrl, STREAM, GROUP, {
      checkPointAfterMilliseconds: 50,
      minCheckPointCount: 5,
      maxCheckPointCount: 200,
      messageTimeoutMilliseconds: 3_000,
    });
    const ledger: Ledger = { delivered: new Set(), acked: new Set() };
    const checkpoints: number[] = [];

    for (let round = 0; round < KILLS; round++) {
      const current = node;
      let dead = false;
      const firstDelivered: number[] = [];
      const work = Promise.all([
        consume(current.baseUrl, ledger, firstDelivered, () => dead),
        consume(current.baseUrl, ledger, firstDelivered, () => dead),
        keepAppending(current.baseUrl, () => dead),
      ]);
      await new Promise((r) => setTimeout(r, 300 + Math.floor(Math.random() * 900)));
      dead = true;
      await current.stop('SIGKILL');
      await work;

      node = await startNode({ memDb: false, args });
      const info = await groupInfo(node.baseUrl, STREAM, GROUP);
      const stored = await checkpointStreamValue(node.baseUrl);
      const reported =
        info.lastCheckpointedEventPosition === undefined ? undefined : Number(info.lastCheckpointedEventPosition);
      expect(reported, `round ${round}: info and checkpoint stream agree`).toBe(stored);
      if (stored !== undefined) {
        checkpoints.push(stored);
        // Nothing is skipped: the checkpoint only covers events acknowledged before the kill.
        for (let n = 0; n <= stored; n++) {
          expect(ledger.acked.has(n), `round ${round}: event ${n} is below checkpoint ${stored} but was never acknowledged`).toBe(true);
        }
        // Delivery resumes right after it. When the consumers had acknowledged everything the
        // appender got in before the kill, the checkpoint is the stream's last event: one more
        // append gives the group something to resume with.
        await appendNumbered(node.baseUrl, STREAM, 1);
        const probe = new CompetingConsumer(node.baseUrl, STREAM, GROUP);
        const next = await probe.pull(1, { longPollSeconds: 5 });
        expect(next.entries.map((e) => e.eventNumber), `round ${round}: resumes after ${stored}`).toEqual([stored + 1]);
        await probe.post(next.links['nackAll'] ?? '');
        await probe.close();
      }
    }
    process.stderr.write(`checkpoints after kills: ${checkpoints.join(", ")}; acked ${ledger.acked.size}\n`);
    expect(checkpoints.length).toBeGreaterThan(0);
    expect(checkpoints[checkpoints.length - 1]).toBeGreaterThan(0);

    // A last round without a kill: everything left is delivered.
    const http = httpClient(node.baseUrl);
    const head = await http('GET', `/streams/${STREAM}/head`, { headers: { accept: 'application/vnd.eventstore.atom+json' } });
    const last = Number(String(head.json().title).split('@')[0]);
    expect(last).toBeGreaterThanOrEqual(INITIAL_EVENTS - 1);
    const deadline = Date.now() + 120_000;
    await Promise.all([
      consume(node.baseUrl, ledger, [], () => ledger.delivered.size > last || Date.now() > deadline),
      consume(node.baseUrl, ledger, [], () => ledger.delivered.size > last || Date.now() > deadline),
    ]);
    for (let n = 0; n <= last; n++) expect(ledger.delivered.has(n), `event ${n} never delivered`).toBe(true);
    expect(await node.stop()).toBe(0);
  });
});
