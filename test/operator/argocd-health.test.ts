// The Argo CD health checks of the chart's README, run by a real Lua interpreter (lua5.4, as
// Argo CD's gopher-lua runs them) against status objects the operator writes.
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

const README = fileURLToPath(new URL('../../charts/eventdb-operator/README.md', import.meta.url));
const LUA = 'lua5.4';
const haveLua = spawnSync(LUA, ['-v'], { stdio: 'ignore' }).status === 0;
if (!haveLua) process.stdout.write(`[argocd-health] SKIPPED: ${LUA} is not installed (apt-get install lua5.4)\n`);

// made only when the checks run: a skipped suite's afterAll does not run, and the run's temp
// directory must be left empty
const directory = haveLua ? mkdtempSync(path.join(tmpdir(), 'argocd-health-')) : '';
afterAll(() => {
  if (directory !== '') rmSync(directory, { recursive: true, force: true });
});

function healthScript(kind: string): string {
  const readme = readFileSync(README, 'utf8');
  const start = readme.indexOf(`resource.customizations.health.eventdb.io_${kind}: |`);
  if (start < 0) throw new Error(`no health check for ${kind} in the chart's README`);
  const body: string[] = [];
  for (const line of readme.slice(start).split('\n').slice(1)) {
    if (!line.startsWith('  ')) break;
    body.push(line.slice(2));
  }
  return body.join('\n');
}

function luaValue(value: unknown): string {
  if (value === null || value === undefined) return 'nil';
  if (Array.isArray(value)) return `{${value.map(luaValue).join(',')}}`;
  if (typeof value === 'object') return `{${Object.entries(value).map(([key, entry]) => `[${JSON.stringify(key)}]=${luaValue(entry)}`).join(',')}}`;
  return JSON.stringify(value);
}

function health(kind: string, object: unknown): string {
  const file = path.join(directory, `${kind}.lua`);
  writeFileSync(file, `local obj = ${luaValue(object)}\nlocal function check()\n${healthScript(kind)}\nend\nlocal hs = check()\nprint(hs.status)\n`);
  return execFileSync(LUA, [file], { encoding: 'utf8' }).trim();
}

const ready = { type: 'Ready', status: 'True', reason: 'ClusterReady', message: '3 of 3 nodes ready', observedGeneration: 2 };

describe.skipIf(!haveLua)('Argo CD health checks', () => {
  it('EventDBCluster: Healthy only when Ready for the current generation', () => {
    expect(health('EventDBCluster', { metadata: { generation: 2 }, spec: {}, status: { phase: 'Ready', conditions: [ready] } })).toBe('Healthy');
    expect(health('EventDBCluster', { metadata: { generation: 3 }, spec: {}, status: { phase: 'Ready', conditions: [ready] } })).toBe('Progressing');
    expect(health('EventDBCluster', { metadata: { generation: 1 }, spec: {} })).toBe('Progressing');
  });

  it('EventDBCluster: Degraded for a spec the operator cannot act on, Progressing during an update, Suspended when paused', () => {
    const failed = { ...ready, status: 'False', reason: 'InvalidSpec', message: 'spec.replicas: must be 1, 3 or 5' };
    expect(health('EventDBCluster', { metadata: { generation: 2 }, spec: {}, status: { phase: 'Failed', conditions: [failed] } })).toBe('Degraded');
    const updating = { ...ready, status: 'False', reason: 'RollingUpdate', message: 'restart orders-2' };
    expect(health('EventDBCluster', { metadata: { generation: 2 }, spec: {}, status: { phase: 'Updating', conditions: [updating] } })).toBe('Progressing');
    expect(health('EventDBCluster', { metadata: { generation: 2 }, spec: { paused: true }, status: { conditions: [ready] } })).toBe('Suspended');
  });

  it('Backup and ScavengeSchedule', () => {
    expect(health('Backup', { metadata: {}, spec: {}, status: { phase: 'Completed' } })).toBe('Healthy');
    expect(health('Backup', { metadata: {}, spec: {}, status: { phase: 'Failed' } })).toBe('Degraded');
    expect(health('Backup', { metadata: {}, spec: {} })).toBe('Progressing');
    expect(health('ScavengeSchedule', { metadata: {}, spec: { suspend: true } })).toBe('Suspended');
    expect(health('ScavengeSchedule', { metadata: {}, spec: {}, status: { state: 'Waiting' } })).toBe('Healthy');
  });
});
