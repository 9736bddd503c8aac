import { X509Certificate } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { buildConfigMap } from './config-map.js';
import { effectiveSpec, type EffectiveSpec } from './effective-spec.js';
import type { ClusterIdentity } from './labels.js';
import { replicaOrdinal, votingOrdinal } from './names.js';
import { renderNodeConfigFile } from './node-settings.js';
import { buildPdb, quorumOf } from './pdb.js';
import { buildPod, podRevision } from './pod.js';
import {
  buildNodeTlsSecret,
  decodeSecretValue,
  generatePassword,
  newCertificateAuthority,
  nodeCertificateProblem,
} from './secrets.js';
import { buildServices } from './services.js';
import { buildClaims } from './storage.js';

const cluster: ClusterIdentity = { name: 'orders', namespace: 'shop', uid: 'uid-1' };
const defaults = { nodeImage: 'eventdb:0.1.0', dataSize: '10Gi' };

function spec(raw: unknown = {}): EffectiveSpec {
  const check = effectiveSpec('orders', raw, defaults);
  if (!check.ok) throw new Error(check.issues.join('; '));
  return check.spec;
}

function pod(raw: unknown = {}, options: { restartedAt?: string; clusterSize?: number; name?: string } = {}) {
  const s = spec(raw);
  return buildPod({
    cluster,
    spec: s,
    pod: options.name ?? 'orders-1',
    nodeKind: 'quorum',
    clusterSize: options.clusterSize ?? s.replicas,
    configFile: renderNodeConfigFile(s),
    restartedAt: options.restartedAt ?? '',
  });
}

type Json = Record<string, any>;

describe('effectiveSpec', () => {
  it('fills in the defaults the CRD leaves to the operator', () => {
    const s = spec({});
    expect(s).toMatchObject({
      replicas: 3,
      readOnlyReplicas: 0,
      image: 'eventdb:0.1.0',
      imagePullPolicy: 'IfNotPresent',
      storage: { data: { size: '10Gi' } },
      tls: { mode: 'SelfSigned', reservedNodeCommonName: 'eventdb-node', reload: 'Signal' },
      users: { admin: { name: 'orders-admin', key: 'password', generated: true }, ops: { name: 'orders-ops', generated: true } },
      updateStrategy: 'RollingUpdate',
      paused: false,
    });
  });

  it('names every problem the CRD could not catch', () => {
    const check = effectiveSpec(
      'orders',
      {
        replicas: 2,
        configuration: { MaxMemTabelSize: 1 },
        maintenanceWindows: [{ schedule: '0 99 * * *', duration: '1h' }, { schedule: '0 1 * * *', timeZone: 'Nowhere/City', duration: '1h' }],
      },
      defaults,
    );
    expect(check.ok).toBe(false);
    const issues = check.ok ? [] : check.issues;
    expect(issues).toContain('spec.replicas: must be 1, 3 or 5');
    expect(issues).toContain('spec.configuration.MaxMemTabelSize: unknown node option');
    expect(issues.some((issue) => issue.startsWith('spec.maintenanceWindows[0]: schedule'))).toBe(true);
    expect(issues).toContain('spec.maintenanceWindows[1].timeZone: unknown time zone Nowhere/City');
  });
});

describe('node configuration file', () => {
  it('holds the user options only', () => {
    expect(parse(renderNodeConfigFile(spec({ configuration: { MaxMemTableSize: 5000, LogLevel: 'debug' } })))).toEqual({ LogLevel: 'debug', MaxMemTableSize: 5000 });
  });

  it('sets the operator-owned options in the environment, which the node ranks above its file', () => {
    const env = (pod({ storage: { data: { size: '1Gi' }, index: { size: '1Gi' } } }) as Json)['spec'].containers[0].env as Json[];
    expect(env).toEqual(
      expect.arrayContaining([
        { name: 'SERVICE_DB', value: '/data/db' },
        { name: 'SERVICE_INDEX', value: '/index' },
        { name: 'SERVICE_NODE_IP', value: '0.0.0.0' },
        { name: 'SERVICE_NODE_PORT', value: '2113' },
      ]),
    );
  });

  it('serves TLS by default: certificate options in the environment, no Insecure, HTTPS probes, the certificates mounted', () => {
    const p = pod() as Json;
    const container = p['spec'].containers[0];
    const env = container.env as Json[];
    expect(env).toEqual(
      expect.arrayContaining([
        { name: 'SERVICE_CERTIFICATE_FILE', value: '/etc/eventdb/tls/tls.crt' },
        { name: 'SERVICE_CERTIFICATE_PRIVATE_KEY_FILE', value: '/etc/eventdb/tls/tls.key' },
        { name: 'SERVICE_TRUSTED_ROOT_CERTIFICATES_PATH', value: '/etc/eventdb/tls/ca' },
        { name: 'SERVICE_CERTIFICATE_RESERVED_NODE_COMMON_NAME', value: 'eventdb-node' },
      ]),
    );
    expect(env.some((entry) => entry['name'] === 'SERVICE_INSECURE')).toBe(false);
    for (const probe of ['startupProbe', 'readinessProbe', 'livenessProbe']) {
      expect(container[probe].httpGet).toEqual({ path: '/health/live', port: 'http', scheme: 'HTTPS' });
    }
    expect(container.volumeMounts).toContainEqual({ name: 'tls', mountPath: '/etc/eventdb/tls', readOnly: true });
    const sources = (p['spec'].volumes as Json[]).find((volume) => volume['name'] === 'tls')?.['projected'].sources as Json[];
    expect(sources.map((source) => source['secret'].name)).toEqual(['orders-node-tls', 'orders-node-tls']);
    expect(sources[1]?.['secret'].items).toEqual([{ key: 'ca.crt', path: 'ca/ca.crt' }]);
  });

  it('with tls.mode Secret mounts the user certificate and trusts tls.caSecret, or ca.crt beside the certificate', () => {
    const sourcesOf = (p: Json): Json[] => (p['spec'].volumes as Json[]).find((volume) => volume['name'] === 'tls')?.['projected'].sources as Json[];
    const withCa = pod({ tls: { mode: 'Secret', certificateSecret: { name: 'orders-tls' }, caSecret: { name: 'orders-ca-bundle' } } }) as Json;
    // A named CA Secret is mounted whole (every .crt key trusted: CA migration) as the trusted-roots folder.
    expect(sourcesOf(withCa).map((source) => source['secret'].name)).toEqual(['orders-tls']);
    expect((withCa['spec'].volumes as Json[]).find((volume) => volume['name'] === 'tls-ca')?.['secret']).toEqual({ secretName: 'orders-ca-bundle' });
    expect(withCa['spec'].containers[0].volumeMounts).toContainEqual({ name: 'tls-ca', mountPath: '/etc/eventdb/tls-ca', readOnly: true });
    expect(withCa['spec'].containers[0].env).toContainEqual({ name: 'SERVICE_TRUSTED_ROOT_CERTIFICATES_PATH', value: '/etc/eventdb/tls-ca' });
    const beside = pod({ tls: { mode: 'Secret', certificateSecret: { name: 'orders-tls' } } }) as Json;
    expect(sourcesOf(beside).map((source) => source['secret'].name)).toEqual(['orders-tls', 'orders-tls']);
    expect(beside['spec'].containers[0].readinessProbe.httpGet.scheme).toBe('HTTPS');
  });

  it('with tls.mode Disabled runs the node with Insecure, HTTP probes and no certificates', () => {
    const disabled = pod({ tls: { mode: 'Disabled' } }) as Json;
    const container = disabled['spec'].containers[0];
    expect(container.env as Json[]).toContainEqual({ name: 'SERVICE_INSECURE', value: 'true' });
    expect((container.env as Json[]).some((entry) => String(entry['name']).startsWith('SERVICE_CERTIFICATE'))).toBe(false);
    for (const probe of ['startupProbe', 'readinessProbe', 'livenessProbe']) expect(container[probe].httpGet.scheme).toBe('HTTP');
    expect((disabled['spec'].volumes as Json[]).some((volume) => volume['name'] === 'tls')).toBe(false);
    // Switching TLS on or off restarts the nodes: it is part of the revision.
    expect(podRevision({ cluster, spec: spec({ tls: { mode: 'Disabled' } }), nodeKind: 'quorum', configFile: '', restartedAt: '' })).not.toBe(
      podRevision({ cluster, spec: spec(), nodeKind: 'quorum', configFile: '', restartedAt: '' }),
    );
  });

  it('is written to the ConfigMap <cluster>-config', () => {
    const configMap = buildConfigMap(cluster, 'A: 1\n') as Json;
    expect(configMap['metadata'].name).toBe('orders-config');
    expect(configMap['data']).toEqual({ 'eventdb.conf': 'A: 1\n' });
  });
});

describe('buildPod', () => {
  it('labels the pod for the cluster, its kind and name, and makes the cluster its controlling owner', () => {
    const p = pod() as Json;
    expect(p['metadata'].labels).toMatchObject({
      'app.kubernetes.io/name': 'eventdb',
      'app.kubernetes.io/instance': 'orders',
      'app.kubernetes.io/managed-by': 'eventdb-operator',
      'eventdb.io/cluster': 'orders',
      'eventdb.io/node-kind': 'quorum',
      'eventdb.io/pod': 'orders-1',
    });
    expect(p['metadata'].ownerReferences).toEqual([
      { apiVersion: 'eventdb.io/v1alpha1', kind: 'EventDBCluster', name: 'orders', uid: 'uid-1', controller: true, blockOwnerDeletion: true },
    ]);
    expect(p['spec'].hostname).toBe('orders-1');
    expect(p['spec'].subdomain).toBe('orders-headless');
    expect(p['spec'].enableServiceLinks).toBe(false);
  });

  it('mounts its PVCs and the configuration, and takes the passwords from Secrets', () => {
    const p = pod({ storage: { data: { size: '1Gi' }, index: { size: '1Gi' } } }) as Json;
    const claims = p['spec'].volumes.filter((volume: Json) => volume['persistentVolumeClaim']).map((volume: Json) => volume['persistentVolumeClaim'].claimName);
    expect(claims).toEqual(['data-orders-1', 'index-orders-1']);
    const env = p['spec'].containers[0].env as Json[];
    expect(env).toContainEqual({ name: 'SERVICE_CONFIG', value: '/etc/eventdb/eventdb.conf' });
    expect(env).toContainEqual({ name: 'SERVICE_DEFAULT_ADMIN_PASSWORD', valueFrom: { secretKeyRef: { name: 'orders-admin', key: 'password' } } });
    expect(env).toContainEqual({ name: 'SERVICE_DEFAULT_OPS_PASSWORD', valueFrom: { secretKeyRef: { name: 'orders-ops', key: 'password' } } });
    expect(p['spec'].containers[0].readinessProbe.httpGet).toMatchObject({ path: '/health/live', port: 'http' });
  });

  it('changes revision with the image, the configuration and restartedAt, and not with the size or labels', () => {
    const revision = (p: Json): string => p['metadata'].annotations['eventdb.io/revision'];
    const base = revision(pod());
    expect(revision(pod({ image: 'eventdb:0.2.0' }))).not.toBe(base);
    expect(revision(pod({ configuration: { MaxMemTableSize: 5 } }))).not.toBe(base);
    expect(revision(pod({}, { restartedAt: '2026-03-01T00:00:00Z' }))).not.toBe(base);
    expect(revision(pod({ resources: { limits: { memory: '1Gi' } } }))).not.toBe(base);
    expect(revision(pod({}, { clusterSize: 5 }))).toBe(base);
    expect(revision(pod({}, { name: 'orders-2' }))).toBe(base);
    expect(revision(pod({ podTemplate: { metadata: { labels: { team: 'a' } } } }))).toBe(base);
  });

  it('computes the same revision through podRevision as on the pod', () => {
    const s = spec();
    const configFile = renderNodeConfigFile(s);
    const revision = podRevision({ cluster, spec: s, nodeKind: 'quorum', configFile, restartedAt: '' });
    expect((pod() as Json)['metadata'].annotations['eventdb.io/revision']).toBe(revision);
  });
});

describe('children', () => {
  it('names PVCs data-<pod> and index-<pod>, owned by the cluster', () => {
    const claims = buildClaims(cluster, spec({ storage: { data: { size: '2Gi', storageClassName: 'fast' }, index: { size: '1Gi' } } }), 'orders-0', 'quorum') as Json[];
    expect(claims.map((claim) => claim['metadata'].name)).toEqual(['data-orders-0', 'index-orders-0']);
    expect(claims[0]?.['spec']).toEqual({ accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '2Gi' } }, storageClassName: 'fast' });
    expect(claims[0]?.['metadata'].ownerReferences[0].uid).toBe('uid-1');
  });

  it('makes the three Services with the selectors of the contract', () => {
    const services = buildServices(cluster) as Json[];
    expect(services.map((service) => service['metadata'].name)).toEqual(['orders', 'orders-leader', 'orders-headless']);
    expect(services[1]?.['spec'].selector).toEqual({ 'eventdb.io/cluster': 'orders', 'eventdb.io/role': 'leader' });
    expect(services[2]?.['spec']).toMatchObject({ clusterIP: 'None', publishNotReadyAddresses: true });
    expect(services[0]?.['spec'].ports).toEqual([{ name: 'http', port: 2113, targetPort: 'http', protocol: 'TCP' }]);
  });

  it('keeps a quorum of voting nodes with the PDB', () => {
    expect([1, 3, 5].map(quorumOf)).toEqual([1, 2, 3]);
    const pdb = buildPdb(cluster, 5) as Json;
    expect(pdb['spec']).toMatchObject({ minAvailable: 3, selector: { matchLabels: { 'eventdb.io/cluster': 'orders', 'eventdb.io/node-kind': 'quorum' } } });
  });

  it('reads ordinals back from pod names', () => {
    expect(votingOrdinal('orders', 'orders-12')).toBe(12);
    expect(votingOrdinal('orders', 'orders-replica-1')).toBeUndefined();
    expect(replicaOrdinal('orders', 'orders-replica-1')).toBe(1);
    expect(votingOrdinal('orders', 'orders-x-1')).toBeUndefined();
  });
});

describe('secrets', () => {
  it('generates passwords of 24 unambiguous letters, different each time', () => {
    const a = generatePassword();
    const b = generatePassword();
    expect(a).toMatch(/^[A-HJ-NP-Za-km-z2-9]{24}$/);
    expect(a).not.toBe(b);
  });

  it('makes a node certificate for every pod and Service name, and sees when it must be made again', () => {
    const nowMs = Date.parse('2026-03-01T00:00:00Z');
    const ca = newCertificateAuthority(cluster, nowMs);
    const secret = buildNodeTlsSecret(cluster, ca, 'eventdb-node', nowMs);
    const certificatePem = decodeSecretValue(secret, 'tls.crt') ?? '';
    expect(decodeSecretValue(secret, 'ca.crt')).toBe(ca.certificatePem);
    expect(new X509Certificate(certificatePem).checkHost('orders-2.orders-headless.shop.svc.cluster.local')).toBeDefined();
    expect(nodeCertificateProblem(cluster, certificatePem, ca.certificatePem, 'eventdb-node', nowMs)).toBeUndefined();
    expect(nodeCertificateProblem(cluster, certificatePem, ca.certificatePem, 'other-cn', nowMs)).toBe('common name is not other-cn');
    expect(nodeCertificateProblem(cluster, certificatePem, ca.certificatePem, 'eventdb-node', nowMs + 340 * 86_400_000)).toBe('expires within 30 days');
    const otherCa = newCertificateAuthority(cluster, nowMs);
    expect(nodeCertificateProblem(cluster, certificatePem, otherCa.certificatePem, 'eventdb-node', nowMs)).toBe('not issued by the cluster CA');
    const renamed = { ...cluster, name: 'billing' };
    expect(nodeCertificateProblem(renamed, certificatePem, ca.certificatePem, 'eventdb-node', nowMs)).toMatch(/^lacks the name/);
  });
});
