/**
 * The shipped Grafana dashboards' node panels, evaluated by a real Prometheus (built from Go
 * modules, test/k8s/build.sh prometheus) scraping a real node process every second on loopback,
 * with the labels the chart's PodMonitor adds. A node alone without TLS has no replicas, no
 * gossip and no certificate: the panels that need those are listed and left out here (the kind
 * test of a cluster covers them).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { freePort, tempDir } from '../support/node-process.js';
import { promtoolPath } from '../support/promtool.js';
import { useNode } from '../support/use-node.js';

const ROOT = resolve(import.meta.dirname, '../..');
const dir = tempDir('eventdb-dashboards-');
afterAll(() => dir.remove());
const running = useNode({ memDb: false, args: ['--db', `${dir.path}/db`, '--index', `${dir.path}/index`] });

/** Panels a node alone without TLS cannot answer. */
const NEEDS_A_CLUSTER_OR_TLS = new Set(['Voting members alive', 'Epoch', 'Replication lag (bytes)', 'Replication lag (seconds)', 'Certificate expiry']);

let prometheus: ChildProcess | undefined;
let api = '';
beforeAll(async () => {
  const port = await freePort();
  const url = new URL(running.node.baseUrl);
  writeFileSync(join(dir.path, 'prometheus.yml'), [
    'global: { scrape_interval: 1s, evaluation_interval: 1s }',
    'scrape_configs:',
    '  - job_name: eventdb-nodes',
    '    basic_auth: { username: admin, password: changeit }',
    '    static_configs:',
    `      - targets: ['${url.host}']`,
    '        labels: { eventdb_component: node, namespace: shop, eventdb_cluster: orders, pod: orders-0 }',
    '',
  ].join('\n'));
  prometheus = spawn(join(dirname(promtoolPath()), 'prometheus'), [
    `--config.file=${join(dir.path, 'prometheus.yml')}`, `--storage.tsdb.path=${join(dir.path, 'tsdb')}`,
    `--web.listen-address=127.0.0.1:${port}`,
  ], { stdio: 'ignore' });
  api = `http://127.0.0.1:${port}/api/v1`;
  // appends and reads for the rate panels, then enough scrapes for rate() over them
  for (let i = 0; i < 20; i++) {
    await running.http('POST', `/streams/dash-${i % 3}`, {
      headers: { 'content-type': 'application/vnd.eventstore.events+json' },
      body: JSON.stringify([{ eventId: randomUUID(), eventType: 'e', data: { i } }]),
    });
    await running.http('GET', `/streams/dash-${i % 3}/0`, { headers: { accept: 'application/json' } });
  }
  const untilMs = Date.now() + 60_000;
  while (Date.now() < untilMs) {
    const up = await fetch(`${api}/query?query=${encodeURIComponent('count_over_time(up{pod="orders-0"}[1m])')}`).then((r) => r.json()).catch(() => undefined) as { data?: { result?: { value: [number, string] }[] } } | undefined;
    if (Number(up?.data?.result?.[0]?.value[1] ?? 0) >= 5) break;
    await new Promise((r) => setTimeout(r, 500));
  }
}, 120_000);
afterAll(async () => {
  if (prometheus === undefined || prometheus.exitCode !== null) return;
  const exited = new Promise((r) => prometheus?.once('exit', r));
  prometheus.kill('SIGTERM');
  await exited;
});

async function query(expr: string): Promise<unknown[]> {
  const body = await fetch(`${api}/query?query=${encodeURIComponent(expr)}`).then((r) => r.json()) as { status: string; data: { result: unknown[] } };
  expect(body.status).toBe('success');
  return body.data.result;
}

describe.each(['cluster-overview', 'node-detail'])('dashboard %s against a real Prometheus', (name) => {
  const dashboard = JSON.parse(readFileSync(join(ROOT, `charts/eventdb-operator/files/dashboards/eventdb-${name}.json`), 'utf8')) as {
    panels: { title: string; targets: { expr: string }[] }[];
  };
  const panels = dashboard.panels.filter((panel) => !NEEDS_A_CLUSTER_OR_TLS.has(panel.title));
  it.each(panels.map((panel) => [panel.title, panel] as const))('panel %s returns data', async (_title, panel) => {
    for (const target of panel.targets) {
      const expr = target.expr.replaceAll('$namespace', 'shop').replaceAll('$cluster', 'orders').replaceAll('$pod', 'orders-0');
      expect((await query(expr)).length, expr).toBeGreaterThan(0);
    }
  });
});
