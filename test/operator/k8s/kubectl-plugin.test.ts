// `kubectl eventdb` against a three-node EventDBCluster on kind, the operator installed from the
// chart. The plugin runs as users run it: kubectl finds operator/bin/kubectl-eventdb on PATH and
// the plugin uses the kubeconfig kubectl was given (KUBECONFIG). Each verb is judged by what it
// prints, its exit code and what changed in the cluster: status, under a writer, lists every node
// with the right roles and a lag in bytes and seconds; status --watch redraws (the leader's writer
// checkpoint moving with appends) until Ctrl-C; logs --follow streams every node's scavenge lines
// as the cycle runs, none twice; append then read returns the events; backup --wait ends with a Completed
// Backup; report's archive holds the expected files and not one Secret value; logs interleave
// all nodes by time; restart of a follower brings it back; restart of the cluster recreates the
// followers first and the leader last; scavenge --wait runs one cycle, followers
// first and the leader last; the day-2 verbs the operator lacks
// exit 1 saying so; a bad option exits 2 naming it.
import { execFile, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readTar } from '../../../operator/src/plugin/tar.js';
import { createNamespace, ctx, deleteNamespace } from '../../k8s/helpers.js';
import { REPO, applyCluster, clusterPods, getBackup, getCluster, installCrds, secretValue, startOperator, waitClusterReady, type OperatorUnderTest } from './operator-support.js';

const SPEC = { replicas: 3, storage: { data: { size: '256Mi' } }, resources: { requests: { cpu: '20m', memory: '128Mi' } } };

interface Run {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** `kubectl eventdb <args>`, the plugin found on PATH by kubectl. */
function plugin(args: string[], timeoutMs = 120_000, record = true): Promise<Run> {
  const env = {
    ...process.env,
    KUBECONFIG: ctx().kubeconfig,
    PATH: `${path.join(REPO, 'operator/bin')}${path.delimiter}${path.dirname(process.execPath)}${path.delimiter}${process.env['PATH'] ?? ''}`,
    NODE: process.execPath,
  };
  return new Promise((resolve) => {
    execFile(ctx().kubectl, ['eventdb', ...args], { env, timeout: timeoutMs, maxBuffer: 64 * 1024 * 1024 }, (err, stdout, stderr) => {
      const code = err === null ? 0 : typeof (err as { code?: unknown }).code === 'number' ? ((err as { code: number }).code) : -1;
      if (record) transcript(args, { code, stdout, stderr });
      resolve({ code, stdout, stderr });
    });
  });
}

interface Running {
  readonly out: () => string;
  readonly err: () => string;
  /** SIGINT (as Ctrl-C), then the exit code; SIGKILL when it does not end within 20 s. */
  stop(): Promise<number>;
}

/** `kubectl eventdb <args>` left running (--watch, --follow); kubectl execs the plugin, so the signal reaches it. */
function startPlugin(args: string[]): Running {
  const env = {
    ...process.env,
    KUBECONFIG: ctx().kubeconfig,
    PATH: `${path.join(REPO, 'operator/bin')}${path.delimiter}${path.dirname(process.execPath)}${path.delimiter}${process.env['PATH'] ?? ''}`,
    NODE: process.execPath,
  };
  const child = spawn(ctx().kubectl, ['eventdb', ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString('utf8')));
  child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString('utf8')));
  const exited = new Promise<number>((resolve) => child.on('exit', (code, signal) => resolve(code ?? (signal === null ? -1 : 128))));
  return {
    out: () => out,
    err: () => err,
    async stop() {
      child.kill('SIGINT');
      const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
      const code = await exited;
      clearTimeout(timer);
      return code;
    },
  };
}

async function until(what: string, timeoutMs: number, check: () => boolean): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

/** A writer: appends through the plugin one event after another until stopped. */
function startWriter(ns: string, stream: string): { stop(): Promise<number> } {
  let running = true;
  let written = 0;
  const loop = (async () => {
    for (let i = 0; running && i < 1000; i++) {
      const run = await plugin(['append', 'orders', stream, 'Written', JSON.stringify({ i }), '-n', ns], 120_000, false);
      if (run.code === 0) written++;
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      return written;
    },
  };
}

/** Real output kept for the README (.local/ is not committed). */
const SAMPLES = path.join(REPO, '.local', 'kubectl-plugin-samples');
function keepSample(name: string, text: string): void {
  fs.mkdirSync(SAMPLES, { recursive: true });
  fs.writeFileSync(path.join(SAMPLES, name), text);
}

/** Every recorded run, as a terminal would show it (stderr lines marked), for the README. */
function transcript(args: readonly string[], run: Run): void {
  fs.mkdirSync(SAMPLES, { recursive: true });
  const shown = args.map((arg) => (/^[\w@%+=:,./-]+$/.test(arg) ? arg : `'${arg}'`)).join(' ');
  const err = run.stderr === '' ? '' : run.stderr.replace(/^/gm, '[stderr] ').replace(/\[stderr\] $/, '');
  fs.appendFileSync(path.join(SAMPLES, 'transcript.txt'), `$ kubectl eventdb ${shown}\n${run.stdout.slice(0, 20_000)}${err.slice(0, 5000)}# exit ${run.code}\n\n`);
}

function show(run: Run): string {
  return `exit ${run.code}\n--- stdout\n${run.stdout}\n--- stderr\n${run.stderr}`;
}

describe.skipIf(ctx().skipReason !== '')('kubectl eventdb against a three-node cluster', () => {
  let ns = '';
  let operator: OperatorUnderTest | undefined;
  let tmp = '';

  beforeAll(async () => {
    fs.rmSync(SAMPLES, { recursive: true, force: true });
    installCrds();
    operator = await startOperator({ watchNamespaces: [] });
    ns = await createNamespace('edb-plugin');
    expect(applyCluster(ns, 'orders', SPEC).status).toBe(0);
    await waitClusterReady(ns, 'orders', 420_000);
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'plugin-'));
  }, 900_000);

  afterAll(async () => {
    if (tmp !== '') fs.rmSync(tmp, { recursive: true, force: true });
    if (ns !== '') await deleteNamespace(ns, 300_000);
    await operator?.stop();
  }, 600_000);

  it('status lists every node with its role, checkpoints and lag (bytes and seconds) under a writer, as text and as JSON', async () => {
    const writer = startWriter(ns, 'status-writer');
    let written = 0;
    try {
      await statusUnderWriter();
    } finally {
      written = await writer.stop();
    }
    expect(written).toBeGreaterThan(0);
  }, 300_000);

  async function statusUnderWriter(): Promise<void> {
    const text = await plugin(['status', 'orders', '-n', ns]);
    keepSample('status.txt', `$ kubectl eventdb status orders -n ${ns}\n${text.stdout}`);
    expect(text.code, show(text)).toBe(0);
    expect(text.stdout).not.toContain('\u001b[');
    const cluster = await getCluster(ns, 'orders');
    const leader = cluster?.status?.leader ?? '';
    const rows = text.stdout.split('\n').filter((line) => /^orders-\d\s/.test(line));
    expect(rows.map((row) => row.split(/\s+/)[0])).toEqual(['orders-0', 'orders-1', 'orders-2']);
    for (const row of rows) {
      const [pod, role, ready] = row.split(/\s+/);
      expect(role, row).toBe(pod === leader ? 'Leader' : 'Follower');
      expect(ready).toBe('true');
      expect(row).toMatch(/\s\d+(\.\d)? (B|KiB|MiB)\s/); // the LAG column
    }
    expect(text.stdout).toContain('Verdict: healthy');
    const json = await plugin(['status', 'orders', '-n', ns, '-o', 'json']);
    expect(json.code, show(json)).toBe(0);
    const view = JSON.parse(json.stdout) as { phase: string; nodes: { pod: string; role: string; lagBytes: number; ackedLagBytes?: number; source: string; writerCheckpoint: number }[] };
    expect(view.phase).toBe('Ready');
    expect(view.nodes.map((node) => node.role).sort()).toEqual(['Follower', 'Follower', 'Leader']);
    // every node answered its own gossip through the port-forward, verified with the cluster CA
    expect(view.nodes.map((node) => node.source)).toEqual(['live', 'live', 'live']);
    for (const node of view.nodes) {
      expect(typeof node.lagBytes).toBe('number');
      expect(node.writerCheckpoint).toBeGreaterThan(0);
    }
    expect(view.nodes.find((node) => node.role === 'Leader')?.lagBytes).toBe(0);
    // lag in seconds: from each node's own newest event (its $all head); the leader's is 0, and a
    // follower keeping up with one writer is well under a minute behind
    const lagSeconds = view.nodes.map((node) => (node as { lagSeconds?: number }).lagSeconds);
    for (const value of lagSeconds) expect(typeof value, JSON.stringify(view.nodes)).toBe('number');
    expect((view.nodes.find((node) => node.role === 'Leader') as { lagSeconds?: number }).lagSeconds).toBe(0);
    for (const value of lagSeconds) expect(value).toBeLessThan(60);
    expect(text.stdout).toMatch(/LAG\s+LAG-S\s+UNACKED/);
  }

  it('status --watch redraws until interrupted: one JSON document a line, the leader\'s writer checkpoint moving with the appends; Ctrl-C ends it with the verdict', async () => {
    const watch = startPlugin(['status', 'orders', '-n', ns, '--watch', '--interval', '1s', '-o', 'json']);
    const rounds = (): { nodes: { role: string; writerCheckpoint: number }[] }[] =>
      watch.out().split('\n').filter((line) => line.trim() !== '').map((line) => JSON.parse(line) as { nodes: { role: string; writerCheckpoint: number }[] });
    let code = -1;
    try {
      await until('a first status round', 90_000, () => rounds().length >= 1);
      const first = rounds()[0]?.nodes.find((node) => node.role === 'Leader')?.writerCheckpoint ?? 0;
      for (let n = 0; n < 3; n++) expect((await plugin(['append', 'orders', 'watched', 'Seen', JSON.stringify({ n }), '-n', ns])).code).toBe(0);
      await until('a round showing the appends', 90_000, () => (rounds().at(-1)?.nodes.find((node) => node.role === 'Leader')?.writerCheckpoint ?? 0) > first);
    } finally {
      code = await watch.stop();
    }
    expect(code, watch.err()).toBe(0);
    expect(rounds().length).toBeGreaterThanOrEqual(2);
    for (const round of rounds()) expect(round.nodes.map((node) => node.role).sort()).toEqual(['Follower', 'Follower', 'Leader']);
    const text = startPlugin(['status', 'orders', '-n', ns, '--watch', '--interval', '1s']);
    try {
      await until('two text rounds', 90_000, () => (text.out().match(/^Verdict: /gm) ?? []).length >= 2);
    } finally {
      expect(await text.stop()).toBe(0);
    }
    expect(text.out()).not.toContain('\u001b['); // a pipe: no colour, no screen clearing
  }, 300_000);

  it('append then read returns the events with the admin credentials', async () => {
    for (const [n, expected] of [[1, 0], [2, 1]] as const) {
      const appended = await plugin(['append', 'orders', 'plugin-stream', 'Placed', JSON.stringify({ n }), '-n', ns, '-o', 'json']);
      expect(appended.code, show(appended)).toBe(0);
      expect(JSON.parse(appended.stdout)).toMatchObject({ stream: 'plugin-stream', eventType: 'Placed', eventNumber: expected });
    }
    const read = await plugin(['read', 'orders', 'plugin-stream', '-n', ns, '-o', 'json']);
    expect(read.code, show(read)).toBe(0);
    expect((JSON.parse(read.stdout) as { eventNumber: number; eventType: string; data: unknown }[]).map((event) => [event.eventNumber, event.eventType, event.data])).toEqual([
      [0, 'Placed', { n: 1 }],
      [1, 'Placed', { n: 2 }],
    ]);
    const from = await plugin(['read', 'orders', 'plugin-stream', '--from', '1', '-n', ns]);
    expect(from.code, show(from)).toBe(0);
    expect(from.stdout).toMatch(/^NUMBER\s+TYPE\s+CREATED\s+DATA\n1\s+Placed\s+\S+\s+\{"n":2\}\n$/);
    const missing = await plugin(['read', 'orders', 'no-such-stream', '-n', ns]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('stream no-such-stream not found');
  });

  it('backup --wait ends with a Completed Backup', async () => {
    const run = await plugin(['backup', 'orders', '--name', 'plugin-snap', '--snapshot-class', 'csi-hostpath-snapclass', '--wait', '--timeout', '6m', '-n', ns], 420_000);
    expect(run.code, show(run)).toBe(0);
    expect(run.stdout).toMatch(/^Verdict: Completed: Backup plugin-snap of orders-\d \(Follower\), writer checkpoint \d+/);
    expect(run.stderr).toContain('backup.eventdb.io/plugin-snap created');
    const backup = await getBackup(ns, 'plugin-snap');
    expect(backup?.status?.phase).toBe('Completed');
    await waitClusterReady(ns, 'orders', 300_000);
    const status = await plugin(['status', 'orders', '-n', ns]);
    expect(status.stdout).toContain('last completed plugin-snap (VolumeSnapshot');
  }, 600_000);

  it('report writes a tar.gz with the CRs, children, Events, logs and every node\'s /info /gossip /stats, and no Secret data', async () => {
    const file = path.join(tmp, 'report.tar.gz');
    const run = await plugin(['report', 'orders', '-n', ns, '-f', file], 300_000);
    expect(run.code, show(run)).toBe(0);
    expect(run.stdout).toContain(`Report written: ${file}`);
    const files = readTar(fs.readFileSync(file));
    const names = [...files.keys()].map((name) => name.replace(/^[^/]+\//, ''));
    const expected = ['summary.txt', 'status.json', 'eventdbcluster.yaml', 'pods.yaml', 'services.yaml', 'persistentvolumeclaims.yaml', 'configmaps.yaml', 'poddisruptionbudgets.yaml', 'backups.yaml', 'events.yaml', 'secrets.yaml', 'REDACTED.txt', 'errors.txt', 'manifest.json'];
    for (const pod of ['orders-0', 'orders-1', 'orders-2']) expected.push(`logs/nodes/${pod}.log`, `nodes/${pod}/info.json`, `nodes/${pod}/gossip.json`, `nodes/${pod}/stats.json`);
    for (const name of expected) expect(names, name).toContain(name);
    expect(names.some((name) => name.startsWith('logs/operator/'))).toBe(true);
    const byName = new Map([...files].map(([name, content]) => [name.replace(/^[^/]+\//, ''), content.toString('utf8')]));
    // gossip keeps a restarted pod's old address as a dead member for a while (the restart cases run first): three alive
    const members = (JSON.parse(byName.get('nodes/orders-0/gossip.json') ?? '{}') as { members?: { isAlive?: boolean }[] }).members ?? [];
    expect(members.filter((member) => member.isAlive === true), JSON.stringify(members)).toHaveLength(3);
    expect(byName.get('backups.yaml')).toContain('plugin-snap');
    expect(byName.get('secrets.yaml')).toContain('orders-admin');
    expect(byName.get('secrets.yaml')).toContain('<redacted>');
    expect(byName.get('REDACTED.txt')).toContain('orders-admin');
    // not one value of the cluster's Secrets, as text or base64, anywhere in the archive
    const values = [await secretValue(ns, 'orders-admin', 'password'), await secretValue(ns, 'orders-ops', 'password'), await secretValue(ns, 'orders-ca', 'ca.key'), await secretValue(ns, 'orders-node-tls', 'tls.key')];
    for (const [name, content] of byName) {
      for (const value of values) {
        expect(content.includes(value), `${name} holds a Secret value`).toBe(false);
        expect(content.includes(Buffer.from(value).toString('base64')), `${name} holds a Secret value in base64`).toBe(false);
      }
      const keyLine = values[2]?.split('\n')[1] ?? 'none';
      expect(content.includes(keyLine), `${name} holds a line of the CA key`).toBe(false);
    }
  }, 400_000);

  it('logs interleave every node\'s lines by time', async () => {
    const run = await plugin(['logs', 'orders', '-n', ns, '--tail', '300']);
    expect(run.code, show(run)).toBe(0);
    const lines = run.stdout.split('\n').filter((line) => /^\d{4}-\d\d-\d\dT/.test(line));
    const pods = new Set(lines.map((line) => line.split(/\s+/)[1]));
    expect([...pods].sort()).toEqual(['orders-0', 'orders-1', 'orders-2']);
    const times = lines.map((line) => Date.parse(line.split(/\s+/)[0] ?? ''));
    for (let i = 1; i < times.length; i++) expect(times[i]).toBeGreaterThanOrEqual(times[i - 1] ?? 0);
    // interleaved, not one node's block after another's: three blocks would switch pods twice
    const switches = lines.filter((line, i) => i > 0 && line.split(/\s+/)[1] !== lines[i - 1]?.split(/\s+/)[1]).length;
    expect(switches).toBeGreaterThan(2);
    const json = await plugin(['logs', 'orders', '-n', ns, '--tail', '5', '--json']);
    expect(json.code, show(json)).toBe(0);
    for (const line of json.stdout.trim().split('\n')) expect(JSON.parse(line)).toHaveProperty('pod');
  });

  it('restart of a follower deletes it and waits until the operator brought it back ready', async () => {
    const cluster = await waitClusterReady(ns, 'orders');
    const follower = (await clusterPods(ns, 'orders')).find((pod) => pod.name !== cluster.status?.leader);
    expect(follower).toBeDefined();
    const run = await plugin(['restart', 'orders', follower?.name ?? '', '--wait', '--timeout', '5m', '-n', ns], 360_000);
    expect(run.code, show(run)).toBe(0);
    expect(run.stdout).toContain(`Verdict: restarted: ${follower?.name} is back and ready`);
    const after = (await clusterPods(ns, 'orders')).find((pod) => pod.name === follower?.name);
    expect(after?.uid).not.toBe(follower?.uid);
    await waitClusterReady(ns, 'orders', 300_000);
  }, 400_000);

  it('restart of the cluster --wait rolls it: every node recreated, followers first, the leader last', async () => {
    const cluster = await waitClusterReady(ns, 'orders', 300_000);
    const leaderBefore = cluster.status?.leader ?? '';
    const before = new Map((await clusterPods(ns, 'orders')).map((pod) => [pod.name, pod.uid]));
    const order: string[] = [];
    let done = false;
    const restarted = plugin(['restart', 'orders', '--wait', '--timeout', '8m', '-n', ns], 540_000).finally(() => (done = true));
    for (let i = 0; !done && i < 600; i++) {
      for (const pod of await clusterPods(ns, 'orders').catch(() => [])) if (before.has(pod.name) && pod.uid !== before.get(pod.name) && !order.includes(pod.name)) order.push(pod.name);
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
    const run = await restarted;
    expect(run.code, show(run)).toBe(0);
    expect(run.stdout).toContain('Verdict: restarted: orders is Ready');
    for (const pod of await clusterPods(ns, 'orders')) if (!order.includes(pod.name) && pod.uid !== before.get(pod.name)) order.push(pod.name);
    expect([...order].sort()).toEqual(['orders-0', 'orders-1', 'orders-2']);
    expect(order.at(-1), order.join(', ')).toBe(leaderBefore);
    await waitClusterReady(ns, 'orders', 300_000);
  }, 600_000);

  it('scavenge --wait runs one cycle through a one-shot schedule: followers first, the leader last; the schedule is gone after', async () => {
    const cluster = await waitClusterReady(ns, 'orders', 300_000);
    const leaderBefore = cluster.status?.leader ?? '';
    // logs --follow runs through the cycle: the nodes' scavenge lines arrive as they are written
    const follow = startPlugin(['logs', 'orders', '-n', ns, '--tail', '20', '--follow', '--json']);
    let followCode = -1;
    let run: Run = { code: -1, stdout: '', stderr: '' };
    const followedAt = Date.now();
    try {
      await until('the followed backlog', 90_000, () => follow.out().split('\n').length > 3);
      run = await plugin(['scavenge', 'orders', '--wait', '--timeout', '5m', '-n', ns, '-o', 'json'], 480_000);
      await until('every node\'s "scavenge completed" in the followed log', 60_000, () => ['orders-0', 'orders-1', 'orders-2'].every((pod) => follow.out().split('\n').some((line) => line.startsWith(`{"pod":"${pod}"`) && line.includes('"msg":"scavenge completed"'))));
    } finally {
      followCode = await follow.stop();
    }
    expect(followCode, follow.err()).toBe(0);
    const followed = follow.out().split('\n').filter((line) => line.trim() !== '');
    const records = followed.map((line) => JSON.parse(line) as { pod: string; time: number | string; msg?: string });
    // pino writes epoch milliseconds, the node's JSON log format may write ISO text
    const timeMs = (time: number | string) => (typeof time === 'number' ? time : Date.parse(time));
    const completed = records.filter((record) => record.msg === 'scavenge completed' && timeMs(record.time) >= followedAt);
    expect(new Set(completed.map((record) => record.pod)), follow.out().slice(-3000)).toEqual(new Set(['orders-0', 'orders-1', 'orders-2']));
    expect(new Set(followed).size).toBe(followed.length); // no line printed twice (backlog and stream overlap)
    keepSample('logs-follow.txt', followed.filter((line) => line.includes('scavenge')).slice(0, 12).join('\n'));
    expect(run.code, show(run)).toBe(0);
    const outcome = JSON.parse(run.stdout) as { schedule: string; cycle: { result: string }; nodes: { pod: string; result: string }[] };
    expect(outcome.cycle.result).toBe('Success');
    expect(outcome.nodes.map((node) => node.pod).sort()).toEqual(['orders-0', 'orders-1', 'orders-2']);
    expect(outcome.nodes[2]?.pod).toBe(leaderBefore);
    expect(run.stderr).toContain('the ScavengeSchedule API has no run-now trigger');
    const left = await plugin(['status', 'orders', '-n', ns, '-o', 'json']);
    expect((JSON.parse(left.stdout) as { scavenges: unknown[] }).scavenges).toEqual([]);
    await waitClusterReady(ns, 'orders', 300_000);
  }, 600_000);

  it('the day-2 verbs the operator does not support yet exit 1 and change nothing; a bad option exits 2 naming it', async () => {
    const before = await getCluster(ns, 'orders');
    for (const args of [['switchover', 'orders', 'orders-0'], ['hibernate', 'on', 'orders'], ['fence', 'on', 'orders', 'orders-1']]) {
      const run = await plugin([...args, '-n', ns]);
      expect(run.code, show(run)).toBe(1);
      expect(run.stderr).toContain('the operator does not support');
    }
    expect((await getCluster(ns, 'orders'))?.metadata.generation).toBe(before?.metadata.generation);
    const bad = await plugin(['status', 'orders', '--colour', '-n', ns]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('unknown option --colour');
    const missing = await plugin(['status', 'nothing-here', '-n', ns]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain(`no EventDBCluster nothing-here in namespace ${ns}`);
  });
});
