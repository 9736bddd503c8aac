// helm lint, template and install of a small fixture chart against the cluster.
import { describe, expect, it, onTestFinished } from 'vitest';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { api, ctx, image, run, useNamespace, waitFor } from './helpers.js';

const chart = path.join(path.dirname(fileURLToPath(import.meta.url)), 'fixtures/chart');

describe.skipIf(!!ctx().skipReason)('helm', () => {
  const ns = useNamespace('helm');

  it('lints, templates and installs a chart; the release becomes ready and uninstalls', async () => {
    const c = ctx();
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'eventdb-k8s-helm-'));
    onTestFinished(() => fs.rmSync(home, { recursive: true, force: true }));
    const env = {
      KUBECONFIG: c.kubeconfig,
      HELM_CACHE_HOME: path.join(home, 'cache'),
      HELM_CONFIG_HOME: path.join(home, 'config'),
      HELM_DATA_HOME: path.join(home, 'data'),
    };
    const version = run(c.helm, ['version', '--short'], env);
    expect(version.status, version.out).toBe(0);
    expect(version.out).toMatch(/^v3\.\d+\.\d+/);

    const lint = run(c.helm, ['lint', chart], env);
    expect(lint.status, lint.out).toBe(0);
    expect(lint.out).toContain('0 chart(s) failed');

    const tpl = run(c.helm, ['template', 'fx', chart, '--namespace', ns(), '--set', 'replicas=3'], env);
    expect(tpl.status, tpl.out).toBe(0);
    expect(tpl.out).toContain('kind: Deployment');
    expect(tpl.out).toContain('replicas: 3');

    // the chart runs the node image (its entrypoint, --insecure --mem-db)
    const [repository, tag] = [image().slice(0, image().lastIndexOf(':')), image().slice(image().lastIndexOf(':') + 1)];
    const install = run(
      c.helm,
      ['install', 'fx', chart, '--namespace', ns(), '--wait', '--timeout', '180s', '--set', `image.repository=${repository}`, '--set', `image.tag=${tag}`],
      env,
    );
    expect(install.status, install.out).toBe(0);
    expect(install.out).toContain('STATUS: deployed');

    const dep = await waitFor('deployment available', async () => {
      const d = await api().get<{ status?: { availableReplicas?: number } }>(`/apis/apps/v1/namespaces/${ns()}/deployments/fx`);
      return (d?.status?.availableReplicas ?? 0) >= 2 ? d : undefined;
    }, 60_000);
    expect(dep.status?.availableReplicas).toBe(2);

    const list = run(c.helm, ['list', '--namespace', ns(), '-q'], env);
    expect(list.out.trim()).toBe('fx');
    const uninstall = run(c.helm, ['uninstall', 'fx', '--namespace', ns(), '--wait', '--timeout', '60s'], env);
    expect(uninstall.status, uninstall.out).toBe(0);
  }, 240_000);
});
