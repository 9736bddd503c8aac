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
import { LAUNCHER } from '../support/node-process.js';
import type { BenchMetric, BenchSection } from './bench-types.js';
import { fillLog } from './fill-log.js';

const MB = Number(process.env['BENCH_BACKUP_MB'] ?? 512);

function round(v: number, digits = 1): number {
  const f = 10 ** digits;
  return Math.round(v * f) / f;
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
    await fillLog(src, { targetBytes: MB * 1e6, timeLimitMs: 600_000, maxMemTableSize: 100_000 });
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
