import { describe, expect, it } from 'vitest';
import type { EventDBClusterStatus } from '../../api/eventdb-cluster.js';
import type { ObservedMember, PodView } from './observe.js';
import { certificatesCondition, computeStatus, type StatusInput } from './status.js';

function pod(name: string, ready = true): PodView {
  return { name, kind: 'quorum', ordinal: Number(name.split('-')[1]), uid: name, revision: 'r', clusterSize: 3, ready, terminating: false, ip: '10.0.0.1', image: 'eventdb:1', roleLabel: undefined, phase: 'Running', servesTls: true, object: { apiVersion: 'v1', kind: 'Pod', metadata: { name } } };
}

function input(changes: Partial<StatusInput> = {}): StatusInput {
  const pods = [pod('orders-0'), pod('orders-1'), pod('orders-2')];
  const members = new Map<string, ObservedMember>(pods.map((p, index) => [p.name, { pod: p.name, role: index === 0 ? 'Leader' : 'Follower', alive: true }]));
  return {
    name: 'orders',
    generation: 4,
    previous: undefined,
    nowIso: '2026-03-04T10:00:00.000Z',
    paused: false,
    replicas: 3,
    readOnlyReplicas: 0,
    clusterSize: 3,
    pods,
    members,
    membersObserved: true,
    leader: 'orders-0',
    operation: undefined,
    tls: { status: 'Unknown', reason: 'TlsDisabled', message: '' },
    ...changes,
  };
}

const condition = (status: EventDBClusterStatus, type: string) => status.conditions?.find((entry) => entry.type === type);

describe('computeStatus', () => {
  it('reports a healthy cluster Ready for the generation it saw (kstatus Current)', () => {
    const status = computeStatus(input());
    expect(status).toMatchObject({ phase: 'Ready', observedGeneration: 4, replicas: 3, readyReplicas: 3, leader: 'orders-0', image: 'eventdb:1', selector: 'eventdb.io/cluster=orders' });
    expect(condition(status, 'Ready')).toMatchObject({ status: 'True', observedGeneration: 4 });
    expect(condition(status, 'Reconciling')).toMatchObject({ status: 'False' });
    expect(condition(status, 'Stalled')).toMatchObject({ status: 'False' });
    expect(condition(status, 'QuorumHealthy')).toMatchObject({ status: 'True' });
    expect(condition(status, 'Degraded')).toMatchObject({ status: 'False' });
  });

  it('is Degraded, still with quorum, when a node of a cluster that was Ready goes down', () => {
    const previous = computeStatus(input());
    const status = computeStatus(input({ previous, pods: [pod('orders-0'), pod('orders-1'), pod('orders-2', false)] }));
    expect(status.phase).toBe('Degraded');
    expect(condition(status, 'Degraded')).toMatchObject({ status: 'True', reason: 'NodesNotReady', message: 'not ready: orders-2' });
    expect(condition(status, 'Reconciling')).toMatchObject({ status: 'True' });
    expect(condition(status, 'QuorumHealthy')).toMatchObject({ status: 'True' });
  });

  it('is Degraded, not Ready, when several nodes claim to lead', () => {
    const status = computeStatus(input({ leaderClaimants: ['orders-0', 'orders-1'] }));
    expect(status.phase).not.toBe('Ready');
    expect(condition(status, 'Degraded')).toMatchObject({ status: 'True', reason: 'MultipleLeaders' });
  });

  it('loses quorum without a leader', () => {
    const members = new Map<string, ObservedMember>([['orders-0', { pod: 'orders-0', role: 'Unknown', alive: true }]]);
    const status = computeStatus(input({ members, leader: undefined }));
    expect(condition(status, 'QuorumHealthy')).toMatchObject({ status: 'False', reason: 'NoLeader' });
  });

  it('is Stalled and Failed with a spec it cannot act on (kstatus Failed)', () => {
    const status = computeStatus(input({ blocked: { reason: 'InvalidSpec', message: 'spec.replicas: must be 1, 3 or 5' } }));
    expect(status.phase).toBe('Failed');
    expect(condition(status, 'Stalled')).toMatchObject({ status: 'True', reason: 'InvalidSpec' });
    expect(condition(status, 'Ready')).toMatchObject({ status: 'False', message: 'spec.replicas: must be 1, 3 or 5' });
  });

  it('says Updating, with what it waits for, during an operation', () => {
    const operation = { id: 'rollingupdate-1', kind: 'RollingUpdate' as const, step: 'restart orders-2', startedAt: 't', waitingFor: 'waiting for a maintenance window' };
    const status = computeStatus(input({ operation, waiting: { reason: 'WaitingForMaintenanceWindow', message: 'waiting for a maintenance window' } }));
    expect(status.phase).toBe('Updating');
    expect(condition(status, 'Ready')).toMatchObject({ status: 'False', reason: 'WaitingForMaintenanceWindow' });
    expect(condition(status, 'Progressing')).toMatchObject({ status: 'True', reason: 'RollingUpdate', message: 'waiting for a maintenance window' });
  });

  it('keeps the last image while nodes run different ones', () => {
    const previous = computeStatus(input());
    const mixed = [pod('orders-0'), pod('orders-1'), { ...pod('orders-2'), image: 'eventdb:2' }];
    expect(computeStatus(input({ previous, pods: mixed })).image).toBe('eventdb:1');
  });
});

describe('certificatesCondition', () => {
  const pods = [pod('orders-0'), pod('orders-1')];
  const served = (fingerprints: (string | undefined)[], extra: Partial<ObservedMember> = {}): Map<string, ObservedMember> =>
    new Map(
      pods.map((p, index) => [
        p.name,
        { pod: p.name, role: 'Follower', alive: true, ...(fingerprints[index] === undefined ? {} : { certificateFingerprint: fingerprints[index] }), ...extra },
      ]),
    );
  const base = { mode: 'SelfSigned' as const, secretName: 'orders-node-tls', expectedFingerprint: 'sha256:new', pods };

  it('is True only when every node that answered serves the certificate in the Secret', () => {
    expect(certificatesCondition({ ...base, members: served(['sha256:new', 'sha256:new']) })).toMatchObject({ status: 'True', reason: 'CurrentCertificateServed' });
    const old = certificatesCondition({ ...base, members: served(['sha256:new', 'sha256:old']) });
    expect(old).toMatchObject({ status: 'False', reason: 'OldCertificateServed' });
    expect(old.message).toMatch(/^orders-1 serve/);
  });

  it('is Unknown before any node answered, and with tls.mode Disabled', () => {
    expect(certificatesCondition({ ...base, members: served([undefined, undefined]) })).toMatchObject({ status: 'Unknown', reason: 'NotObserved' });
    expect(certificatesCondition({ ...base, mode: 'Disabled', members: served([]) })).toMatchObject({ status: 'Unknown', reason: 'TlsDisabled' });
  });

  it('is False when a node was refused or still runs without TLS', () => {
    const refused = certificatesCondition({ ...base, members: served(['sha256:new', undefined], { tlsProblem: 'node certificate refused: self-signed certificate in certificate chain' }) });
    expect(refused).toMatchObject({ status: 'False', reason: 'CertificateNotTrusted' });
    expect(refused.message).toContain('self-signed certificate');
    const plain = certificatesCondition({ ...base, pods: [pod('orders-0'), { ...pod('orders-1'), servesTls: false }], members: served(['sha256:new', undefined]) });
    expect(plain).toMatchObject({ status: 'False', reason: 'NodesServePlainHttp' });
    expect(plain.message).toContain('orders-1');
  });
});
