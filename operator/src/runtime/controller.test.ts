import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { ManualClock } from './clock.js';
import { Controller, TerminalError, type ReconcileContext, type ReconcileResult } from './controller.js';
import { OperatorMetrics, valueOf } from './metrics.js';

const log = pino({ level: 'silent' });

async function settle(): Promise<void> {
  for (let i = 0; i < 20; i++) await new Promise((resolve) => setImmediate(resolve));
}

function setUp(reconcile: (context: ReconcileContext) => Promise<ReconcileResult>) {
  const clock = new ManualClock();
  const metrics = new OperatorMetrics();
  const controller = new Controller({ name: 'test', reconcile, clock, log, metrics, workers: 2, backoffBaseMs: 100 });
  controller.start();
  return { clock, metrics, controller };
}

describe('Controller', () => {
  it('reconciles a key with its namespace and name, and counts it', async () => {
    const seen: string[] = [];
    const { controller, metrics, clock } = setUp(async ({ namespace, name }) => {
      seen.push(`${namespace}|${name}`);
      return {};
    });
    controller.enqueue('ns/a');
    await settle();
    expect(seen).toEqual(['ns|a']);
    expect(await valueOf(metrics.reconciles, { controller: 'test', result: 'success' })).toBe(1);
    expect(await valueOf(metrics.lastReconcileTimestamp, { controller: 'test', result: 'success' })).toBe(clock.nowMs() / 1000);
    expect(await valueOf(metrics.lastReconcileTimestamp, { controller: 'test', result: 'error' })).toBeUndefined();
    await controller.stop();
  });

  it('never runs two reconciles of one key at once, and runs again for a change seen meanwhile', async () => {
    let running = 0;
    let overlap = false;
    let calls = 0;
    let release: () => void = () => undefined;
    const { controller } = setUp(async () => {
      running++;
      calls++;
      if (running > 1) overlap = true;
      if (calls === 1) await new Promise<void>((resolve) => (release = resolve));
      running--;
      return {};
    });
    controller.enqueue('ns/a');
    await settle();
    controller.enqueue('ns/a');
    controller.enqueue('ns/a');
    await settle();
    expect(calls).toBe(1);
    release();
    await settle();
    expect(calls).toBe(2);
    expect(overlap).toBe(false);
    await controller.stop();
  });

  it('retries a failed reconcile with back-off, and not a terminal failure', async () => {
    let calls = 0;
    const { controller, clock } = setUp(async ({ name }) => {
      calls++;
      if (name === 'terminal') throw new TerminalError('EDBOP_INVALID_SPEC', 'bad spec');
      if (calls < 3) throw new Error('apiserver hiccup');
      return {};
    });
    controller.enqueue('ns/a');
    await settle();
    expect(calls).toBe(1);
    clock.advance(100);
    await settle();
    expect(calls).toBe(2);
    clock.advance(199);
    await settle();
    expect(calls).toBe(2);
    clock.advance(1);
    await settle();
    expect(calls).toBe(3);
    controller.enqueue('ns/terminal');
    await settle();
    clock.advance(10_000);
    await settle();
    expect(calls).toBe(4);
    await controller.stop();
  });

  it('reconciles again after the delay a reconcile asks for', async () => {
    let calls = 0;
    const { controller, clock } = setUp(async () => {
      calls++;
      return { requeueAfterMs: 5000 };
    });
    controller.enqueue('ns/a');
    await settle();
    clock.advance(4999);
    await settle();
    expect(calls).toBe(1);
    clock.advance(1);
    await settle();
    expect(calls).toBe(2);
    await controller.stop();
  });
});
