import { describe, expect, it } from 'vitest';
import type { KubeApi, KubeObject } from '../runtime/kube-api.js';
import { parseCommandLine, type Command } from './args.js';
import type { PluginIo } from './io.js';
import { runVerb, type Terminal } from './verbs.js';

const pod = (name: string): KubeObject => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name, namespace: 'shop', uid: `uid-${name}`, labels: { 'eventdb.io/cluster': 'orders' } },
  spec: { containers: [{ name: 'eventdb', image: 'eventdb:0.2.0' }] },
  status: { phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }] },
});

const line = (kubelet: string, time: number, msg: string): string => `${kubelet} ${JSON.stringify({ level: 30, time, msg })}`;

function fakeIo(backlogs: Record<string, string>, streams: Record<string, string[]>, follows: { pod: string; sinceTime?: string }[]): PluginIo {
  const api = {
    get: async () => ({ apiVersion: 'eventdb.io/v1alpha1', kind: 'EventDBCluster', metadata: { name: 'orders', namespace: 'shop', uid: 'u1' }, spec: { replicas: 3 } }),
    list: async () => ({ items: ['orders-0', 'orders-1', 'orders-2'].map(pod) }),
  } as unknown as KubeApi;
  return {
    namespace: 'shop',
    api,
    kubeConfig: undefined as never,
    podLog: async (name) => backlogs[name] ?? '',
    async followLog(name, _container, options, onLine, signal) {
      follows.push({ pod: name, ...(options.sinceTime === undefined ? {} : { sinceTime: options.sinceTime }) });
      for (const text of streams[name] ?? []) onLine(text);
      await new Promise<void>((resolve) => (signal.aborted ? resolve() : signal.addEventListener('abort', () => resolve(), { once: true })));
    },
    nodeAccess: () => {
      throw new Error('no nodes in this test');
    },
    close: async () => {},
  };
}

function commandOf(argv: string[]): Command {
  const outcome = parseCommandLine(argv);
  if (outcome.kind !== 'command') throw new Error('not a command');
  return outcome.command;
}

describe('logs --follow', () => {
  it('prints the interleaved backlog, then every node\'s new lines from the second its backlog ended, none twice, until interrupted (exit 0)', async () => {
    const a = line('2026-12-02T01:00:01.100000000Z', Date.parse('2026-12-02T01:00:01.100Z'), 'a0');
    const b = line('2026-12-02T01:00:02.500000000Z', Date.parse('2026-12-02T01:00:02.500Z'), 'b1');
    const c = line('2026-12-02T01:00:02.700000000Z', Date.parse('2026-12-02T01:00:02.700Z'), 'c1');
    const backlogs = { 'orders-0': `${a}\n`, 'orders-1': `${b}\n${c}\n`, 'orders-2': '' };
    const newer0 = line('2026-12-02T01:00:05.000000000Z', Date.parse('2026-12-02T01:00:05Z'), 'new0');
    const newer1 = line('2026-12-02T01:00:06.000000000Z', Date.parse('2026-12-02T01:00:06Z'), 'new1');
    const newer2 = line('2026-12-02T01:00:07.000000000Z', Date.parse('2026-12-02T01:00:07Z'), 'new2');
    // the apiserver repeats the lines of the sinceTime second the backlog already printed
    const streams = { 'orders-0': [a, newer0], 'orders-1': [b, c, newer1], 'orders-2': [newer2] };
    const follows: { pod: string; sinceTime?: string }[] = [];
    const controller = new AbortController();
    let out = '';
    const term: Terminal = { stdout: (text) => void (out += text), stderr: () => undefined, tty: false, signal: controller.signal, nowMs: () => Date.parse('2026-12-02T01:00:04.400Z') };
    const running = runVerb(commandOf(['logs', 'orders', '-n', 'shop', '--follow', '--json']), fakeIo(backlogs, streams, follows), term);
    for (let i = 0; i < 100 && follows.length < 3; i++) await new Promise((resolve) => setTimeout(resolve, 5));
    controller.abort();
    expect(await running).toBe(0);
    const printed = out.trim().split('\n').map((text) => JSON.parse(text) as { pod: string; msg: string });
    expect(printed.map((record) => `${record.pod} ${record.msg}`)).toEqual(['orders-0 a0', 'orders-1 b1', 'orders-1 c1', 'orders-0 new0', 'orders-1 new1', 'orders-2 new2']);
    expect(follows.sort((x, y) => x.pod.localeCompare(y.pod))).toEqual([
      { pod: 'orders-0', sinceTime: '2026-12-02T01:00:01Z' },
      { pod: 'orders-1', sinceTime: '2026-12-02T01:00:02Z' },
      { pod: 'orders-2', sinceTime: '2026-12-02T01:00:04Z' },
    ]);
  });
});
