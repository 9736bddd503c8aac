import { pino } from 'pino';
import { describe, expect, it } from 'vitest';

import { runSteps, type Step } from './steps.js';

const log = pino({ level: 'silent' });

describe('runSteps', () => {
  const step = (name: string, outcome: 'continue' | 'stop' | Error): Step<string[]> => ({
    name,
    run: async (ran) => {
      ran.push(name);
      if (outcome instanceof Error) throw outcome;
      return outcome;
    },
  });

  it('runs the steps in order until one stops', async () => {
    const ran: string[] = [];
    await runSteps([step('a', 'continue'), step('b', 'stop'), step('c', 'continue')], ran, { log, onError: async () => undefined });
    expect(ran).toEqual(['a', 'b']);
  });

  it('records a thrown error, runs nothing after it, and throws it on to the queue', async () => {
    const ran: string[] = [];
    const recorded: unknown[] = [];
    const boom = new Error('apiserver said no');
    await expect(runSteps([step('a', 'continue'), step('b', boom), step('c', 'continue')], ran, { log, onError: async (err) => void recorded.push(err) }))
      .rejects.toBe(boom);
    expect(ran).toEqual(['a', 'b']);
    expect(recorded).toEqual([boom]);
  });
});
