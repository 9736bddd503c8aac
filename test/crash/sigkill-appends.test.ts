/**
 * Kills a real appending process with SIGKILL at random moments, at least 20 times, and after
 * every restart checks that each acknowledged event is readable at its number with its id and
 * data, that nothing half-written appears, and that the index agrees with the log.
 * The child runs the compiled build (dist/), so `make test` builds first.
 */
import { describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import { engineOptions, openTestEngine, tempDir } from '../support/engine-fixture.js';

const DRIVER = path.resolve('dist/test/crash/append-driver.js');
const KILLS = 24;
const WRITERS = 24;

interface Ack { stream: string; first: number; ids: string[] }

function runUntilKilled(dir: string, killAfterMs: number, acks: Map<string, Map<number, string>>): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [DRIVER, '--dir', dir, '--writers', String(WRITERS), '--chunk-size', '32768', '--max-mem-table-size', '400'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    let ackCount = 0;
    child.stderr.on('data', (d: Buffer) => { stderr += d.toString(); });
    readline.createInterface({ input: child.stdout }).on('line', (line) => {
      const msg = JSON.parse(line) as Ack | { ready: true };
      if ('ready' in msg) { setTimeout(() => child.kill('SIGKILL'), killAfterMs); return; }
      let m = acks.get(msg.stream);
      if (!m) { m = new Map(); acks.set(msg.stream, m); }
      msg.ids.forEach((id, i) => m!.set(msg.first + i, id));
      ackCount += msg.ids.length;
    });
    child.on('exit', (code, signal) => {
      if (signal === 'SIGKILL') resolve(ackCount);
      else reject(new Error(`driver exited ${code}: ${stderr}`));
    });
  });
}

describe('crash safety under SIGKILL', () => {
  it(`loses no acknowledged event across ${KILLS} kills`, async () => {
    expect(fs.existsSync(DRIVER), 'build first: make build').toBe(true);
    const dir = tempDir('edb-crash-');
    const acks = new Map<string, Map<number, string>>();
    let totalAcked = 0;
    for (let round = 0; round < KILLS; round++) {
      totalAcked += await runUntilKilled(dir, 40 + Math.floor(Math.random() * 400), acks);
      await verify(dir, acks, round);
    }
    expect(totalAcked).toBeGreaterThan(KILLS * 50);
  });
});

async function verify(dir: string, acks: Map<string, Map<number, string>>, round: number): Promise<void> {
  const db = await openTestEngine(engineOptions(dir, { chunkSizeBytes: 32768, maxMemTableSize: 400 }));
  try {
    const all = await db.readAll(undefined, 1_000_000, 'forward');
    const perStreamInAll = new Map<string, number>();
    for (const e of all.events) perStreamInAll.set(e.stream, (perStreamInAll.get(e.stream) ?? 0) + 1);
    for (let k = 0; k < WRITERS; k++) {
      const stream = `w-${k}`;
      const expected = acks.get(stream) ?? new Map<number, string>();
      const read = await db.readStream(stream, 0, 1_000_000, 'forward');
      if (read.kind !== 'success') {
        expect(expected.size, `round ${round}: ${stream} is ${read.kind} but has acknowledged events`).toBe(0);
        continue;
      }
      // Numbers are contiguous from 0: nothing half-written, nothing missing in the middle.
      read.events.forEach((e, i) => {
        expect(e.eventNumber, `round ${round} ${stream}`).toBe(i);
        const body = JSON.parse(e.data.toString('utf8')) as { writer: number; n: number };
        expect(body).toMatchObject({ writer: k, n: i });
      });
      for (const [n, id] of expected) {
        expect(read.events[n]?.eventId, `round ${round}: acknowledged ${stream}@${n} lost`).toBe(id);
      }
      // The index and the log agree: the stream read returns exactly what $all holds for it.
      expect(read.events.length, `round ${round}: index vs log for ${stream}`).toBe(perStreamInAll.get(stream) ?? 0);
      expect(read.lastEventNumber).toBe(read.events.length - 1);
    }
  } finally {
    await db.close();
  }
}
