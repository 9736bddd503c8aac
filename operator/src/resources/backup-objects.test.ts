// Builders of what a Backup makes and what a restore runs.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  FILE_COPY_SCRIPT,
  buildFileCopyJob,
  FILE_COPY_DEADLINE_SECONDS,
  jobSchedulingOf,
  buildRestoreJob,
  buildVolumeSnapshot,
  childName,
  fileCopyPath,
  formatBackupHold,
  jobOutcome,
  parseBackupHold,
  snapshotPlan,
} from './backup-objects.js';

const backup = { name: 'nightly-42', namespace: 'shop', uid: 'u-1' };
const cluster = { name: 'orders', namespace: 'shop', uid: 'c-1' };

type JobShape = { spec: { template: { spec: { affinity?: unknown; containers: { env: { name: string; value: string }[]; volumeMounts: { name: string; mountPath: string }[] }[]; volumes: { name: string; persistentVolumeClaim?: { claimName: string; readOnly?: boolean } }[] } } } };

describe('backup objects', () => {
  it('round-trips the hold annotation and refuses anything else', () => {
    const hold = { backup: 'nightly-42', pod: 'orders-1', mode: 'Stop' as const };
    expect(parseBackupHold(formatBackupHold(hold))).toEqual(hold);
    expect(parseBackupHold('nightly-42/orders-1/Pause')).toBeUndefined();
    expect(parseBackupHold(undefined)).toBeUndefined();
  });

  it('snapshots the index volume before the data volume, one snapshot when they share a volume', () => {
    expect(snapshotPlan('orders-1', true)).toEqual([{ volume: 'index', claim: 'index-orders-1' }, { volume: 'data', claim: 'data-orders-1' }]);
    expect(snapshotPlan('orders-1', false)).toEqual([{ volume: 'data', claim: 'data-orders-1' }]);
    const snapshot = buildVolumeSnapshot({ backup, cluster: 'orders', volume: 'data', claim: 'data-orders-1', volumeSnapshotClassName: 'csi-hostpath-snapclass' });
    expect(snapshot.metadata).toMatchObject({ name: 'nightly-42-data', ownerReferences: [{ kind: 'Backup', name: 'nightly-42', uid: 'u-1', controller: true }] });
    expect(snapshot['spec']).toEqual({ volumeSnapshotClassName: 'csi-hostpath-snapclass', source: { persistentVolumeClaimName: 'data-orders-1' } });
  });

  it('keeps child names within 63 characters, distinct per base', () => {
    const long = 'a'.repeat(70);
    expect(childName(long, 'filecopy').length).toBeLessThanOrEqual(63);
    expect(childName(long, 'filecopy')).not.toBe(childName(`${long}b`, 'filecopy'));
    expect(childName('short', 'data')).toBe('short-data');
  });

  it('runs the file copy on the source pod\'s host, over its PVCs, with the ops password and the earlier folder', () => {
    const job = buildFileCopyJob({
      backup, cluster, pod: 'orders-1', nodeName: 'kind-worker', separateIndex: true, claimName: 'backups',
      path: fileCopyPath('orders', '2026-11-24T02:00:00.123Z'), previousPath: 'orders/2026-11-23T02:00:00Z',
      image: 'eventdb:dev', imagePullPolicy: 'IfNotPresent', opsSecret: { name: 'orders-ops', key: 'password' },
    }) as unknown as JobShape;
    const pod = job.spec.template.spec;
    expect(JSON.stringify(pod.affinity)).toContain('kind-worker');
    expect(pod.volumes.map((volume) => volume.persistentVolumeClaim?.claimName).filter(Boolean)).toEqual(['data-orders-1', 'backups', 'index-orders-1']);
    const env = Object.fromEntries(pod.containers[0]!.env.map((entry) => [entry.name, entry.value]));
    expect(env).toMatchObject({ BACKUP_PATH: 'orders/2026-11-24T02:00:00Z', PREVIOUS_PATH: 'orders/2026-11-23T02:00:00Z', SOURCE_INDEX: '/source/index', NODE_URL: 'http://orders-1.orders-headless.shop.svc:2113' });
  });

  it('takes the tolerations and priority class of the cluster\'s pods and a deadline; the host pin replaces their node selector and affinity', () => {
    const scheduling = jobSchedulingOf(
      { tolerations: [{ key: 'dedicated', operator: 'Equal', value: 'eventdb', effect: 'NoSchedule' }], nodeSelector: { pool: 'eventdb' }, affinity: { podAntiAffinity: {} }, priorityClassName: 'critical' },
      FILE_COPY_DEADLINE_SECONDS,
    );
    const input = {
      backup, cluster, pod: 'orders-1', separateIndex: false, claimName: 'backups', path: 'orders/x',
      image: 'eventdb:dev', imagePullPolicy: 'IfNotPresent', opsSecret: { name: 'orders-ops', key: 'password' }, scheduling,
    };
    const pinned = buildFileCopyJob({ ...input, nodeName: 'kind-worker' }) as unknown as { spec: { activeDeadlineSeconds?: number; template: { spec: Record<string, unknown> } } };
    expect(pinned.spec.activeDeadlineSeconds).toBe(3600);
    expect(pinned.spec.template.spec['tolerations']).toEqual([{ key: 'dedicated', operator: 'Equal', value: 'eventdb', effect: 'NoSchedule' }]);
    expect(pinned.spec.template.spec['priorityClassName']).toBe('critical');
    expect(pinned.spec.template.spec['nodeSelector']).toBeUndefined();
    expect(JSON.stringify(pinned.spec.template.spec['affinity'])).toContain('kind-worker');
    const free = buildFileCopyJob(input) as unknown as { spec: { template: { spec: Record<string, unknown> } } };
    expect(free.spec.template.spec['nodeSelector']).toEqual({ pool: 'eventdb' });
    expect(free.spec.template.spec['affinity']).toEqual({ podAntiAffinity: {} });
  });

  it('reaches a node that serves https by its pod DNS name, trusting the cluster CA only', () => {
    const build = (caSecret: { name: string; everyCrtKey: boolean }) => buildFileCopyJob({
      backup, cluster, pod: 'orders-1', separateIndex: false, claimName: 'backups', path: 'orders/x',
      image: 'eventdb:dev', imagePullPolicy: 'IfNotPresent', opsSecret: { name: 'orders-ops', key: 'password' }, caSecret,
    }) as unknown as JobShape;
    const pod = build({ name: 'orders-node-tls', everyCrtKey: false }).spec.template.spec;
    const env = Object.fromEntries(pod.containers[0]!.env.map((entry) => [entry.name, entry.value]));
    expect(env['NODE_URL']).toBe('https://orders-1.orders-headless.shop.svc:2113');
    type Volume = { name: string; secret?: { secretName: string; items?: unknown[] }; emptyDir?: unknown };
    const caVolume = (pod.volumes as Volume[]).find((volume) => volume.secret?.secretName === 'orders-node-tls');
    // The operator's own Secret: its ca.crt only (never the node's key beside it).
    expect(caVolume?.secret?.items).toEqual([{ key: 'ca.crt', path: 'ca.crt' }]);
    const mounts = (pod.containers[0] as unknown as { volumeMounts: { name: string; mountPath: string }[] }).volumeMounts;
    expect(env['TRUSTED_CA_DIR']).toBe(mounts.find((m) => m.name === caVolume?.name)?.mountPath);
    // The script joins every .crt of that folder into NODE_EXTRA_CA_CERTS, in a writable emptyDir.
    const trust = (pod.volumes as Volume[]).find((volume) => volume.emptyDir !== undefined);
    const trustPath = mounts.find((m) => m.name === trust?.name)?.mountPath ?? '-';
    expect(FILE_COPY_SCRIPT).toContain(`cat "$TRUSTED_CA_DIR"/*.crt > ${trustPath}/ca-bundle.pem`);
    expect(FILE_COPY_SCRIPT).toContain(`export NODE_EXTRA_CA_CERTS=${trustPath}/ca-bundle.pem`);
    // A CA Secret the user names (tls.caSecret) is mounted whole: every .crt key is trusted, as by the nodes.
    const userCa = build({ name: 'orders-ca-bundle', everyCrtKey: true }).spec.template.spec;
    expect((userCa.volumes as Volume[]).find((volume) => volume.secret?.secretName === 'orders-ca-bundle')?.secret).toEqual({ secretName: 'orders-ca-bundle' });
  });

  it('restores into the new pod\'s PVCs, reading the backup claim read-only', () => {
    const job = buildRestoreJob({ cluster, pod: 'orders-2', separateIndex: false, claimName: 'backups', path: 'orders/x', image: 'eventdb:dev', imagePullPolicy: 'IfNotPresent' }) as unknown as JobShape & { metadata: { name: string } };
    expect(job.metadata.name).toBe('orders-restore-2');
    const pod = job.spec.template.spec;
    expect(pod.volumes[0]).toEqual({ name: 'backup', persistentVolumeClaim: { claimName: 'backups', readOnly: true } });
    expect(Object.fromEntries(pod.containers[0]!.env.map((entry) => [entry.name, entry.value]))).toEqual({ BACKUP_PATH: 'orders/x', TARGET_DB: '/data/db', TARGET_INDEX: '/data/index' });
  });

  it('reads a Job\'s outcome', () => {
    expect(jobOutcome(undefined)).toBe('missing');
    expect(jobOutcome({ apiVersion: 'batch/v1', kind: 'Job', metadata: {}, status: { active: 1 } })).toBe('running');
    expect(jobOutcome({ apiVersion: 'batch/v1', kind: 'Job', metadata: {}, status: { succeeded: 1 } })).toBe('succeeded');
    expect(jobOutcome({ apiVersion: 'batch/v1', kind: 'Job', metadata: {}, status: { conditions: [{ type: 'Failed', status: 'True' }] } })).toBe('failed');
  });
});

describe('the file-copy script', () => {
  let dir: string | undefined;
  afterEach(() => {
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  it('clones the earlier backup with hard links before a differential run, and starts clean otherwise', () => {
    dir = mkdtempSync(path.join(tmpdir(), 'edb-filecopy-'));
    const root = path.join(dir, 'backup');
    mkdirSync(path.join(root, 'orders/old/db'), { recursive: true });
    writeFileSync(path.join(root, 'orders/old/db/chunk-000000.000000'), 'chunk');
    writeFileSync(path.join(root, 'orders/old/backup-manifest.json'), '{}');
    // The script with the paths of this test and a stand-in for the node program that lists its arguments.
    const script = FILE_COPY_SCRIPT.replaceAll('/backup/', `${root}/`).replace(/exec \S+ backup/, 'echo backup');
    const run = (env: Record<string, string>): string =>
      execFileSync('sh', ['-c', script], { env: { PATH: process.env['PATH'] ?? '', SOURCE_DB: '/s/db', SOURCE_INDEX: '/s/index', NODE_URL: 'http://n:2113', ...env }, encoding: 'utf8' });
    const differential = run({ BACKUP_PATH: 'orders/new', PREVIOUS_PATH: 'orders/old' });
    expect(differential).toContain('--differential');
    const oldChunk = statSync(path.join(root, 'orders/old/db/chunk-000000.000000'));
    const newChunk = statSync(path.join(root, 'orders/new/db/chunk-000000.000000'));
    expect(newChunk.ino).toBe(oldChunk.ino);
    const full = run({ BACKUP_PATH: 'orders/new' });
    expect(full).not.toContain('--differential');
    expect(readdirSync(path.join(root, 'orders'))).toEqual(['old']);
  });
});
