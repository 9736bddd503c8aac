// The node image as a user runs it: `kubectl run` gives a pod whose PID 1 is the node; `kubectl exec ... kill -HUP 1`
// reaches the node, which logs a configuration reload and keeps running; deleting the pod stops the node gracefully
// on SIGTERM, well within the grace period.
import { describe, expect, it } from 'vitest';
import { api, ctx, execIn, getPod, image, kubectl, podLogs, useNamespace, waitFor, waitPodGone } from './helpers.js';

describe.skipIf(!!ctx().skipReason)('a node pod', () => {
  const ns = useNamespace('pod');

  it('runs the node as PID 1, reloads its configuration on SIGHUP and stops on SIGTERM', async () => {
    const run = kubectl(['run', 'edb', '-n', ns(), `--image=${image()}`, '--image-pull-policy=IfNotPresent', '--', '--insecure', '--mem-db']);
    expect(run.status, run.out).toBe(0);
    const r = kubectl(['wait', '-n', ns(), '--for=condition=Ready', 'pod/edb', '--timeout=120s'], undefined, 150_000);
    expect(r.status, r.out).toBe(0);
    await waitFor('the node to be ready', async () => (await podLogs(ns(), 'edb')).includes('"msg":"ready"'), 60_000);

    const cmdline = execIn(ns(), 'edb', ['cat', '/proc/1/cmdline']).split('\0').filter(Boolean);
    expect(cmdline[0]).toBe('node');
    expect(cmdline).toContain('/app/node/bin/../../dist/node/src/main.js');
    expect(cmdline.slice(-2)).toEqual(['--insecure', '--mem-db']);

    // SIGHUP to PID 1 from inside the container, as a user (or the operator) sends it
    execIn(ns(), 'edb', ['sh', '-c', 'kill -HUP 1']);
    const reloaded = await waitFor('a reload in the node log', async () => {
      const log = await podLogs(ns(), 'edb');
      return log.includes('"msg":"configuration reloaded"') ? log : undefined;
    }, 30_000);
    expect(reloaded).toContain('"signal":"SIGHUP"');
    // still the same process, still serving
    const pod = await getPod(ns(), 'edb');
    expect(pod?.status?.containerStatuses?.[0]?.restartCount).toBe(0);
    expect(pod?.status?.containerStatuses?.[0]?.state?.running).toBeDefined();
    const status = execIn(ns(), 'edb', ['node', '-e', "fetch('http://127.0.0.1:2113/info').then((r) => console.log(r.status))"]);
    expect(status.trim()).toBe('200');

    // deletion: SIGTERM, the node shuts down by itself long before the 30 s grace period ends
    const t0 = Date.now();
    await api().call('DELETE', `/api/v1/namespaces/${ns()}/pods/edb`);
    await waitPodGone(ns(), 'edb', 60_000);
    expect(Date.now() - t0).toBeLessThan(20_000);
  }, 300_000);
});
