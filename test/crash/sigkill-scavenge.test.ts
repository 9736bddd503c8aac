/**
 * SIGKILLs a real scavenging process at random moments in each phase (at least 5 kills per
 * phase). After every kill: the database opens, every event that must stay is readable and
 * correct, and the next scavenge finishes the job (removed events gone from $all).
 * The child runs the compiled build (dist/), so `make test` builds first.
 */
import { describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import { engineOptions, jsonEvent, openTestEngine, tempDir } from '../support/engine-fixture.js';
import { scavenge } from '../support/scavenge-fixture.js';
import type { Engine } from '../../node/src/storage/event-db.js';

const DRIVER = path.resolve('dist/test/crash/scavenge-driver.js');
const OPTS = { chunkSizeBytes: 64 * 1024, maxMemTableSize: 2000 };
const PHASES = ['Accumulating', 'Calculating', 'ExecutingChunks', 'MergingChunks', 'ExecutingIndex', 'Cleaning'] as const;
const KILLS_PER_PHASE = 5;
const KEPT = 40;
const META = 1200; // streams with $maxCount: the calculation phase has several pages of work

async function buildTemplate(dir: string): Promise<void> {
  const db = await openTestEngine(engineOptions(dir, OPTS));
  for (let s = 0; s < KEPT; s++) {
    await db.append(`kept-${s}`, -1, Array.from({ length: 20 }, (_, i) => jsonEvent({ s, i, pad: 'k'.repeat(200) })));
    await db.append(`gone-${s}`, -1, Array.from({ length: 20 }, (_, i) => jsonEvent({ s, i, pad: 'g'.repeat(200) })));
    await db.deleteStream(`gone-${s}`, -2, s % 2 === 0);
  }
  for (let m = 0; m < META; m++) {
    await db.append(`capped-${m}`, -1, Array.from({ length: 4 }, (_, i) => jsonEvent({ m, i })));
    await db.setStreamMetadata(`capped-${m}`, -2, { $maxCount: 1 });
  }
  await db.close();
}

/**
 * The template scavenged once with merging off: many small scavenged chunks, which the next
 * scavenge (merging on, nothing new to execute) merges in its merge stage. (The execution stage
 * merges what it rewrites, with one thread or many, so a plain log leaves the merge stage little.)
 */
async function buildMergeTemplate(template: string, dir: string): Promise<void> {
  fs.cpSync(template, dir, { recursive: true });
  const db = await openTestEngine(engineOptions(dir, { ...OPTS, disableScavengeMerging: true }));
  try {
    expect((await scavenge(db)).outcome.result).toBe('Success');
  } finally {
    await db.close();
  }
}

interface KillReport { target: string; observed: string; mergesBeforeKill: number }

function runAndKill(dir: string, target: string): Promise<KillReport> {
  return new Promise((resolve, reject) => {
    const pace = ['--throttle', '25'];
    const child = spawn(process.execPath, [DRIVER, '--dir', dir, '--chunk-size', String(OPTS.chunkSizeBytes), '--max-mem-table-size', String(OPTS.maxMemTableSize), ...pace], { stdio: ['ignore', 'pipe', 'pipe'] });
    let observed = 'none';
    let merges = 0; // swapped in by the merge stage
    let killAfterMerges = 0;
    let killTimer: NodeJS.Timeout | undefined;
    const arm = (delayMaxMs: number): void => {
      killTimer ??= setTimeout(() => child.kill('SIGKILL'), Math.floor(Math.random() * delayMaxMs));
    };
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => { stderr += d.toString(); });
    readline.createInterface({ input: child.stdout }).on('line', (line) => {
      let msg: { msg?: string; stage?: string };
      try { msg = JSON.parse(line) as typeof msg; } catch { return; }
      if (msg.msg === 'chunks merged' && observed === 'MergingChunks') {
        merges += 1;
        if (target === 'MergingChunks' && merges >= killAfterMerges) arm(2);
      }
      if (msg.msg !== 'scavenge stage' || !msg.stage) return;
      observed = msg.stage;
      if (msg.stage !== target) return;
      if (target === 'MergingChunks') {
        // The stage takes milliseconds: the kill lands before the first merge, or just after
        // the first, second or third one is swapped in (while the next is being written).
        killAfterMerges = Math.floor(Math.random() * 4);
        if (killAfterMerges === 0) arm(2);
      } else {
        arm(target === 'ExecutingIndex' || target === 'Cleaning' ? 3 : 150);
      }
    });
    child.on('exit', (code, signal) => {
      if (killTimer) clearTimeout(killTimer);
      if (signal === 'SIGKILL') resolve({ target, observed, mergesBeforeKill: merges });
      else if (code === 0) resolve({ target, observed: 'finished', mergesBeforeKill: merges });
      else reject(new Error(`scavenge driver exited ${code}: ${stderr}`));
    });
  });
}

async function verifyKept(db: Engine, label: string): Promise<void> {
  for (let s = 0; s < KEPT; s++) {
    const r = await db.readStream(`kept-${s}`, 0, 100, 'forward');
    expect(r.kind, label).toBe('success');
    if (r.kind !== 'success') continue;
    expect(r.events.map((e) => JSON.parse(e.data.toString()) as { i: number }).map((b) => b.i), label).toEqual(Array.from({ length: 20 }, (_, i) => i));
    const gone = await db.readStream(`gone-${s}`, 0, 100, 'forward');
    expect(gone.kind, label).toBe(s % 2 === 0 ? 'stream-deleted' : 'stream-not-found');
  }
  for (let m = 0; m < META; m += 97) {
    const r = await db.readStream(`capped-${m}`, 0, 100, 'forward');
    expect(r.kind === 'success' && r.events.map((e) => e.eventNumber), label).toEqual([3]);
  }
}

async function verifyJobDone(db: Engine, label: string): Promise<void> {
  const all = await db.readAll(undefined, 1_000_000, 'forward');
  for (let s = 0; s < KEPT; s++) {
    const left = all.events.filter((e) => e.stream === `gone-${s}`);
    expect(left.length, `${label}: gone-${s} after the finishing scavenge`).toBe(1); // tombstone or last event
    expect(all.events.filter((e) => e.stream === `kept-${s}`).length, label).toBe(20);
  }
  expect(all.events.filter((e) => e.stream.startsWith('capped-')).length, label).toBe(META);
}

describe('scavenge crash safety under SIGKILL', () => {
  it(`keeps every kept event and finishes the job after ${KILLS_PER_PHASE} kills in each phase`, async () => {
    expect(fs.existsSync(DRIVER), 'build first: make build').toBe(true);
    const template = tempDir('edb-scav-template-');
    await buildTemplate(template);
    const mergeTemplate = tempDir('edb-scav-merge-template-');
    await buildMergeTemplate(template, mergeTemplate);
    const killsByPhase = new Map<string, number>(PHASES.map((p) => [p, 0]));
    let killsBetweenMerges = 0;
    for (const target of PHASES) {
      for (let attempt = 0; attempt < 30 && killsByPhase.get(target)! < KILLS_PER_PHASE; attempt++) {
        const dir = tempDir('edb-scav-crash-');
        fs.cpSync(target === 'MergingChunks' ? mergeTemplate : template, dir, { recursive: true });
        const report = await runAndKill(dir, target);
        if (report.observed !== 'finished') killsByPhase.set(report.observed, (killsByPhase.get(report.observed) ?? 0) + 1);
        if (report.observed === 'MergingChunks' && report.mergesBeforeKill > 0) killsBetweenMerges += 1;
        const label = `kill aimed at ${target}, last stage seen ${report.observed}`;
        const db = await openTestEngine(engineOptions(dir, OPTS));
        try {
          await verifyKept(db, label);
          const finished = await scavenge(db);
          expect(finished.outcome.result, label).toBe('Success');
          await verifyKept(db, `${label}, after the finishing scavenge`);
          await verifyJobDone(db, label);
        } finally {
          await db.close();
        }
        fs.rmSync(dir, { recursive: true, force: true });
      }
    }
    for (const phase of PHASES) expect(killsByPhase.get(phase), `kills observed in ${phase}`).toBeGreaterThanOrEqual(KILLS_PER_PHASE);
    // Some merge-stage kills landed after a merge was swapped in, with more to come.
    expect(killsBetweenMerges, 'kills in the merge stage after at least one merge').toBeGreaterThan(0);
  });
});
