// A 3-node EventDB cluster as a StatefulSet on CSI volumes, found through gossip seeds that are the pods' DNS names
// (orders-0.orders-headless:2113, ...): one leader and two followers that advertise their pod IPs; writes sent to the
// Service land on every node; the leader's pod deleted, the other two elect a new leader, the StatefulSet brings the
// pod back on its own volume and it rejoins as a follower with every acknowledged event.
import { describe, expect, it } from 'vitest';
import type { V1Pod } from '@kubernetes/client-node';
import { NODE_UID, api, create, createNodeServices, createNodeStatefulSet, ctx, execIn, image, nodeContainer, useNamespace, waitFor, waitPodReady } from './helpers.js';

const NAMES = ['orders-0', 'orders-1', 'orders-2'];
const SEEDS = NAMES.map((n) => `${n}.orders-headless:2113`).join(',');

interface Member {
  httpEndPointIp: string;
  httpEndPointPort: number;
  state: string;
  isAlive: boolean;
}

/** Runs `script` (an async function body; its return value is printed as JSON) with node inside the client pod. */
function inCluster<T>(ns: string, script: string): T {
  const wrapped = `const auth = 'Basic ' + Buffer.from('admin:changeit').toString('base64');
    const get = async (url) => { const r = await fetch(url, { headers: { authorization: auth, accept: 'application/json' }, signal: AbortSignal.timeout(5000) }); return { status: r.status, body: r.status === 200 ? await r.json() : await r.text() }; };
    (async () => { ${script} })().then((v) => console.log(JSON.stringify(v)), (e) => { console.error(String(e), String(e && e.cause)); process.exit(1); });`;
  const out = execIn(ns, 'client', ['node', '-e', wrapped]).trim().split('\n').pop() ?? 'null';
  return JSON.parse(out) as T;
}

/** Each node's view: its own state (/info) and the alive members of its gossip; nodes that do not answer are left out. */
function views(ns: string): Record<string, { state: string; alive: Member[] }> {
  return inCluster(ns, `const out = {};
    for (const n of ${JSON.stringify(NAMES)}) {
      try {
        const info = await get('http://' + n + '.orders-headless:2113/info');
        const gossip = await get('http://' + n + '.orders-headless:2113/gossip');
        out[n] = { state: info.body.state, alive: gossip.body.members.filter((m) => m.isAlive) };
      } catch {}
    }
    return out;`);
}

/** The numbers of the events in stream `orders` as each node reads them. */
function readsOnEachNode(ns: string): Record<string, number[] | string> {
  return inCluster(ns, `const out = {};
    for (const n of ${JSON.stringify(NAMES)}) {
      try {
        const r = await get('http://' + n + '.orders-headless:2113/streams/orders/0/forward/1000?embed=body');
        out[n] = r.status === 200 ? r.body.entries.map((e) => JSON.parse(e.data).n).sort((a, b) => a - b) : 'status ' + r.status;
      } catch (e) { out[n] = String(e); }
    }
    return out;`);
}

/** Appends events n = from..to-1 one request each through the Service `orders` (any node; followers forward). */
function appendThroughService(ns: string, from: number, to: number, stream = 'orders'): number[] {
  return inCluster(ns, `const statuses = [];
    for (let n = ${from}; n < ${to}; n++) {
      const r = await fetch('http://orders:2113/streams/${stream}', {
        method: 'POST',
        headers: { authorization: auth, 'content-type': 'application/vnd.eventstore.events+json' },
        body: JSON.stringify([{ eventId: require('crypto').randomUUID(), eventType: 'placed', data: { n } }]),
        signal: AbortSignal.timeout(10000),
      });
      statuses.push(r.status);
    }
    return statuses;`);
}

const range = (from: number, to: number): number[] => Array.from({ length: to - from }, (_, i) => from + i);

describe.skipIf(!!ctx().skipReason)('an EventDB cluster on a StatefulSet', () => {
  const ns = useNamespace('cluster');

  it('forms through pod DNS seeds, replicates writes from the Service, survives losing its leader', async () => {
    await createNodeServices(ns(), 'orders');
    await createNodeStatefulSet(
      ns(),
      'orders',
      {
        terminationGracePeriodSeconds: 30,
        securityContext: { fsGroup: NODE_UID },
        containers: [
          nodeContainer(
            ['--insecure', '--cluster-size', '3', '--gossip-seed', SEEDS, '--gossip-interval-ms', '500', '--gossip-timeout-ms', '1000'],
            {
              volumeMounts: [
                { name: 'data', mountPath: '/var/lib/eventdb/db', subPath: 'db' },
                { name: 'data', mountPath: '/var/lib/eventdb/index', subPath: 'index' },
              ],
            },
          ),
        ],
      },
      {
        volumeClaimTemplates: [
          {
            metadata: { name: 'data' },
            spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
          },
        ],
      },
    );
    // a client inside the cluster (the node image's node runs the requests)
    await create(`/api/v1/namespaces/${ns()}/pods`, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'client' },
      spec: {
        terminationGracePeriodSeconds: 0,
        containers: [{ name: 'client', image: image(), imagePullPolicy: 'IfNotPresent', command: ['node', '-e', 'setInterval(() => {}, 1 << 30)'] }],
      },
    });
    const pods: V1Pod[] = [];
    for (const n of NAMES) pods.push(await waitPodReady(ns(), n, 240_000));
    await waitPodReady(ns(), 'client');
    const ipOf = new Map(pods.map((p) => [p.metadata?.name ?? '', p.status?.podIP ?? '']));

    // one leader, two followers; every node sees the three, on their pod IPs
    const formed = await waitFor('one leader and two followers, each seeing all three', async () => {
      const v = views(ns());
      const states = NAMES.map((n) => v[n]?.state).sort();
      // every node sees all three, and sees their settled roles (gossip spreads a new role a
      // round or two after the node took it)
      const complete = NAMES.every(
        (n) =>
          v[n]?.alive.length === 3 &&
          JSON.stringify(v[n]!.alive.map((m) => m.state).sort()) === JSON.stringify(['Follower', 'Follower', 'Leader']),
      );
      return complete && JSON.stringify(states) === JSON.stringify(['follower', 'follower', 'leader']) ? v : undefined;
    }, 120_000, 2000);
    for (const n of NAMES) {
      expect(formed[n]!.alive.map((m) => m.httpEndPointIp).sort()).toEqual([...ipOf.values()].sort());
      expect(formed[n]!.alive.map((m) => m.state).sort()).toEqual(['Follower', 'Follower', 'Leader']);
    }
    const leader = NAMES.find((n) => formed[n]!.state === 'leader')!;

    // Every node takes writes once the leader's default users have reached it (until then a node
    // answers 503, not 401): probe on another stream through each node in turn.
    await waitFor('writes accepted through the Service', async () => {
      const statuses = appendThroughService(ns(), 0, 6, 'probe');
      return statuses.every((s) => s === 201) ? statuses : undefined;
    }, 60_000, 1000);
    // writes through the Service (kube-proxy picks any node; a follower forwards to the leader), read on every node
    expect(appendThroughService(ns(), 0, 20)).toEqual(Array(20).fill(201));
    await waitFor('the 20 events on every node', async () => {
      const r = readsOnEachNode(ns());
      return NAMES.every((n) => JSON.stringify(r[n]) === JSON.stringify(range(0, 20))) ? r : undefined;
    }, 60_000, 1000);

    // the leader's pod goes (SIGTERM): the two others elect a leader and take writes
    await api().call('DELETE', `/api/v1/namespaces/${ns()}/pods/${leader}`);
    const others = NAMES.filter((n) => n !== leader);
    const newLeader = await waitFor('a new leader among the other two', async () => {
      const v = views(ns());
      const l = others.filter((n) => v[n]?.state === 'leader');
      return l.length === 1 ? l[0] : undefined;
    }, 120_000, 1000);
    expect(others).toContain(newLeader);
    await waitFor('writes accepted after the failover', async () => {
      const statuses = appendThroughService(ns(), 20, 21);
      return statuses[0] === 201;
    }, 60_000, 2000);
    expect(appendThroughService(ns(), 21, 30)).toEqual(Array(9).fill(201));

    // the StatefulSet brings the pod back on its volume; it rejoins as a follower and holds every event
    await waitFor(`${leader} back (a new pod)`, async () => {
      const p = await api().get<V1Pod>(`/api/v1/namespaces/${ns()}/pods/${leader}`);
      return p?.metadata?.uid !== pods.find((q) => q.metadata?.name === leader)?.metadata?.uid && p?.status?.phase === 'Running';
    }, 180_000, 1000);
    await waitPodReady(ns(), leader, 180_000);
    await waitFor('three alive members again, one leader', async () => {
      const v = views(ns());
      const states = NAMES.map((n) => v[n]?.state).sort();
      return NAMES.every((n) => v[n]?.alive.length === 3) && JSON.stringify(states) === JSON.stringify(['follower', 'follower', 'leader']);
    }, 180_000, 2000);
    const all = await waitFor('the 30 events on every node, the returned one included', async () => {
      const r = readsOnEachNode(ns());
      return NAMES.every((n) => JSON.stringify(r[n]) === JSON.stringify(range(0, 30))) ? r : undefined;
    }, 90_000, 1000);
    expect(all[leader]).toEqual(range(0, 30));
  }, 900_000);
});
