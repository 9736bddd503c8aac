/**
 * promtool (Prometheus's own checker), built from Go modules by `test/k8s/build.sh prometheus`
 * (pinned PROMETHEUS_VERSION, cached under ~/.cache/eventdb-k8s; `make test-tools` builds it).
 * PROMTOOL=path overrides it.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';

const BUILD_SH = resolve(import.meta.dirname, '../k8s/build.sh');

/** The promtool binary; throws, saying how to build it, when it is not built yet. */
export function promtoolPath(): string {
  if (process.env.PROMTOOL !== undefined) return process.env.PROMTOOL;
  const dir = spawnSync('bash', [BUILD_SH, '--dir', 'prometheus'], { encoding: 'utf8' }).stdout.trim();
  const bin = join(dir, 'promtool');
  if (!existsSync(bin)) throw new Error(`promtool is not built (${bin}): run \`make test-tools\` or \`test/k8s/build.sh prometheus\``);
  return bin;
}

/** Runs promtool with `args` (stdin `input`); its exit code and output. */
export function promtool(args: readonly string[], input?: string): { status: number | null; output: string } {
  const result = spawnSync(promtoolPath(), [...args], { encoding: 'utf8', timeout: 60_000, ...(input === undefined ? {} : { input }) });
  return { status: result.status, output: `${result.stdout}${result.stderr}` };
}
