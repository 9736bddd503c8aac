// The Argo CD health checks the chart ships (charts/eventdb-operator/files/argocd/<Kind>.lua, rendered
// into the argocd-cm snippet by templates/argocd-health.yaml), run by a real Lua interpreter
// (lua5.4; Argo CD runs them in gopher-lua) against status objects the operator writes.
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

const CHECKS = fileURLToPath(new URL('../../charts/eventdb-operator/files/argocd/', import.meta.url));
const TEMPLATE = fileURLToPath(new URL('../../charts/eventdb-operator/templates/argocd-health.yaml', import.meta.url));
const KINDS = ['EventDBCluster', 'Backup', 'BackupSchedule', 'ScavengeSchedule'];
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
  return readFileSync(path.join(CHECKS, `${kind}.lua`), 'utf8');
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
    const hibernated = { ...ready, status: 'False', reason: 'Hibernated', message: 'spec.hibernation is true' };
    expect(health('EventDBCluster', { metadata: { generation: 2 }, spec: { hibernation: true }, status: { phase: 'Hibernated', conditions: [hibernated] } })).toBe('Suspended');
    const hibernating = { ...ready, status: 'False', reason: 'Hibernating', message: 'stopping orders-0' };
    expect(health('EventDBCluster', { metadata: { generation: 2 }, spec: { hibernation: true }, status: { phase: 'Hibernating', conditions: [hibernating] } })).toBe('Progressing');
  });

  it('EventDBCluster: Stalled=True is Degraded', () => {
    const stalled = { type: 'Stalled', status: 'True', reason: 'SecretMissing', message: 'Secret orders-tls missing' };
    const notReady = { ...ready, status: 'False', reason: 'Creating', message: '' };
    expect(health('EventDBCluster', { metadata: { generation: 2 }, spec: {}, status: { phase: 'Creating', conditions: [notReady, stalled] } })).toBe('Degraded');
  });

  const condition = (type: string, status: string, reason: string): Record<string, unknown> => ({ type, status, reason, message: `${type} ${reason}`, observedGeneration: 1 });
  const kstatus = (readyStatus: string, readyReason: string, extra: Record<string, unknown>[] = []): Record<string, unknown>[] => [
    condition('Ready', readyStatus, readyReason),
    ...(extra.some((c) => c['type'] === 'Stalled') ? [] : [condition('Stalled', 'False', 'NotStalled')]),
    ...(extra.some((c) => c['type'] === 'Reconciling') ? [] : [condition('Reconciling', 'False', 'Reconciled')]),
    ...extra,
  ];

  it('Backup: Completed Healthy, Failed or Stalled Degraded, Pending and Running Progressing', () => {
    expect(health('Backup', { metadata: {}, spec: {}, status: { phase: 'Completed' } })).toBe('Healthy');
    expect(health('Backup', { metadata: {}, spec: {}, status: { phase: 'Failed' } })).toBe('Degraded');
    expect(health('Backup', { metadata: {}, spec: {} })).toBe('Progressing');
    expect(health('Backup', { metadata: { generation: 1 }, spec: {}, status: { phase: 'Running', conditions: kstatus('False', 'Copying', [condition('Reconciling', 'True', 'Copying')]) } })).toBe('Progressing');
    expect(health('Backup', { metadata: { generation: 1 }, spec: {}, status: { phase: 'Failed', conditions: kstatus('False', 'FileCopyFailed', [condition('Stalled', 'True', 'FileCopyFailed')]) } })).toBe('Degraded');
    expect(health('Backup', { metadata: { generation: 1 }, spec: {}, status: { phase: 'Completed', conditions: kstatus('True', 'Completed') } })).toBe('Healthy');
  });

  it('ScavengeSchedule: Suspended, Healthy while waiting or running, Degraded when Stalled or a cycle failed, Progressing while its cluster is missing', () => {
    expect(health('ScavengeSchedule', { metadata: {}, spec: { suspend: true } })).toBe('Suspended');
    expect(health('ScavengeSchedule', { metadata: {}, spec: {}, status: { state: 'Waiting' } })).toBe('Healthy');
    expect(health('ScavengeSchedule', { metadata: {}, spec: {} })).toBe('Progressing');
    expect(health('ScavengeSchedule', { metadata: {}, spec: {}, status: { state: 'InProgress', conditions: kstatus('True', 'Scheduled') } })).toBe('Healthy');
    expect(health('ScavengeSchedule', { metadata: {}, spec: {}, status: { state: 'Waiting', conditions: kstatus('False', 'CycleFailed') } })).toBe('Degraded');
    expect(health('ScavengeSchedule', { metadata: {}, spec: {}, status: { state: 'NotConfigured', conditions: kstatus('False', 'InvalidSpec', [condition('Stalled', 'True', 'InvalidSpec')]) } })).toBe('Degraded');
    expect(health('ScavengeSchedule', { metadata: {}, spec: {}, status: { state: 'Waiting', conditions: kstatus('False', 'ClusterNotFound', [condition('Reconciling', 'True', 'ClusterNotFound')]) } })).toBe('Progressing');
  });

  it('BackupSchedule: Suspended, Healthy on schedule, Degraded when Stalled or its newest backup failed, Progressing before the operator saw it or while its cluster is missing', () => {
    expect(health('BackupSchedule', { metadata: { generation: 1 }, spec: { suspend: true } })).toBe('Suspended');
    expect(health('BackupSchedule', { metadata: { generation: 1 }, spec: {} })).toBe('Progressing');
    expect(health('BackupSchedule', { metadata: { generation: 1 }, spec: {}, status: { conditions: kstatus('True', 'Scheduled') } })).toBe('Healthy');
    expect(health('BackupSchedule', { metadata: { generation: 1 }, spec: {}, status: { conditions: kstatus('True', 'WaitingForActiveBackup') } })).toBe('Healthy');
    expect(health('BackupSchedule', { metadata: { generation: 2 }, spec: {}, status: { conditions: kstatus('True', 'Scheduled') } })).toBe('Progressing');
    expect(health('BackupSchedule', { metadata: { generation: 1 }, spec: {}, status: { conditions: kstatus('False', 'LastBackupFailed') } })).toBe('Degraded');
    expect(health('BackupSchedule', { metadata: { generation: 1 }, spec: {}, status: { conditions: kstatus('False', 'InvalidSpec', [condition('Stalled', 'True', 'InvalidSpec')]) } })).toBe('Degraded');
    expect(health('BackupSchedule', { metadata: { generation: 1 }, spec: {}, status: { conditions: kstatus('False', 'ClusterNotFound', [condition('Reconciling', 'True', 'ClusterNotFound')]) } })).toBe('Progressing');
  });
});

describe('the argocd-cm snippet of the chart', () => {
  it('has a check for every kind, rendered under the key argocd-cm reads', () => {
    expect(readdirSync(CHECKS).filter((name) => name.endsWith('.lua')).map((name) => name.replace(/\.lua$/, '')).sort()).toEqual([...KINDS].sort());
    const template = readFileSync(TEMPLATE, 'utf8');
    expect(template).toContain('.Files.Glob "files/argocd/*.lua"');
    expect(template).toContain('resource.customizations.health.eventdb.io_{{ base $path | trimSuffix ".lua" }}: |');
  });
});
