/**
 * GET /metrics against a real node process on disk: the exposition passes `promtool check
 * metrics` (Prometheus's own parser and linter) in both formats, needs an authenticated user,
 * and its figures follow what a client did (appends and reads timed under protocol="http",
 * the writer checkpoint moving, the data volume reported).
 */
import { randomUUID } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';

import { tempDir } from '../support/node-process.js';
import { promtool } from '../support/promtool.js';
import { useNode } from '../support/use-node.js';

const dir = tempDir('eventdb-metrics-');
afterAll(() => dir.remove());
const running = useNode({ memDb: false, args: ['--db', `${dir.path}/db`, '--index', `${dir.path}/index`] });
const http = running.http;

/** The value of the sample `name{labels}` (labels in the exposition's order), or undefined. */
function sample(body: string, series: string): number | undefined {
  const line = body.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1).split(' ')[0]);
}

describe('GET /metrics (real node)', () => {
  it('answers 401 without credentials, as /stats does', async () => {
    const response = await http('GET', '/metrics', { auth: false });
    expect(response.status).toBe(401);
  });

  it('passes promtool check metrics, in the text format and in OpenMetrics', async () => {
    const text = await http('GET', '/metrics');
    expect(text.status).toBe(200);
    expect(text.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    const check = promtool(['check', 'metrics'], text.text);
    expect(check.output).toBe('');
    expect(check.status).toBe(0);
    const om = await http('GET', '/metrics', { headers: { accept: 'application/openmetrics-text; version=1.0.0' } });
    expect(om.headers.get('content-type')).toMatch(/^application\/openmetrics-text; version=1\.0\.0/);
    expect(om.text.trimEnd().endsWith('# EOF')).toBe(true);
  });

  it('times appends and reads under protocol="http" and moves the writer checkpoint', async () => {
    const before = (await http('GET', '/metrics')).text;
    const writerBefore = sample(before, 'eventdb_checkpoints_bytes{name="writer"}') ?? 0;
    const appendsBefore = sample(before, 'eventdb_append_duration_seconds_count{protocol="http",status="successful"}') ?? 0;
    const stream = `metrics-${randomUUID()}`;
    for (let i = 0; i < 5; i++) {
      const response = await http('POST', `/streams/${stream}`, {
        headers: { 'content-type': 'application/vnd.eventstore.events+json' },
        body: JSON.stringify([{ eventId: randomUUID(), eventType: 'measured', data: { i } }]),
      });
      expect(response.status).toBe(201);
    }
    expect((await http('GET', `/streams/${stream}/0`, { headers: { accept: 'application/json' } })).status).toBe(200);
    expect((await http('GET', `/streams/no-such-${randomUUID()}`, { headers: { accept: 'application/json' } })).status).toBe(404);
    const after = (await http('GET', '/metrics')).text;
    expect(sample(after, 'eventdb_append_duration_seconds_count{protocol="http",status="successful"}')).toBe(appendsBefore + 5);
    // a stream that does not exist is an answer, not a failed read
    expect(sample(after, 'eventdb_read_duration_seconds_count{protocol="http",status="successful"}')).toBeGreaterThanOrEqual(2);
    expect(sample(after, 'eventdb_checkpoints_bytes{name="writer"}')).toBeGreaterThan(writerBefore);
    expect(sample(after, 'eventdb_node_state{state="Leader"}')).toBe(1);
    expect(sample(after, 'eventdb_volume_bytes{volume="data",kind="total"}')).toBeGreaterThan(0);
    expect(sample(after, 'eventdb_volume_bytes{volume="index",kind="available"}')).toBeGreaterThan(0);
    expect(sample(after, 'eventdb_scavenge_running')).toBe(0);
    expect(after).toMatch(/^eventdb_process_resident_memory_bytes \d+/m);
    expect(after).toMatch(/^eventdb_nodejs_eventloop_lag_seconds [0-9.e-]+/m);
  });
});
