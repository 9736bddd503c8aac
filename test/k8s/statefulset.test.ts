// A StatefulSet of the node image with nothing but `--insecure --mem-db`: Ready (its probe goes to the pod IP, so
// the image must listen on the pod's interfaces), answering on pod IPs, reaching each other through cluster DNS,
// behind a Service whose EndpointSlices list the ready pods; scaled down, its pods go.
import { describe, expect, it } from 'vitest';
import type { V1Pod } from '@kubernetes/client-node';
import { api, createNodeServices, createNodeStatefulSet, ctx, getPod, nodeContainer, podReady, runScriptPod, useNamespace, waitFor, waitPodGone, waitPodReady } from './helpers.js';

interface EndpointSlice {
  addressType: string;
  endpoints?: Array<{ addresses: string[]; conditions?: { ready?: boolean }; targetRef?: { name?: string } }>;
  ports?: Array<{ name?: string; port?: number }>;
}

describe.skipIf(!!ctx().skipReason)('statefulset of eventdb nodes', () => {
  const ns = useNamespace('sts');

  it('runs 3 nodes that answer on their pod IPs, find each other by DNS, and sit behind a Service', async () => {
    await createNodeServices(ns(), 'eventdb');
    await createNodeStatefulSet(ns(), 'eventdb', {
      terminationGracePeriodSeconds: 10,
      containers: [nodeContainer(['--insecure', '--mem-db'])],
    });

    const names = ['eventdb-0', 'eventdb-1', 'eventdb-2'];
    const pods: V1Pod[] = [];
    for (const n of names) pods.push(await waitPodReady(ns(), n, 180_000));
    const ips = pods.map((p) => p.status?.podIP ?? '');
    expect(new Set(ips).size).toBe(3);
    // real containers: each pod has its own address on the pod network, not the host's loopback
    for (const ip of ips) expect(ip).not.toMatch(/^127\./);

    // the Service's EndpointSlices list the three ready pods on port 2113
    const slices = await waitFor('EndpointSlices with 3 ready endpoints', async () => {
      const list = await api().get<{ items: EndpointSlice[] }>(
        `/apis/discovery.k8s.io/v1/namespaces/${ns()}/endpointslices?labelSelector=kubernetes.io/service-name=eventdb`,
      );
      const ready = (list?.items ?? []).flatMap((s) => (s.endpoints ?? []).filter((e) => e.conditions?.ready));
      return ready.length === 3 ? list : undefined;
    }, 60_000);
    const endpoints = slices.items.flatMap((s) => s.endpoints ?? []);
    expect(endpoints.flatMap((e) => e.addresses).sort()).toEqual([...ips].sort());
    expect(endpoints.map((e) => e.targetRef?.name).sort()).toEqual(names);
    expect(slices.items[0]?.ports?.[0]?.port).toBe(2113);

    // from inside the cluster: every node on its pod IP, each by its stable DNS name, and the Service
    const { pod: check, log } = await runScriptPod(
      ns(),
      'dns-check',
      `const dns = require('node:dns').promises;
       (async () => {
         const all = await dns.lookup('eventdb-headless', { all: true });
         if (all.length !== 3) throw new Error('eventdb-headless resolves to ' + JSON.stringify(all));
         const svc = await dns.resolve4('eventdb.${ns()}.svc.cluster.local');
         console.log('service address', svc[0]);
         for (const u of JSON.parse(process.env.URLS)) {
           const r = await fetch(u, { signal: AbortSignal.timeout(5000) });
           const body = await r.json();
           if (r.status !== 200 || typeof body.esVersion !== 'string') throw new Error(u + ' -> ' + r.status + ' ' + JSON.stringify(body));
           console.log('ok', u);
         }
       })().then(() => process.exit(0), (e) => { console.error(String(e), String(e && e.cause)); process.exit(1); });`,
      {
        URLS: JSON.stringify([
          ...ips.map((ip) => `http://${ip}:2113/info`),
          'http://eventdb-1.eventdb-headless:2113/info',
          `http://eventdb-0.eventdb-headless.${ns()}:2113/info`,
          `http://eventdb-2.eventdb-headless.${ns()}.svc.cluster.local:2113/info`,
          'http://eventdb:2113/info',
          `http://eventdb.${ns()}.svc:2113/info`,
        ]),
      },
    );
    expect(check.status?.phase, log).toBe('Succeeded');
    expect(log.match(/^ok /gm)).toHaveLength(8);

    // scale to 1: two pods go, the Service keeps one endpoint
    await api().call('PATCH', `/apis/apps/v1/namespaces/${ns()}/statefulsets/eventdb`, { spec: { replicas: 1 } }, { patch: 'merge' });
    await waitPodGone(ns(), 'eventdb-2', 90_000);
    await waitPodGone(ns(), 'eventdb-1', 90_000);
    expect(podReady(await getPod(ns(), 'eventdb-0'))).toBe(true);
    await waitFor('one endpoint left', async () => {
      const list = await api().get<{ items: EndpointSlice[] }>(
        `/apis/discovery.k8s.io/v1/namespaces/${ns()}/endpointslices?labelSelector=kubernetes.io/service-name=eventdb`,
      );
      return (list?.items ?? []).flatMap((s) => s.endpoints ?? []).length === 1;
    }, 60_000);
  }, 600_000);
});
