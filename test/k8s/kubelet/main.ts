// Entry point of the local kubelet (run by test/k8s/cluster.sh from dist/):
//   node dist/test/k8s/kubelet/main.js --kubeconfig F --state-dir D --node-name N --repo R
import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { Api } from './api.js';
import { Kubelet } from './kubelet.js';

function readVersion(repo: string): string {
  const env = fs.readFileSync(path.join(repo, 'test/k8s/versions.env'), 'utf8');
  const m = /^K8S_VERSION=(\S+)/m.exec(env);
  return m?.[1] ?? 'v0.0.0';
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      kubeconfig: { type: 'string' },
      'state-dir': { type: 'string' },
      'node-name': { type: 'string', default: 'eventdb-local' },
      nodes: { type: 'string', default: '1' },
      repo: { type: 'string' },
      'no-etc-hosts': { type: 'boolean', default: false },
      'server-port': { type: 'string', default: '0' },
      'scratch-dir': { type: 'string' },
      'tls-cert': { type: 'string' },
      'tls-key': { type: 'string' },
    },
  });
  const kubeconfig = values.kubeconfig;
  const stateDir = values['state-dir'];
  const repo = values.repo;
  if (!kubeconfig || !stateDir || !repo) throw new Error('usage: main.js --kubeconfig F --state-dir D --repo R [--node-name N]');
  const api = Api.fromFile(kubeconfig);
  const server = new URL(/server:\s*(\S+)/.exec(fs.readFileSync(kubeconfig, 'utf8'))?.[1] ?? 'https://127.0.0.1:6443');
  const log = (msg: string): void => {
    process.stdout.write(`${new Date().toISOString()} ${msg}\n`);
  };
  const kubelet = new Kubelet({
    api,
    nodeName: values['node-name'] ?? 'eventdb-local',
    nodeCount: Number(values.nodes ?? '1') || 1,
    stateDir: path.resolve(stateDir),
    repo: path.resolve(repo),
    apiHost: server.hostname,
    apiPort: server.port || '443',
    k8sVersion: readVersion(path.resolve(repo)),
    manageEtcHosts: !values['no-etc-hosts'],
    scratchDir: path.resolve(values['scratch-dir'] ?? path.join('/var/tmp', `eventdb-k8s-${values['node-name'] ?? 'eventdb-local'}`)),
    serverPort: Number(values['server-port'] ?? '0'),
    ...(values['tls-cert'] ? { serverCert: values['tls-cert'] } : {}),
    ...(values['tls-key'] ? { serverKey: values['tls-key'] } : {}),
    log,
  });
  // bounded start-up: the API server may still be settling
  let lastErr: unknown;
  for (let i = 0; i < 60; i++) {
    try {
      await kubelet.start();
      lastErr = undefined;
      break;
    } catch (err) {
      lastErr = err;
      await new Promise((r) => setTimeout(r, 1000));
    }
  }
  if (lastErr) throw lastErr;
  log(`kubelet running as node ${values['node-name'] ?? ''}`);
  let stopping = false;
  const shutdown = (sig: string): void => {
    if (stopping) return;
    stopping = true;
    log(`${sig}: stopping pods`);
    const hard = setTimeout(() => process.exit(1), 45_000);
    kubelet
      .stop()
      .then(() => {
        clearTimeout(hard);
        log('stopped');
        process.exit(0);
      })
      .catch((err: unknown) => {
        log(`stop failed: ${(err as Error).message}`);
        process.exit(1);
      });
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
}

main().catch((err: unknown) => {
  process.stderr.write(`kubelet: ${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
