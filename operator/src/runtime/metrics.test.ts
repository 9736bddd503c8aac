import { describe, expect, it } from 'vitest';
import { MetricsRegistry } from './metrics.js';

describe('MetricsRegistry', () => {
  it('renders counters, gauges and histograms in the Prometheus text format', () => {
    const registry = new MetricsRegistry();
    const counter = registry.counter('x_total', 'Things.');
    const gauge = registry.gauge('y', 'Level.');
    const histogram = registry.histogram('z_seconds', 'Time.', [0.1, 1]);
    counter.inc({ controller: 'a' });
    counter.inc({ controller: 'a' }, 2);
    gauge.set({ q: 'say "hi"' }, 4);
    histogram.observe({}, 0.05);
    histogram.observe({}, 0.5);
    histogram.observe({}, 5);
    expect(registry.render()).toBe(
      [
        '# HELP x_total Things.',
        '# TYPE x_total counter',
        'x_total{controller="a"} 3',
        '# HELP y Level.',
        '# TYPE y gauge',
        'y{q="say \\"hi\\""} 4',
        '# HELP z_seconds Time.',
        '# TYPE z_seconds histogram',
        'z_seconds_bucket{le="0.1"} 1',
        'z_seconds_bucket{le="1"} 2',
        'z_seconds_bucket{le="+Inf"} 3',
        'z_seconds_sum 5.55',
        'z_seconds_count 3',
        '',
      ].join('\n'),
    );
  });

  it('refuses a metric name registered twice', () => {
    const registry = new MetricsRegistry();
    registry.counter('a', 'A.');
    expect(() => registry.gauge('a', 'A.')).toThrow(/twice/);
  });
});
