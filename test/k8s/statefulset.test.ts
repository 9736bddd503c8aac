// Acceptance: a headless Service and a 3-replica StatefulSet of the eventdb image on the cluster.
import { describe, expect, it } from 'vitest';
import type { V1Pod } from '@kubernetes/client-node';
import {
  IMAGE,
  NODE_COMMAND,
  NODE_MODE,
  api,
  containerPid,
  create,
  ctx,
  deleteNamespace,
  createNamespace,
  getPod,
  httpGet,
  localLog,
  podReady,
  processAlive,
  runScriptPod,
  waitFor,
  waitPodGone,
  waitPodReady,
} from './helpers.js';

describe.skipIf(!!ctx().skipReason)('statefulset of eventdb nodes', () => {
  it(`runs 3 ${NODE_MODE} nodes that reach each other by DNS, scales to 1, goes away with the namespace`, async () => {
    const ns = await createNamespace('sts');
    let nsDeleted = false;
    try {
      await create(`/api/v1/namespaces/${ns}/services`, {
        apiVersion: 'v1',
        kind: 'Service',
        metadata: { name: 'eventdb' },
        spec: {
          clusterIP: 'None',
          publishNotReadyAddresses: true,
          selector: { app: 'eventdb' },
          ports: [{ name: 'http', port: 2113, targetPort: 2113 }],
        },
      });
      await create(`/apis/apps/v1/namespaces/${ns}/statefulsets`, {
        apiVersion: 'apps/v1',
        kind: 'StatefulSet',
        metadata: { name: 'eventdb' },
        spec: {
          serviceName: 'eventdb',
          replicas: 3,
          podManagementPolicy: 'Parallel',
          selector: { matchLabels: { app: 'eventdb' } },
          template: {
            metadata: { labels: { app: 'eventdb' } },
            spec: {
              terminationGracePeriodSeconds: 10,
              containers: [
                {
                  name: 'eventdb',
                  image: IMAGE,
                  ...(NODE_COMMAND ? { command: NODE_COMMAND } : {}),
                  args: ['--insecure', '--mem-db', '--http-ip', '$(POD_IP)', '--http-port', '2113'],
                  env: [
                    { name: 'POD_IP', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } },
                    { name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
                    { name: 'POD_NAMESPACE', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } },
                  ],
                  ports: [{ name: 'http', containerPort: 2113 }],
                  readinessProbe: { httpGet: { path: '/health/live', port: 'http' }, periodSeconds: 1, failureThreshold: 3 },
                  livenessProbe: { httpGet: { path: '/health/live', port: 2113 }, periodSeconds: 5, failureThreshold: 6, initialDelaySeconds: 5 },
                },
              ],
            },
          },
        },
      });

      const names = ['eventdb-0', 'eventdb-1', 'eventdb-2'];
      const pods: V1Pod[] = [];
      for (const n of names) {
        const p = await waitPodReady(ns, n, 120_000).catch(async (err: unknown) => {
          const cur = await getPod(ns, n);
          throw new Error(`${(err as Error).message}\nstatus: ${JSON.stringify(cur?.status)}\nlog:\n${localLog(cur, 'eventdb')}`);
        });
        pods.push(p);
      }
      const ips = pods.map((p) => p.status?.podIP ?? '');
      expect(new Set(ips).size).toBe(3);

      if (ctx().local) {
        // every pod has its own loopback address and answers /info there
        for (const ip of ips) {
          expect(ip).toMatch(/^127\.0\.\d+\.\d+$/);
          const res = await httpGet(`http://${ip}:2113/info`);
          expect(res.status).toBe(200);
          if (NODE_MODE === 'real') expect(JSON.parse(res.body)).toHaveProperty('esVersion');
        }
        // the DNS names Kubernetes gives the pods resolve on this machine too (/etc/hosts)
        const viaDns = await httpGet(`http://eventdb-2.eventdb.${ns}.svc.cluster.local:2113/info`);
        expect(viaDns.status).toBe(200);
      }

      // one node reaches another by its DNS name, from inside the cluster: short and fully qualified forms
      const check = await runScriptPod(
        ns,
        'dns-check',
        `const urls = JSON.parse(process.env.URLS);
         (async () => {
           // the headless Service name resolves to every selected pod
           const all = await require('node:dns').promises.lookup('eventdb', { all: true });
           if (all.length !== 3) throw new Error('eventdb resolves to ' + JSON.stringify(all));
           const a = await require('node:dns').promises.resolve4('eventdb.${ns}.svc.cluster.local');
           if (a.length !== 3) throw new Error('resolve4 gives ' + JSON.stringify(a));
           for (const u of urls) {
             const r = await fetch(u, { signal: AbortSignal.timeout(5000) });
             if (r.status !== 200) throw new Error(u + ' -> ' + r.status);
             console.log(u, '->', (await r.text()).slice(0, 200));
           }
         })().then(() => process.exit(0), (e) => { console.error(String(e), String(e && e.cause)); process.exit(1); });`,
        {
          URLS: JSON.stringify([
            // every node answers /info on its pod IP (from inside the cluster: works on any cluster)
            ...ips.map((ip) => `http://${ip}:2113/info`),
            'http://eventdb-1.eventdb:2113/info',
            `http://eventdb-0.eventdb.${ns}:2113/info`,
            `http://eventdb-2.eventdb.${ns}.svc:2113/info`,
            `http://eventdb-0.eventdb.${ns}.svc.cluster.local:2113/info`,
          ]),
        },
      );
      expect(check.status?.phase, localLog(check, 'script')).toBe('Succeeded');
      if (NODE_MODE === 'standin' && ctx().local) {
        // and from the node process itself
        const r = await httpGet(`http://${ips[0] ?? ''}:2113/fixture/fetch?url=${encodeURIComponent('http://eventdb-1.eventdb:2113/info')}`);
        expect(r.status, r.body).toBe(200);
      }

      // scale to 1: two processes stop, their pods go away
      const pids = pods.map((p) => containerPid(p));
      await api().call('PATCH', `/apis/apps/v1/namespaces/${ns}/statefulsets/eventdb`, { spec: { replicas: 1 } }, { patch: 'merge' });
      await waitPodGone(ns, 'eventdb-2', 90_000);
      await waitPodGone(ns, 'eventdb-1', 90_000);
      if (ctx().local) {
        expect(pids.every((p) => typeof p === 'number')).toBe(true);
        expect(processAlive(pids[1] ?? -1)).toBe(false);
        expect(processAlive(pids[2] ?? -1)).toBe(false);
        expect(processAlive(pids[0] ?? -1)).toBe(true);
      }
      expect(podReady(await getPod(ns, 'eventdb-0'))).toBe(true);

      // deleting the namespace stops every process and the namespace disappears
      await deleteNamespace(ns, 150_000);
      nsDeleted = true;
      if (ctx().local) {
        await waitFor('eventdb-0 process to exit', async () => !processAlive(pids[0] ?? -1), 10_000);
      }
    } finally {
      if (!nsDeleted) await deleteNamespace(ns).catch(() => undefined);
    }
  }, 420_000);
});
