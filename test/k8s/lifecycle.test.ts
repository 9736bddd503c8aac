// Local kubelet: unsupported images, restarts with back-off, graceful deletion (SIGTERM, grace, SIGKILL).
import { describe, expect, it } from 'vitest';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  IMAGE,
  api,
  containerPid,
  create,
  ctx,
  getPod,
  processAlive,
  useNamespace,
  waitFor,
  waitPodGone,
  waitPodPhase,
  waitPodReady,
} from './helpers.js';

// These tests check the local kubelet itself; on another cluster they do not apply.
describe.skipIf(!!ctx().skipReason || !ctx().local)('local kubelet pod lifecycle', () => {
  const ns = useNamespace('life');

  it('marks pods of other images failed with a clear reason', async () => {
    await create(`/api/v1/namespaces/${ns()}/pods`, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'web' },
      spec: { containers: [{ name: 'web', image: 'nginx:1.27' }] },
    });
    const p = await waitPodPhase(ns(), 'web', ['Failed'], 30_000);
    expect(p.status?.reason).toBe('UnsupportedImage');
    expect(p.status?.message).toContain('nginx:1.27');
  }, 60_000);

  it("gives each container a private writable layer over the image's /app (the repository stays clean)", async () => {
    const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
    const name = `written-by-pod-${ns()}.txt`;
    await create(`/api/v1/namespaces/${ns()}/pods`, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'writer' },
      spec: {
        restartPolicy: 'Never',
        containers: [
          {
            name: 'writer',
            image: IMAGE,
            // relative to the workdir /app; must be readable back inside the container
            command: ['node', '-e', `const fs = require('fs'); fs.writeFileSync('${name}', 'x'); if (fs.readFileSync('/app/${name}', 'utf8') !== 'x') process.exit(2); if (!fs.existsSync('/app/package.json')) process.exit(3);`],
          },
        ],
      },
    });
    const p = await waitPodPhase(ns(), 'writer', ['Succeeded', 'Failed'], 30_000);
    expect(p.status?.phase).toBe('Succeeded');
    expect(fs.existsSync(path.join(repo, name))).toBe(false);
  }, 60_000);

  it('runs init containers to completion first; exec probes run inside the container', async () => {
    await create(`/api/v1/namespaces/${ns()}/pods`, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'init' },
      spec: {
        terminationGracePeriodSeconds: 1,
        initContainers: [
          {
            name: 'prepare',
            image: IMAGE,
            command: ['node', '-e', "require('fs').writeFileSync('/work/ready', 'yes')"],
            volumeMounts: [{ name: 'work', mountPath: '/work' }],
          },
        ],
        containers: [
          {
            name: 'main',
            image: IMAGE,
            command: ['node', '-e', 'setInterval(() => {}, 1000)'],
            volumeMounts: [{ name: 'work', mountPath: '/work' }],
            readinessProbe: {
              exec: { command: ['node', '-e', "process.exit(require('fs').readFileSync('/work/ready', 'utf8') === 'yes' ? 0 : 1)"] },
              periodSeconds: 1,
            },
          },
        ],
        volumes: [{ name: 'work', emptyDir: {} }],
      },
    });
    const p = await waitPodReady(ns(), 'init', 45_000);
    expect(p.status?.initContainerStatuses?.[0]?.state?.terminated?.exitCode).toBe(0);
    expect(p.status?.conditions?.find((c) => c.type === 'Initialized')?.status).toBe('True');

    await create(`/api/v1/namespaces/${ns()}/pods`, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'init-fails' },
      spec: {
        restartPolicy: 'Never',
        initContainers: [{ name: 'bad', image: IMAGE, command: ['node', '-e', 'process.exit(7)'] }],
        containers: [{ name: 'main', image: IMAGE, command: ['node', '-e', 'setInterval(() => {}, 1000)'] }],
      },
    });
    const failed = await waitPodPhase(ns(), 'init-fails', ['Failed'], 30_000);
    expect(failed.status?.initContainerStatuses?.[0]?.state?.terminated?.exitCode).toBe(7);
    expect(failed.status?.containerStatuses?.[0]?.state?.running).toBeUndefined();
  }, 90_000);

  it('runs the preStop hook before SIGTERM on deletion', async () => {
    await create(`/api/v1/namespaces/${ns()}/pods`, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'prestop' },
      spec: {
        terminationGracePeriodSeconds: 20,
        containers: [
          {
            name: 'app',
            image: IMAGE,
            command: ['node', '-e', "process.on('SIGTERM', () => process.exit(0)); setInterval(() => {}, 1000)"],
            lifecycle: { preStop: { exec: { command: ['node', '-e', 'setTimeout(() => {}, 2000)'] } } },
          },
        ],
      },
    });
    const running = await waitFor('prestop running', async () => {
      const cur = await getPod(ns(), 'prestop');
      return cur?.status?.containerStatuses?.[0]?.state?.running ? cur : undefined;
    }, 30_000);
    const pid = containerPid(running) ?? -1;
    const t0 = Date.now();
    await api().call('DELETE', `/api/v1/namespaces/${ns()}/pods/prestop`);
    await waitPodGone(ns(), 'prestop', 30_000);
    const elapsed = Date.now() - t0;
    expect(elapsed).toBeGreaterThanOrEqual(2000); // the hook ran (2 s) before the process got SIGTERM
    expect(elapsed).toBeLessThan(15_000); // and the process then stopped on SIGTERM, not by SIGKILL at 20 s
    expect(processAlive(pid)).toBe(false);
  }, 60_000);

  it('restarts a crashing container with back-off', async () => {
    await create(`/api/v1/namespaces/${ns()}/pods`, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'crash' },
      spec: {
        restartPolicy: 'Always',
        terminationGracePeriodSeconds: 1,
        containers: [{ name: 'crash', image: `registry.example/team/${IMAGE}`, command: ['node', '-e', 'process.exit(3)'] }],
      },
    });
    const p = await waitFor('two restarts', async () => {
      const cur = await getPod(ns(), 'crash');
      const st = cur?.status?.containerStatuses?.[0];
      return (st?.restartCount ?? 0) >= 2 ? st : undefined;
    }, 60_000);
    expect(p.lastState?.terminated?.exitCode).toBe(3);
    const waiting = await waitFor('CrashLoopBackOff', async () => {
      const st = (await getPod(ns(), 'crash'))?.status?.containerStatuses?.[0];
      return st?.state?.waiting?.reason === 'CrashLoopBackOff' ? st : undefined;
    }, 30_000, 100);
    expect(waiting.state?.waiting?.message).toContain('back-off');
  }, 120_000);

  it('restarts a container whose liveness probe fails', async () => {
    await create(`/api/v1/namespaces/${ns()}/pods`, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'unlive' },
      spec: {
        terminationGracePeriodSeconds: 2,
        containers: [
          {
            name: 'unlive',
            image: IMAGE,
            command: ['node', '/app/test/k8s/fixtures/standin-node.mjs'],
            args: ['--http-ip', '$(POD_IP)', '--http-port', '2113'],
            env: [{ name: 'POD_IP', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } }],
            readinessProbe: { tcpSocket: { port: 2113 }, periodSeconds: 1 },
            livenessProbe: { httpGet: { path: '/no-such-path', port: 2113 }, periodSeconds: 1, failureThreshold: 2 },
          },
        ],
      },
    });
    const st = await waitFor('a liveness restart', async () => {
      const s = (await getPod(ns(), 'unlive'))?.status?.containerStatuses?.[0];
      return (s?.restartCount ?? 0) >= 1 ? s : undefined;
    }, 45_000);
    expect(st.lastState?.terminated).toBeDefined();
  }, 90_000);

  it('on deletion sends SIGTERM, waits the grace period, then SIGKILLs before the pod goes', async () => {
    await create(`/api/v1/namespaces/${ns()}/pods`, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'stubborn' },
      spec: {
        terminationGracePeriodSeconds: 3,
        containers: [
          {
            name: 'stubborn',
            image: IMAGE,
            command: ['node', '-e', "process.on('SIGTERM', () => console.log('got SIGTERM, ignoring')); setInterval(() => {}, 1000)"],
          },
        ],
      },
    });
    const running = await waitFor('stubborn running', async () => {
      const cur = await getPod(ns(), 'stubborn');
      return cur?.status?.containerStatuses?.[0]?.state?.running ? cur : undefined;
    }, 30_000);
    const pid = containerPid(running) ?? -1;
    await new Promise((r) => setTimeout(r, 500)); // let it install its SIGTERM handler
    expect(processAlive(pid)).toBe(true);
    const t0 = Date.now();
    await api().call('DELETE', `/api/v1/namespaces/${ns()}/pods/stubborn`);
    await new Promise((r) => setTimeout(r, 1500));
    expect(processAlive(pid)).toBe(true); // still in its grace period
    expect(await getPod(ns(), 'stubborn')).toBeDefined();
    await waitPodGone(ns(), 'stubborn', 30_000);
    const elapsed = Date.now() - t0;
    expect(elapsed).toBeGreaterThanOrEqual(2900);
    expect(processAlive(pid)).toBe(false);
  }, 90_000);
});
