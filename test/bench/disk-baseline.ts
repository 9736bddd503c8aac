/**
 * Disk baseline on the disk that holds the bench's data: sequential 1 MiB writes each followed
 * by fdatasync (MB/s), and 4 KiB writes each followed by fdatasync (syncs/s). The second figure
 * bounds how many group commits per second a durable single writer can do.
 */
import { closeSync, fdatasyncSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';

import type { BenchSection } from './bench-types.js';

const PHASE_MS = 2500;
const FILE_SIZE_BYTES_MAX = 1024 * 1024 * 1024;

export async function run(): Promise<BenchSection> {
  const dir = mkdtempSync(join(process.env['BENCH_DIR'] ?? tmpdir(), 'eventdb-bench-disk-'));
  try {
    const sequential = writeLoop(join(dir, 'sequential.bin'), 1024 * 1024);
    const small = writeLoop(join(dir, 'small.bin'), 4096);
    return {
      name: 'disk',
      metrics: [
        {
          name: 'sequential write + fdatasync (1 MiB blocks)',
          value: round(sequential.bytesPerSecond / 1e6),
          unit: 'MB/s',
        },
        {
          name: 'write + fdatasync (4 KiB blocks)',
          value: Math.round(small.writesPerSecond),
          unit: 'syncs/s',
        },
      ],
      notes: [
        `disk baseline in ${dir} (the bench data's filesystem unless BENCH_DIR says otherwise)`,
      ],
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function writeLoop(
  path: string,
  blockSizeBytes: number,
): { bytesPerSecond: number; writesPerSecond: number } {
  const block = Buffer.alloc(blockSizeBytes, 0x5a);
  const fd = openSync(path, 'w');
  let written = 0;
  let writes = 0;
  const start = performance.now();
  try {
    while (
      performance.now() - start < PHASE_MS &&
      written + blockSizeBytes <= FILE_SIZE_BYTES_MAX
    ) {
      writeSync(fd, block, 0, block.length, written);
      fdatasyncSync(fd);
      written += blockSizeBytes;
      writes += 1;
    }
  } finally {
    closeSync(fd);
  }
  const seconds = (performance.now() - start) / 1000;
  return { bytesPerSecond: written / seconds, writesPerSecond: writes / seconds };
}

function round(value: number): number {
  return Math.round(value * 10) / 10;
}
