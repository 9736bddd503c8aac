/**
 * The seeded simulation tier: many seeds of 3- and 5-node clusters under crashes, partitions,
 * message loss and reordering (cluster-sim.ts). SIM_SEEDS sets how many (default 1,000 per size; `make test-sim SIM_SEEDS=5000` for a long run);
 * SIM_SEED=<n> replays one seed.
 */
import { describe, expect, it } from 'vitest';
import { runSimulation } from './cluster-sim.js';

const seeds = Number(process.env['SIM_SEEDS'] ?? 1000);
const only = process.env['SIM_SEED'] === undefined ? undefined : Number(process.env['SIM_SEED']);

describe('cluster simulation', () => {
  for (const nodes of [3, 5]) {
    it(`${nodes} nodes: elections and replication keep every acknowledged write, ${only === undefined ? `${seeds} seeds` : `seed ${only}`}`, () => {
      let acknowledged = 0;
      let epochs = 0;
      let crashes = 0;
      const first = nodes * 1_000_000;
      const list = only === undefined ? Array.from({ length: seeds }, (_, i) => first + i) : [only];
      for (const seed of list) {
        const result = runSimulation({ seed, nodes, durationMs: 4000 });
        acknowledged += result.acknowledged;
        epochs += result.epochs;
        crashes += result.crashes;
      }
      // The runs did something: writes were acknowledged across many terms and crashes.
      expect(acknowledged).toBeGreaterThan(list.length * 10);
      expect(epochs).toBeGreaterThan(list.length * 2);
      expect(crashes).toBeGreaterThan(list.length);
      process.stdout.write(`${nodes} nodes, ${list.length} seeds: ${acknowledged} acknowledged writes, ${epochs} epochs, ${crashes} crashes\n`);
    }, 600_000);
  }
});
