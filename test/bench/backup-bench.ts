/**
 * Backup bench: builds a log of about BENCH_BACKUP_MB (default 512) MB with the engine, then, in
 * the same run and on the same filesystem:
 *  - a plain copy of the data and index directories (copyFile per file, each fsynced: what the
 *    tool's copies must also do), the machine's own speed for the same bytes;
 *  - `eventdb backup` (full) through the launcher, as an operator runs it;
 *  - `eventdb backup --differential` into that backup right after (nothing changed: the cost of
 *    listing, comparing and re-copying the last chunk and the index files);
 *  - `eventdb backup --verify` of the backup;
 *  - `eventdb restore` into empty directories.
 * MB/s = bytes of the backed-up files / wall time of the process (start-up included). The page
 * cache is warm for every step (the log was just written); the ratios to the plain copy are the
 * figures to compare between runs.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { openEngine } from '../../node/src/storage/event-db.js';
import { LAUNCHER } from '../support/node-process.js';
import type { BenchMetric, BenchSection } from './bench-types.js';

const MB = Number(process.env['BENCH_BACKUP_MB'] ?? 512);
const EVENT_BYTES = 1024;

function round(v: number, digits = 1): number {
  const f = 10 ** digits;
  return Math.round(v * f) / f;
}

async function buildLog(dir: string): Promise<void> {
  const db = await openEngine({
    dbPath: path.join(dir, 'db'), indexPath: path.join(dir, 'index'), memDb: false, chunkSizeBytes: 256 * 1024 * 1024,
    maxMemTableSize: 100_000, maxEventSizeBytes: 4 << 20, hashCollisionReadLimit: 100,
    streamExistenceFilterSizeBytes: 32 << 20,
  }, { log: pino({ level: 'warn' }), onFatal: (err) => { throw err; } });
  const data = Buffer.from(JSON.stringify({ pad: 'x'.repeat(EVENT_BYTES - 12) }));
  const targetBytes = MB * 1e6;
  let written = 0;
  let stream = 0;
  const t0 = performance.now();
  const writer = async (): Promise<void> => {
    while (written < targetBytes && performance.now() - t0 < 600_000) {
      const s = stream++;
      const events = Array.from({ length: 100 }, () => ({ eventId: crypto.randomUUID(), eventType: 'Filler', data, metadata: Buffer.alloc(0), isJson: true }));
      const r = await db.append(`s-${s}`, -1, events);
      if (r.kind !== 'success') throw new Error(`fill failed: ${r.kind}`);
      written += 100 * (EVENT_BYTES + 100);
    }
  };
  await Promise.all(Array.from({ length: 8 }, () => writer()));
  await db.close();
}

function treeBytes(dir: string): number {
  let total = 0;
  for (const entry of fs.readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile() && entry.name !== 'eventdb.lock') total += fs.statSync(path.join(entry.parentPath, entry.name)).size;
  }
  return total;
}

function plainCopy(from: string, to: string): void {
  for (const entry of fs.readdirSync(from, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile() || entry.name === 'eventdb.lock') continue;
    const src = path.join(entry.parentPath, entry.name);
    const dst = path.join(to, path.relative(from, src));
    fs.mkdirSync(path.dirname(dst), { recursive: true });
    fs.copyFileSync(src, dst);
    const fd = fs.openSync(dst, 'r+');
    fs.fsyncSync(fd);
    fs.closeSync(fd);
  }
}

async function tool(args: string[]): Promise<number> {
  const t0 = performance.now();
  const child = spawn('/bin/sh', [LAUNCHER, ...args], { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, NODE: process.execPath } });
  let stderr = '';
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
  if (code !== 0) throw new Error(`eventdb ${args.join(' ')} exited ${code}: ${stderr}`);
  return performance.now() - t0;
}

export async function run(): Promise<BenchSection> {
  const root = fs.mkdtempSync(path.join(process.env['BENCH_DIR'] ?? os.tmpdir(), 'eventdb-bench-backup-'));
  try {
    const src = path.join(root, 'src');
    await buildLog(src);
    const bytes = treeBytes(path.join(src, 'db')) + treeBytes(path.join(src, 'index'));
    const mbps = (ms: number): number => round(bytes / 1e6 / (ms / 1000));

    const c0 = performance.now();
    plainCopy(src, path.join(root, 'plain'));
    const plainMs = performance.now() - c0;
    fs.rmSync(path.join(root, 'plain'), { recursive: true, force: true });

    const startupMs = await tool(['backup', '--help']);
    const backup = path.join(root, 'backup');
    const dirs = ['--db', path.join(src, 'db'), '--index', path.join(src, 'index')];
    const fullMs = await tool(['backup', ...dirs, '--to', backup]);
    const diffMs = await tool(['backup', ...dirs, '--to', backup, '--differential']);
    const verifyMs = await tool(['backup', '--verify', backup]);
    const restoreMs = await tool(['restore', '--from', backup, '--db', path.join(root, 'r', 'db'), '--index', path.join(root, 'r', 'index')]);

    const metrics: BenchMetric[] = [
      { name: 'plain copy of db + index (copyFile + fsync)', value: mbps(plainMs), unit: 'MB/s' },
      { name: 'eventdb backup (full)', value: mbps(fullMs), unit: 'MB/s' },
      { name: 'eventdb backup (full) / plain copy', value: round(plainMs / fullMs, 2), unit: 'ratio' },
      { name: 'eventdb restore', value: mbps(restoreMs), unit: 'MB/s' },
      { name: 'eventdb restore / plain copy', value: round(plainMs / restoreMs, 2), unit: 'ratio' },
      { name: 'eventdb backup --verify', value: mbps(verifyMs), unit: 'MB/s' },
      { name: 'eventdb backup --differential, nothing changed', value: round(diffMs / 1000, 2), unit: 's' },
      { name: 'tool start-up (eventdb backup --help)', value: round(startupMs / 1000, 2), unit: 's' },
    ];
    return {
      name: 'backup',
      metrics,
      notes: [
        `${round(bytes / 1e6)} MB of db + index files (BENCH_BACKUP_MB=${MB}, 256 MiB chunks) in ${root}; page cache warm for every step`,
        'tool figures are wall time of the launcher process (start-up included); backup and restore hash every byte (SHA-256) and fsync every file',
        `plain copy ${round(plainMs / 1000, 2)} s, full backup ${round(fullMs / 1000, 2)} s, restore ${round(restoreMs / 1000, 2)} s, verify ${round(verifyMs / 1000, 2)} s`,
      ],
    };
  } finally {
    fs.rmSync(root, { recursive: true, force: true });
  }
}
