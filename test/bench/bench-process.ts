/**
 * What the bench sections share about processes: the load worker they run a workload in, and
 * the Linux /proc counters they read a server's CPU time and run-queue delay from.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import os from 'node:os';
import { fileURLToPath } from 'node:url';

import type { WorkloadResult } from './bench-types.js';
import type { WorkloadSpec } from './load-worker.js';

const WORKER_PATH = fileURLToPath(new URL('./load-worker.js', import.meta.url));

/** Linux USER_HZ; /proc/<pid>/stat times are in these ticks. */
export const CLOCK_TICKS_PER_SECOND = 100;

/**
 * Runs one workload in a load-worker process and resolves with its result (the last line it
 * prints); the worker is killed 60 s after its duration if it has not ended by then.
 */
export function runWorker(spec: WorkloadSpec): Promise<WorkloadResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [WORKER_PATH, JSON.stringify(spec)], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const killer = setTimeout(() => child.kill('SIGKILL'), spec.durationMs + 60_000);
    child.on('exit', (code) => {
      clearTimeout(killer);
      const line = stdout.trim().split('\n').at(-1) ?? '';
      if (code !== 0 || line === '') reject(new Error(`load worker exited ${code}: ${stderr.slice(-500)}`));
      else resolve(JSON.parse(line) as WorkloadResult);
    });
  });
}

/** utime + stime of a process, in clock ticks (0 once it is gone). */
export function cpuTicksOf(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(fields[11] ?? 0) + Number(fields[12] ?? 0);
  } catch {
    return 0;
  }
}

/** Nanoseconds the process's main thread spent runnable but waiting for a CPU (schedstat); 0 once it is gone. */
export function runDelayNsOf(pid: number): number {
  try {
    return Number(readFileSync(`/proc/${pid}/schedstat`, 'utf8').split(' ')[1] ?? 0);
  } catch {
    return 0;
  }
}

/** The 1, 5 and 15 minute load averages, one decimal each. */
export function loadAverage(): string {
  return os
    .loadavg()
    .map((l) => l.toFixed(1))
    .join(' ');
}
