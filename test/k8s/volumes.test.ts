// Secret, ConfigMap and downward API volumes and env in a running node container (read with kubectl exec), a Secret
// update seen by the running container, and a PersistentVolumeClaim of the default StorageClass (CSI hostpath) whose
// files outlive the pod.
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
  waitPodReady,
} from './helpers.js';

const b64 = (s: string): string => Buffer.from(s).toString('base64');

describe.skipIf(!!ctx().skipReason)('volumes and env', () => {
  const ns = useNamespace('vol');

  it('mounts a Secret, a ConfigMap and pod labels; the running container sees a Secret update', async () => {
    await create(`/api/v1/namespaces/${ns()}/secrets`, {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'creds' },
      data: { password: b64('first'), user: b64('admin') },
    });
    await create(`/api/v1/namespaces/${ns()}/configmaps`, {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'cfg' },
      data: { 'eventdb.yaml': 'LogLevel: info\n', mode: 'fast' },
    });
    await create(`/api/v1/namespaces/${ns()}/pods`, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'node', labels: { tier: 'test' } },
      spec: {
        terminationGracePeriodSeconds: 5,
        containers: [
          nodeContainer(['--insecure', '--mem-db', '--config', '/etc/eventdb/cfg/eventdb.yaml'], {
            env: [
              { name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
              { name: 'POD_MODE', valueFrom: { configMapKeyRef: { name: 'cfg', key: 'mode' } } },
              { name: 'POD_USER', valueFrom: { secretKeyRef: { name: 'creds', key: 'user' } } },
              { name: 'POD_GREETING', value: 'hello $(POD_NAME)' },
            ],
            volumeMounts: [
              { name: 'creds', mountPath: '/etc/eventdb/creds', readOnly: true },
              { name: 'cfg', mountPath: '/etc/eventdb/cfg' },
              { name: 'podinfo', mountPath: '/etc/eventdb/podinfo' },
            ],
          }),
        ],
        volumes: [
          { name: 'creds', secret: { secretName: 'creds' } },
          { name: 'cfg', configMap: { name: 'cfg', items: [{ key: 'eventdb.yaml', path: 'eventdb.yaml' }] } },
          { name: 'podinfo', downwardAPI: { items: [{ path: 'labels', fieldRef: { fieldPath: 'metadata.labels' } }] } },
        ],
      },
    });
    await waitPodReady(ns(), 'node');
    const env = JSON.parse(execIn(ns(), 'node', ['node', '-e', 'console.log(JSON.stringify(process.env))'])) as Record<string, string>;
    expect(env).toMatchObject({ POD_NAME: 'node', POD_MODE: 'fast', POD_USER: 'admin', POD_GREETING: 'hello node', SERVICE_NODE_IP: '0.0.0.0' });
    expect(execIn(ns(), 'node', ['cat', '/etc/hostname']).trim()).toBe('node');
    expect(execIn(ns(), 'node', ['cat', '/etc/eventdb/creds/password'])).toBe('first');
    expect(execIn(ns(), 'node', ['cat', '/etc/eventdb/cfg/eventdb.yaml'])).toBe('LogLevel: info\n');
    expect(execIn(ns(), 'node', ['cat', '/etc/eventdb/podinfo/labels'])).toContain('tier="test"');
    // the kubelet's atomic update layout: keys are symlinks through ..data
    expect(execIn(ns(), 'node', ['readlink', '/etc/eventdb/creds/password']).trim()).toBe('..data/password');
    const before = execIn(ns(), 'node', ['readlink', '/etc/eventdb/creds/..data']).trim();

    await api().call('PATCH', `/api/v1/namespaces/${ns()}/secrets/creds`, { data: { password: b64('second') } }, { patch: 'merge' });
    // the kubelet syncs Secret volumes periodically (about a minute at most with its default sync period)
    await waitFor('the running container to see the new Secret', async () => execIn(ns(), 'node', ['cat', '/etc/eventdb/creds/password']) === 'second', 150_000, 1000);
    expect(execIn(ns(), 'node', ['readlink', '/etc/eventdb/creds/..data']).trim()).not.toBe(before);
  }, 300_000);

  it('binds a PersistentVolumeClaim of the default StorageClass whose files outlive the pod', async () => {
    await createClaim(ns(), 'data');
    const write = async (name: string): Promise<string> => {
      const { pod, log } = await runScriptPod(
        ns(),
        name,
        "const fs = require('fs'); fs.appendFileSync('/data/runs', process.env.RUN + '\\n'); console.log(fs.readFileSync('/data/runs', 'utf8')); console.log('uid', process.getuid(), 'mode', (fs.statSync('/data').mode & 0o7777).toString(8))",
        { RUN: name },
        { fsGroup: NODE_UID, volumes: [{ name: 'data', persistentVolumeClaim: { claimName: 'data' } }], volumeMounts: [{ name: 'data', mountPath: '/data' }] },
      );
      expect(pod.status?.phase, log).toBe('Succeeded');
      return log;
    };
    expect(await write('first')).toContain('first\n');
    const pvc = await api().get<{ status?: { phase?: string }; spec?: { volumeName?: string; storageClassName?: string } }>(
      `/api/v1/namespaces/${ns()}/persistentvolumeclaims/data`,
    );
    expect(pvc?.status?.phase).toBe('Bound');
    if (ctx().kind) {
      // the default StorageClass of the kind cluster is the CSI hostpath driver
      expect(pvc?.spec?.storageClassName).toBe('standard');
      const pv = await api().get<{ spec?: { csi?: { driver?: string } } }>(`/api/v1/persistentvolumes/${pvc?.spec?.volumeName ?? ''}`);
      expect(pv?.spec?.csi?.driver).toBe('hostpath.csi.eventdb.local');
    }
    const second = await write('second');
    expect(second).toContain('first\nsecond\n');
    // the node image's user writes through the pod's fsGroup
    expect(second).toContain(`uid ${NODE_UID}`);
  }, 300_000);
});
