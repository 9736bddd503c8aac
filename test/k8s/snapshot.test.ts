// VolumeSnapshots: a node writes events to a PVC of the default StorageClass; a VolumeSnapshot of that PVC
// (class csi-hostpath-snapclass, the operator contract's) becomes readyToUse; a new PVC restored from it holds the
// same files, and a node started on it reads the same events.
import { describe, expect, it } from 'vitest';
import {
  NODE_UID,
  api,
  create,
  createClaim,
  ctx,
  execIn,
  nodeContainer,
  runScriptPod,
  useNamespace,
  waitFor,
  waitPodGone,
  waitPodReady,
} from './helpers.js';

const EVENTS = 40;

/** A pod of the node whose data directory (the image's volume /var/lib/eventdb/db) is the PVC `claim`. */
function nodePod(name: string, claim: string): Record<string, unknown> {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name },
    spec: {
      terminationGracePeriodSeconds: 30,
      securityContext: { fsGroup: NODE_UID },
      containers: [nodeContainer(['--insecure'], { volumeMounts: [{ name: 'data', mountPath: '/var/lib/eventdb/db' }] })],
      volumes: [{ name: 'data', persistentVolumeClaim: { claimName: claim } }],
    },
  };
}

const APPEND = `(async () => {
  const auth = 'Basic ' + Buffer.from('admin:changeit').toString('base64');
  for (let i = 0; i < ${EVENTS}; i++) {
    const r = await fetch('http://127.0.0.1:2113/streams/orders', {
      method: 'POST',
      headers: { authorization: auth, 'content-type': 'application/vnd.eventstore.events+json' },
      body: JSON.stringify([{ eventId: require('crypto').randomUUID(), eventType: 'placed', data: { n: i } }]),
    });
    if (r.status !== 201) throw new Error('append ' + i + ' -> ' + r.status + ' ' + await r.text());
  }
})().then(() => console.log('appended'), (e) => { console.error(String(e)); process.exit(1); });`;

const READ = `(async () => {
  const auth = 'Basic ' + Buffer.from('admin:changeit').toString('base64');
  const r = await fetch('http://127.0.0.1:2113/streams/orders/0/forward/1000?embed=body', { headers: { authorization: auth, accept: 'application/json' } });
  if (r.status !== 200) throw new Error('read -> ' + r.status);
  const feed = await r.json();
  console.log(JSON.stringify(feed.entries.map((e) => JSON.parse(e.data).n).sort((a, b) => a - b)));
})().catch((e) => { console.error(String(e)); process.exit(1); });`;

/** Lists every file under /data with its size and sha256, as JSON. */
const LIST = `const fs = require('fs'), path = require('path'), crypto = require('crypto');
const out = {};
const walk = (d) => { for (const e of fs.readdirSync(d, { withFileTypes: true })) {
  const p = path.join(d, e.name);
  if (e.isDirectory()) walk(p);
  else if (e.isFile()) { const b = fs.readFileSync(p); out[path.relative('/data', p)] = b.length + ':' + crypto.createHash('sha256').update(b).digest('hex'); }
} };
walk('/data');
console.log(JSON.stringify(out));`;

describe.skipIf(!!ctx().skipReason)('volume snapshots', () => {
  const ns = useNamespace('snap');

  const listFiles = async (pod: string, claim: string): Promise<Record<string, string>> => {
    const { pod: p, log } = await runScriptPod(ns(), pod, LIST, {}, {
      fsGroup: NODE_UID,
      volumes: [{ name: 'data', persistentVolumeClaim: { claimName: claim } }],
      volumeMounts: [{ name: 'data', mountPath: '/data', readOnly: true }],
    });
    expect(p.status?.phase, log).toBe('Succeeded');
    return JSON.parse(log.trim().split('\n').pop() ?? '{}') as Record<string, string>;
  };

  it('snapshots a PVC a node wrote, and a PVC restored from the snapshot holds the same files and events', async () => {
    await createClaim(ns(), 'data');
    await create(`/api/v1/namespaces/${ns()}/pods`, nodePod('writer', 'data'));
    await waitPodReady(ns(), 'writer');
    expect(execIn(ns(), 'writer', ['node', '-e', APPEND])).toContain('appended');
    // a graceful stop (SIGTERM) closes the engine: everything is on the volume
    await api().call('DELETE', `/api/v1/namespaces/${ns()}/pods/writer`);
    await waitPodGone(ns(), 'writer');

    const original = await listFiles('list-original', 'data');
    expect(Object.keys(original).some((f) => /^chunk-\d{6}\.\d{6}$/.test(f)), JSON.stringify(original)).toBe(true);

    await create(`/apis/snapshot.storage.k8s.io/v1/namespaces/${ns()}/volumesnapshots`, {
      apiVersion: 'snapshot.storage.k8s.io/v1',
      kind: 'VolumeSnapshot',
      metadata: { name: 'data-snap' },
      spec: { volumeSnapshotClassName: 'csi-hostpath-snapclass', source: { persistentVolumeClaimName: 'data' } },
    });
    const snap = await waitFor('the VolumeSnapshot to be readyToUse', async () => {
      const s = await api().get<{ status?: { readyToUse?: boolean; boundVolumeSnapshotContentName?: string; restoreSize?: string; error?: unknown } }>(
        `/apis/snapshot.storage.k8s.io/v1/namespaces/${ns()}/volumesnapshots/data-snap`,
      );
      if (s?.status?.error) throw new Error(`snapshot error: ${JSON.stringify(s.status.error)}`);
      return s?.status?.readyToUse === true ? s : undefined;
    }, 120_000, 1000);
    expect(snap.status?.boundVolumeSnapshotContentName).toMatch(/^snapcontent-/);

    await createClaim(ns(), 'restored', {
      dataSource: { apiGroup: 'snapshot.storage.k8s.io', kind: 'VolumeSnapshot', name: 'data-snap' },
    });
    const restored = await listFiles('list-restored', 'restored');
    expect(restored).toEqual(original);

    // a node on the restored volume reads every event back
    await create(`/api/v1/namespaces/${ns()}/pods`, nodePod('reader', 'restored'));
    await waitPodReady(ns(), 'reader');
    const numbers = JSON.parse(execIn(ns(), 'reader', ['node', '-e', READ]).trim()) as number[];
    expect(numbers).toEqual(Array.from({ length: EVENTS }, (_, i) => i));
  }, 600_000);
});
