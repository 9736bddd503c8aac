// Backups on the kind cluster (CSI hostpath with snapshots), the operator installed from the chart in
// the cluster (watching every namespace; EVENTDB_K8S_LOCAL_OPERATOR=1: a local process, debugging only):
// - a VolumeSnapshot Backup of a three-node cluster taken while writers append: Completed with
//   every snapshot readyToUse, the writers never lose an acknowledged write, and a new cluster
//   made from the Backup serves the events written before it;
// - FileCopy Backups of a one-node cluster into a PVC, full then differential: a new cluster made
//   from the differential one serves the events of both; ttl deletes the older backup (and its
//   folder) but keeps the last completed one.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, create, ctx, kubectl, runScriptPod, useNamespace, waitFor } from '../../k8s/helpers.js';
import {
  applyCluster,
  getCluster,
  installCrds,
  lastJsonLine,
  runInCluster,
  secretValue,
  startOperator,
  startWriters,
  waitClusterReady,
  applyBackup,
  getBackup,
  waitBackupCompleted,
  type OperatorUnderTest,
} from './operator-support.js';

const SMALL = { storage: { data: { size: '256Mi' } }, resources: { requests: { cpu: '20m', memory: '128Mi' } } };

/** Appends `count` events `{ n }` to `stream` through `url` (one request each), prints { written }. */
function appendScript(url: string, stream: string, count: number, from = 0): string {
  return `
(async () => {
  const auth = 'Basic ' + Buffer.from('admin:' + process.env.EVENTDB_PASSWORD).toString('base64');
  let written = 0;
  for (let n = ${from}; n < ${from + count}; n++) {
    const id = crypto.randomUUID();
    for (let attempt = 0; ; attempt++) {
      const response = await fetch('${url}/streams/${stream}', {
        method: 'POST',
        headers: { authorization: auth, 'content-type': 'application/json', 'es-eventtype': 'e', 'es-eventid': id },
        body: JSON.stringify({ n }),
      }).catch((err) => ({ status: String(err) }));
      if (response.status === 201) { written++; break; }
      if (attempt > 30) throw new Error('append ' + n + ': ' + response.status);
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
  }
  console.log(JSON.stringify({ written }));
})().catch((err) => { console.error(err); process.exitCode = 1; });
`;
}

/** Reads `stream` forward through `url` and prints { numbers } (the `n` of every event, in order). */
function readScript(url: string, stream: string): string {
  return `
(async () => {
  const auth = 'Basic ' + Buffer.from('admin:' + process.env.EVENTDB_PASSWORD).toString('base64');
  const numbers = [];
  for (let from = 0; ; from += 500) {
    const response = await fetch('${url}/streams/${stream}/' + from + '/forward/500?embed=body', { headers: { authorization: auth, accept: 'application/vnd.eventstore.atom+json' } });
    if (response.status !== 200) { console.log(JSON.stringify({ numbers, status: response.status })); return; }
    const entries = (await response.json()).entries || [];
    for (const entry of entries.sort((a, b) => a.eventNumber - b.eventNumber)) numbers.push(JSON.parse(entry.data).n);
    if (entries.length < 500) break;
  }
  console.log(JSON.stringify({ numbers }));
})().catch((err) => { console.error(err); process.exitCode = 1; });
`;
}

async function append(namespace: string, cluster: string, stream: string, count: number, from = 0): Promise<number> {
  const password = await secretValue(namespace, `${cluster}-admin`, 'password');
  const log = await runInCluster(namespace, `append-${cluster}-${stream}-${from}`, appendScript(`https://${cluster}-leader:2113`, stream, count, from), { EVENTDB_PASSWORD: password }, undefined, cluster);
  return lastJsonLine<{ written: number }>(log).written;
}

async function read(namespace: string, cluster: string, stream: string): Promise<number[]> {
  const password = await secretValue(namespace, `${cluster}-admin`, 'password');
  const log = await runInCluster(namespace, `read-${cluster}-${stream}`, readScript(`https://${cluster}:2113`, stream), { EVENTDB_PASSWORD: password }, undefined, cluster);
  const result = lastJsonLine<{ numbers: number[]; status?: number }>(log);
  if (result.status !== undefined && result.numbers.length === 0) throw new Error(`reading ${stream} from ${cluster}: HTTP ${result.status}`);
  return result.numbers;
}

const range = (from: number, count: number): number[] => Array.from({ length: count }, (_, i) => from + i);

function eventReasons(namespace: string, kind: string, name: string): string {
  return kubectl(['get', 'events', '-n', namespace, '--field-selector', `involvedObject.kind=${kind},involvedObject.name=${name}`, '-o', 'jsonpath={.items[*].reason}']).stdout;
}

describe.skipIf(ctx().skipReason !== '')('Backup and restore, operator installed from the chart', () => {
  const namespace = useNamespace('edb-backup');
  let operator: OperatorUnderTest | undefined;
  beforeAll(async () => {
    installCrds();
    operator = await startOperator({ watchNamespaces: [] });
  }, 400_000);
  afterAll(async () => {
    await operator?.stop();
    operator = undefined;
  }, 400_000);

  it('snapshots a follower of a three-node cluster under write load, and a new cluster from the Backup serves the data', async () => {
    const ns = namespace();
    expect(applyCluster(ns, 'orders', { ...SMALL, replicas: 3 }).status).toBe(0);
    await waitClusterReady(ns, 'orders', 420_000);
    expect(await append(ns, 'orders', 'before-backup', 50)).toBe(50);
    const writers = await startWriters(ns, {
      name: 'writers',
      writeUrl: 'https://orders-leader:2113',
      readUrls: ['https://orders-leader:2113'],
      writers: 4,
      password: await secretValue(ns, 'orders-admin', 'password'),
    });
    applyBackup(ns, 'snap-1', { cluster: { name: 'orders' }, method: 'VolumeSnapshot', volumeSnapshotClassName: 'csi-hostpath-snapclass' });
    const backup = await waitBackupCompleted(ns, 'snap-1');
    expect(backup.status).toMatchObject({ phase: 'Completed', sourceRole: 'Follower' });
    expect(backup.status?.snapshots).toEqual([{ volume: 'data', name: 'snap-1-data', readyToUse: true }]);
    expect(backup.status?.writerCheckpoint).toBeGreaterThan(0);
    expect(backup.status?.conditions?.find((condition) => condition.type === 'Ready')).toMatchObject({ status: 'True', reason: 'Completed' });
    const snapshot = await api().get<{ status?: { readyToUse?: boolean } }>(`/apis/snapshot.storage.k8s.io/v1/namespaces/${ns}/volumesnapshots/snap-1-data`);
    expect(snapshot?.status?.readyToUse).toBe(true);
    expect(eventReasons(ns, 'Backup', 'snap-1')).toContain('BackupCompleted');
    // The source cluster gets its node back and stays whole; the writers lost nothing.
    const source = await waitClusterReady(ns, 'orders', 300_000);
    expect(source.status?.lastOperation).toMatchObject({ kind: 'Backup', id: 'snap-1', result: 'Succeeded' });
    expect(eventReasons(ns, 'EventDBCluster', 'orders')).toContain('NodeStoppingForBackup');
    const summary = await writers.stop();
    expect(summary.acked).toBeGreaterThan(0);
    expect(summary.missing).toEqual({ 'https://orders-leader:2113': 0 });
    process.stdout.write(`[backup] snapshot of ${backup.status?.sourcePod ?? ''} at writer checkpoint ${backup.status?.writerCheckpoint ?? 0} while ${summary.acked} writes were acknowledged (longest gap ${summary.maxGapMs} ms)\n`);

    expect(applyCluster(ns, 'restored', { ...SMALL, replicas: 1, sourceBackup: { name: 'snap-1' } }).status).toBe(0);
    const restored = await waitClusterReady(ns, 'restored', 300_000);
    expect(restored.status?.restoredFrom).toMatchObject({ backup: 'snap-1', method: 'VolumeSnapshot' });
    const claim = await api().get<{ spec: { dataSource?: { kind: string; name: string } } }>(`/api/v1/namespaces/${ns}/persistentvolumeclaims/data-restored-0`);
    expect(claim?.spec.dataSource).toMatchObject({ kind: 'VolumeSnapshot', name: 'snap-1-data' });
    expect(await read(ns, 'restored', 'before-backup')).toEqual(range(0, 50));
    expect(await append(ns, 'restored', 'after-restore', 3)).toBe(3);
  }, 900_000);

  it('copies files into a PVC, full then differential; a new cluster from the differential one serves both; ttl keeps the last good backup', async () => {
    const ns = namespace();
    await create(`/api/v1/namespaces/${ns}/persistentvolumeclaims`, {
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: { name: 'backups' },
      spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
    });
    expect(applyCluster(ns, 'single', { ...SMALL, replicas: 1 }).status).toBe(0);
    await waitClusterReady(ns, 'single');
    expect(await append(ns, 'single', 'orders', 40)).toBe(40);
    const fileCopy = { claimName: 'backups', differential: true };
    applyBackup(ns, 'copy-1', { cluster: { name: 'single' }, method: 'FileCopy', fileCopy });
    const first = await waitBackupCompleted(ns, 'copy-1');
    expect(first.status).toMatchObject({ phase: 'Completed', sourcePod: 'single-0', sourceRole: 'Leader' });
    expect(first.status?.path).toMatch(/^single\/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    expect(first.status?.differentialFrom).toBeUndefined();
    await waitClusterReady(ns, 'single');

    expect(await append(ns, 'single', 'orders', 25, 40)).toBe(25);
    applyBackup(ns, 'copy-2', { cluster: { name: 'single' }, method: 'FileCopy', fileCopy });
    const second = await waitBackupCompleted(ns, 'copy-2');
    expect(second.status).toMatchObject({ phase: 'Completed', differentialFrom: 'copy-1' });
    expect(second.status?.path).not.toBe(first.status?.path);
    const jobLog = kubectl(['logs', '-n', ns, 'job/copy-2-filecopy']).out;
    expect(jobLog).toContain('differential against');

    expect(applyCluster(ns, 'from-copy', { ...SMALL, replicas: 1, sourceBackup: { name: 'copy-2' } }).status).toBe(0);
    const restored = await waitClusterReady(ns, 'from-copy', 300_000);
    expect(restored.status?.restoredFrom).toMatchObject({ backup: 'copy-2', method: 'FileCopy' });
    expect(eventReasons(ns, 'EventDBCluster', 'from-copy')).toContain('VolumeRestored');
    expect(await read(ns, 'from-copy', 'orders')).toEqual(range(0, 65));

    // ttl: both expire at once; the older goes (its folder first), the last completed one stays.
    for (const name of ['copy-1', 'copy-2']) {
      const patched = kubectl(['patch', 'backup', name, '-n', ns, '--type', 'merge', '-p', JSON.stringify({ spec: { ttl: '1s' } })]);
      expect(patched.status, patched.out).toBe(0);
    }
    await waitFor('copy-1 deleted by ttl', async () => (await getBackup(ns, 'copy-1')) === undefined, 180_000, 1000);
    const kept = await waitFor('copy-2 retained as the last good backup', async () => {
      const current = await getBackup(ns, 'copy-2');
      return current?.status?.conditions?.find((condition) => condition.type === 'Retained')?.status === 'True' ? current : undefined;
    }, 60_000, 1000);
    expect(kept.status?.phase).toBe('Completed');
    expect(eventReasons(ns, 'Backup', 'copy-2')).toContain('RetainedAsLastGood');
    // The expired backup's folder is gone from the claim; the kept one's is whole (--verify).
    const kept2 = second.status?.path ?? '';
    const { pod: lister, log: listing } = await runScriptPod(ns, 'list-backups', `
      const fs = require('fs');
      const { spawnSync } = require('child_process');
      const verify = spawnSync('/app/node/bin/eventdb', ['backup', '--verify', '/backup/${kept2}'], { encoding: 'utf8' });
      console.log(JSON.stringify({ folders: fs.readdirSync('/backup/single').sort(), verify: verify.status, out: verify.stdout + verify.stderr }));`, {}, {
      fsGroup: 10001,
      volumes: [{ name: 'backup', persistentVolumeClaim: { claimName: 'backups' } }],
      volumeMounts: [{ name: 'backup', mountPath: '/backup' }],
    });
    expect(lister.status?.phase, listing).toBe('Succeeded');
    const listed = lastJsonLine<{ folders: string[]; verify: number; out: string }>(listing);
    expect(listed.folders).toEqual([kept2.split('/')[1]]);
    expect(listed.verify, listed.out).toBe(0);
    // Everything but ttl is immutable.
    const edit = kubectl(['patch', 'backup', 'copy-2', '-n', ns, '--type', 'merge', '-p', JSON.stringify({ spec: { node: 'Leader' } })]);
    expect(edit.status).not.toBe(0);
    expect(edit.out).toContain('immutable except spec.ttl');
    expect((await getCluster(ns, 'from-copy'))?.status?.phase).toBe('Ready');
  }, 900_000);
});
