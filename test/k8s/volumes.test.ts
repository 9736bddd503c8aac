// Local kubelet: Secret/ConfigMap volumes updated in place (..data swap), env from ConfigMaps/Secrets/downward API,
// PersistentVolumeClaims bound by the local provisioner.
import { describe, expect, it } from 'vitest';
import fs from 'node:fs';
import path from 'node:path';
import {
  IMAGE,
  STANDIN_COMMAND,
  api,
  create,
  ctx,
  getPod,
  httpGet,
  localLog,
  useNamespace,
  waitFor,
  waitPodGone,
  waitPodReady,
} from './helpers.js';

const b64 = (s: string): string => Buffer.from(s).toString('base64');

// Uses the stand-in fixture through the image (it reads files as the process sees them): local kubelet only.
describe.skipIf(!!ctx().skipReason || !ctx().local)('volumes and env', () => {
  const ns = useNamespace('vol');

  it('mounts a Secret and a ConfigMap, and the running process sees a Secret update', async () => {
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
      data: { 'settings.conf': 'a=1\n', mode: 'fast' },
    });
    await create(`/api/v1/namespaces/${ns()}/pods`, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'app', labels: { tier: 'test' } },
      spec: {
        terminationGracePeriodSeconds: 2,
        containers: [
          {
            name: 'app',
            image: IMAGE,
            command: STANDIN_COMMAND,
            args: ['--http-ip', '$(POD_IP)', '--http-port', '2113'],
            env: [
              { name: 'POD_IP', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } },
              { name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
              { name: 'POD_NAMESPACE', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } },
              { name: 'POD_MODE', valueFrom: { configMapKeyRef: { name: 'cfg', key: 'mode' } } },
              { name: 'POD_USER', valueFrom: { secretKeyRef: { name: 'creds', key: 'user' } } },
              { name: 'POD_GREETING', value: 'hello $(POD_NAME)' },
            ],
            volumeMounts: [
              { name: 'creds', mountPath: '/etc/eventdb-test/creds', readOnly: true },
              { name: 'cfg', mountPath: '/etc/eventdb-test/cfg' },
              { name: 'podinfo', mountPath: '/etc/eventdb-test/podinfo' },
            ],
            readinessProbe: { tcpSocket: { port: 2113 }, periodSeconds: 1 },
          },
        ],
        volumes: [
          { name: 'creds', secret: { secretName: 'creds' } },
          { name: 'cfg', configMap: { name: 'cfg', items: [{ key: 'settings.conf', path: 'conf/settings.conf' }] } },
          { name: 'podinfo', downwardAPI: { items: [{ path: 'labels', fieldRef: { fieldPath: 'metadata.labels' } }] } },
        ],
      },
    });
    const pod = await waitPodReady(ns(), 'app', 60_000).catch(async (err: unknown) => {
      const p = await getPod(ns(), 'app');
      throw new Error(`${(err as Error).message}\n${JSON.stringify(p?.status)}\n${localLog(p, 'app')}`);
    });
    const ip = pod.status?.podIP ?? '';
    const info = JSON.parse((await httpGet(`http://${ip}:2113/info`)).body) as { env: Record<string, string>; hostname: string };
    expect(info.hostname).toBe('app'); // the pod's hostname (own UTS namespace)
    expect(info.env).toMatchObject({
      POD_IP: ip,
      POD_NAME: 'app',
      POD_NAMESPACE: ns(),
      POD_MODE: 'fast',
      POD_USER: 'admin',
      POD_GREETING: 'hello app',
    });
    const file = async (p: string): Promise<string> => {
      const r = await httpGet(`http://${ip}:2113/fixture/file?path=${encodeURIComponent(p)}`);
      return r.status === 200 ? r.body : `<${r.status}>`;
    };
    expect(await file('/etc/eventdb-test/creds/password')).toBe('first');
    expect(await file('/etc/eventdb-test/cfg/conf/settings.conf')).toBe('a=1\n');
    expect(await file('/etc/eventdb-test/podinfo/labels')).toContain('tier="test"');
    // the host does not see the pod's mounts
    expect(fs.existsSync('/etc/eventdb-test/creds/password')).toBe(false);

    // the kubelet's on-disk layout: ..data symlink to a timestamped payload, keys as symlinks through it
    const uid = pod.metadata?.uid ?? '';
    const volDir = path.join(ctx().stateDir, 'kubelet/pods', `${ns()}_app_${uid}`, 'volumes/creds');
    const before = fs.readlinkSync(path.join(volDir, '..data'));
    expect(fs.readlinkSync(path.join(volDir, 'password'))).toBe('..data/password');

    await api().call('PATCH', `/api/v1/namespaces/${ns()}/secrets/creds`, { data: { password: b64('second') } }, { patch: 'merge' });
    const t0 = Date.now();
    await waitFor('the process to see the new secret', async () => (await file('/etc/eventdb-test/creds/password')) === 'second', 15_000, 200);
    const delay = Date.now() - t0;
    expect(delay).toBeLessThan(10_000);
    const after = fs.readlinkSync(path.join(volDir, '..data'));
    expect(after).not.toBe(before);
    expect(fs.existsSync(path.join(volDir, before))).toBe(false);
  }, 120_000);

  it('binds a PersistentVolumeClaim to a directory that outlives the pod', async () => {
    await create(`/api/v1/namespaces/${ns()}/persistentvolumeclaims`, {
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: { name: 'data' },
      spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
    });
    const podSpec = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'writer' },
      spec: {
        restartPolicy: 'Never',
        containers: [
          {
            name: 'writer',
            image: IMAGE,
            command: ['node', '-e', "require('fs').appendFileSync('/data/runs', process.env.RUN + '\\n'); console.log(require('fs').readFileSync('/data/runs','utf8'))"],
            env: [{ name: 'RUN', value: 'x' }],
            volumeMounts: [{ name: 'data', mountPath: '/data' }],
          },
        ],
        volumes: [{ name: 'data', persistentVolumeClaim: { claimName: 'data' } }],
      },
    };
    await create(`/api/v1/namespaces/${ns()}/pods`, podSpec);
    const done = await waitFor('writer to finish', async () => {
      const p = await getPod(ns(), 'writer');
      return p?.status?.phase === 'Succeeded' || p?.status?.phase === 'Failed' ? p : undefined;
    }, 90_000);
    expect(done.status?.phase, `${JSON.stringify(done.status)}\n${localLog(done, 'writer')}`).toBe('Succeeded');
    const pvc = await api().get<{ status?: { phase?: string }; spec?: { volumeName?: string } }>(
      `/api/v1/namespaces/${ns()}/persistentvolumeclaims/data`,
    );
    expect(pvc?.status?.phase).toBe('Bound');
    await api().call('DELETE', `/api/v1/namespaces/${ns()}/pods/writer`);
    await waitPodGone(ns(), 'writer');
    await create(`/api/v1/namespaces/${ns()}/pods`, podSpec);
    const again = await waitFor('second writer to finish', async () => {
      const p = await getPod(ns(), 'writer');
      return p?.status?.phase === 'Succeeded' || p?.status?.phase === 'Failed' ? p : undefined;
    }, 90_000);
    expect(again.status?.phase).toBe('Succeeded');
    expect(localLog(again, 'writer')).toContain('x\nx\n');
    // the same output through the API server (kubectl logs): apiserver -> local kubelet's /containerLogs
    const logs = await api().call('GET', `/api/v1/namespaces/${ns()}/pods/writer/log?container=writer`);
    expect(logs.text).toContain('x\nx\n');
  }, 240_000);
});
