import { describe, expect, it } from 'vitest';
import { directoryProblem } from './paths.js';

describe('directoryProblem', () => {
  it('refuses /proc and /sys and what lies under them, also through relative paths', () => {
    expect(directoryProblem('/proc/x')).toBe('/proc/x is under /proc, a kernel pseudo-filesystem that cannot hold files');
    expect(directoryProblem('/proc')).toMatch(/under \/proc/);
    expect(directoryProblem('/sys/kernel/db')).toMatch(/under \/sys/);
    expect(directoryProblem('../../proc/self', '/var/lib')).toMatch(/under \/proc/);
    expect(directoryProblem('/srv/../proc/1')).toMatch(/under \/proc/);
  });

  it('accepts everything else', () => {
    expect(directoryProblem('/processes/db')).toBeUndefined();
    expect(directoryProblem('/dev/shm/db')).toBeUndefined();
    expect(directoryProblem('data', '/home/me')).toBeUndefined();
    expect(directoryProblem('/var/lib/eventdb')).toBeUndefined();
  });
});
