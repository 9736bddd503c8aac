import { describe, expect, it } from 'vitest';
import { loadOperatorConfig } from './operator-config.js';

describe('loadOperatorConfig', () => {
  it('defaults every setting, the node image from the operator version', () => {
    const config = loadOperatorConfig({}, '0.1.0');
    expect(config).toMatchObject({
      WATCH_NAMESPACES: [],
      LEADER_ELECTION: true,
      WATCH_SECRETS: true,
      DEFAULT_NODE_IMAGE: 'eventdb:0.1.0',
      nodeAccess: 'port-forward',
      probeHost: '0.0.0.0',
      probePort: 8080,
    });
  });

  it('reads namespaces, booleans and the access mode in the cluster', () => {
    const config = loadOperatorConfig(
      { WATCH_NAMESPACES: 'a, b,', LEADER_ELECTION: 'false', WATCH_SECRETS: 'false', KUBERNETES_SERVICE_HOST: '10.96.0.1', PROBE_ADDRESS: '127.0.0.1:0' },
      '0.1.0',
    );
    expect(config).toMatchObject({ WATCH_NAMESPACES: ['a', 'b'], LEADER_ELECTION: false, WATCH_SECRETS: false, nodeAccess: 'pod-ip', probeHost: '127.0.0.1', probePort: 0 });
  });

  it('names every bad setting', () => {
    expect(() => loadOperatorConfig({ LEADER_ELECTION: 'yes', WORKERS: '0', WATCH_SECRETS: 'no' }, '0.1.0')).toThrow(/LEADER_ELECTION[\s\S]*WORKERS[\s\S]*WATCH_SECRETS/);
  });
});
