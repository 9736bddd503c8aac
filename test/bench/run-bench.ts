/**
 * Bench orchestrator (`make bench`): runs the sections in order, prints one table, and writes
 * bench-results/<timestamp>.json and bench-results/latest.json.
 *
 * Sections are modules exporting `run(): Promise<BenchSection>`. To add one (e.g. the storage
 * engine's), append an entry to SECTIONS. `BENCH_SECTIONS=disk,http` runs a subset. An optional
 * section whose module is missing is reported as skipped rather than failing the run.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import type { BenchMetric, BenchSection } from './bench-types.js';
import { install as stopServersOnInterrupt } from './interrupt.js';

interface SectionEntry {
  readonly name: string;
  /** Module path relative to this file, exporting `run(): Promise<BenchSection>`. */
  readonly module: string;
  readonly optional?: boolean;
}

export const SECTIONS: readonly SectionEntry[] = [
  { name: 'disk', module: './disk-baseline.js' },
  { name: 'engine', module: './engine-bench.js', optional: true },
  { name: 'http', module: './http-bench.js' },
  { name: 'https', module: './https-bench.js' },
  { name: 'grpc', module: './grpc-bench.js' },
  { name: 'scavenge', module: './scavenge-bench.js' },
  { name: 'operator', module: './operator-bench.js', optional: true },
  { name: 'subscriptions', module: './subscriptions-bench.js' },
  { name: 'projections', module: './projections-bench.js' },
  { name: 'cluster', module: './cluster-bench.js' },
  { name: 'backup', module: './backup-bench.js' },
  { name: 'autoscavenge', module: './autoscavenge-bench.js' },
];

async function runSection(entry: SectionEntry): Promise<BenchSection> {
  let mod: { run?: () => Promise<BenchSection> };
  try {
    mod = (await import(entry.module)) as typeof mod;
  } catch (err: unknown) {
    if (entry.optional === true && isModuleNotFound(err)) {
      return {
        name: entry.name,
        metrics: [],
        notes: [`section skipped: ${entry.module} not present`],
      };
    }
    throw err;
  }
  if (typeof mod.run !== 'function') throw new Error(`${entry.module} does not export run()`);
  return mod.run();
}

function isModuleNotFound(err: unknown): boolean {
  return (
    typeof err === 'object' &&
    err !== null &&
    (err as { code?: unknown }).code === 'ERR_MODULE_NOT_FOUND'
  );
}

function status(metric: BenchMetric): string {
  if (metric.target === undefined) return '';
  const ok =
    metric.lowerIsBetter === true ? metric.value <= metric.target : metric.value >= metric.target;
  return ok ? 'PASS' : 'BELOW TARGET';
}

function printTable(sections: readonly BenchSection[]): void {
  const rows = sections.flatMap((s) =>
    s.metrics.map((m) => [
      s.name,
      m.name,
      m.value.toLocaleString('en-US'),
      m.unit,
      m.target?.toLocaleString('en-US') ?? '',
      status(m),
    ]),
  );
  const header = ['section', 'metric', 'value', 'unit', 'target', 'status'];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]): string =>
    cells
      .map((c, i) => (i === 2 || i === 4 ? c.padStart(widths[i] ?? 0) : c.padEnd(widths[i] ?? 0)))
      .join('  ');
  process.stdout.write(`\n${line(header)}\n${widths.map((w) => '-'.repeat(w)).join('  ')}\n`);
  for (const row of rows) process.stdout.write(`${line(row)}\n`);
  for (const s of sections)
    for (const note of s.notes) process.stdout.write(`note [${s.name}]: ${note}\n`);
}

async function main(): Promise<void> {
  stopServersOnInterrupt();
  const wanted = process.env['BENCH_SECTIONS']?.split(',').map((s) => s.trim());
  const startedAt = new Date();
  const sections: BenchSection[] = [];
  const failed: string[] = [];
  for (const entry of SECTIONS) {
    if (wanted !== undefined && !wanted.includes(entry.name)) continue;
    process.stderr.write(`bench section ${entry.name}...\n`);
    const t0 = Date.now();
    let section: BenchSection;
    try {
      section = await runSection(entry);
    } catch (err: unknown) {
      // One broken section must not hide the figures of the others.
      failed.push(entry.name);
      const message = err instanceof Error ? err.message : String(err);
      section = { name: entry.name, metrics: [], notes: [`section FAILED: ${message}`] };
    }
    sections.push({
      ...section,
      notes: [...section.notes, `section took ${Math.round((Date.now() - t0) / 1000)} s`],
    });
  }
  printTable(sections);
  const dir = join(process.cwd(), 'bench-results');
  mkdirSync(dir, { recursive: true });
  const report = JSON.stringify(
    { startedAt: startedAt.toISOString(), node: process.version, sections },
    null,
    2,
  );
  const stamp = startedAt.toISOString().replace(/[:.]/g, '-');
  writeFileSync(join(dir, `${stamp}.json`), report);
  writeFileSync(join(dir, 'latest.json'), report);
  process.stdout.write(`\nresults written to ${join(dir, `${stamp}.json`)}\n`);
  if (failed.length > 0) {
    process.stderr.write(`bench sections failed: ${failed.join(', ')}\n`);
    process.exitCode = 1;
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`bench failed: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
