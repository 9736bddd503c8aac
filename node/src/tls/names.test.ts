import { describe, expect, it } from 'vitest';
import { certificateCoversHost, certificateNameMatches, commonNameMatchesReserved, isWildcardName } from './names.js';

describe('certificateNameMatches (RFC 6125)', () => {
  it('matches exact names case-insensitively, label by label', () => {
    expect(certificateNameMatches('node-1.example.com', 'NODE-1.example.COM')).toBe(true);
    expect(certificateNameMatches('node-1.example.com', 'node-2.example.com')).toBe(false);
    expect(certificateNameMatches('example.com', 'a.example.com')).toBe(false);
  });

  it('takes a wildcard only as the whole first label of a name of three labels or more', () => {
    expect(certificateNameMatches('*.example.com', 'node-1.example.com')).toBe(true);
    expect(certificateNameMatches('*.example.com', 'a.b.example.com')).toBe(false);
    expect(certificateNameMatches('*.example.com', 'example.com')).toBe(false);
    expect(certificateNameMatches('*.com', 'example.com')).toBe(false);
    expect(certificateNameMatches('n*.example.com', 'node.example.com')).toBe(false);
    expect(certificateNameMatches('node.*.com', 'node.example.com')).toBe(false);
  });

  it('compares IP addresses exactly and refuses empty labels', () => {
    expect(certificateNameMatches('127.0.0.1', '127.0.0.1')).toBe(true);
    expect(certificateNameMatches('127.0.0.1', '127.0.0.2')).toBe(false);
    expect(certificateNameMatches('*.0.0.1', '127.0.0.1')).toBe(false);
    expect(certificateNameMatches('a..example.com', 'a..example.com')).toBe(false);
    expect(certificateNameMatches('', 'x')).toBe(false);
  });
});

describe('commonNameMatchesReserved (as EventStoreDB matches a node certificate)', () => {
  it('accepts a common name the reserved name (maybe a wildcard) covers', () => {
    expect(commonNameMatchesReserved('eventdb-node', 'eventdb-node')).toBe(true);
    expect(commonNameMatchesReserved('node-1.cluster.test', '*.cluster.test')).toBe(true);
    expect(commonNameMatchesReserved('node-1.cluster.test', 'node-1.cluster.test')).toBe(true);
    expect(commonNameMatchesReserved('node-1.cluster.test', 'node-2.cluster.test')).toBe(false);
    expect(commonNameMatchesReserved('other', 'eventdb-node')).toBe(false);
    expect(commonNameMatchesReserved(undefined, 'eventdb-node')).toBe(false);
  });

  it('matches a wildcard common name only to the same reserved name', () => {
    expect(isWildcardName('*.cluster.test')).toBe(true);
    expect(isWildcardName('node.cluster.test')).toBe(false);
    expect(commonNameMatchesReserved('*.cluster.test', '*.cluster.test')).toBe(true);
    expect(commonNameMatchesReserved('*.cluster.test', 'node-1.cluster.test')).toBe(false);
  });
});

describe('certificateCoversHost', () => {
  const names = { dns: ['localhost', '*.nodes.test'], ip: ['127.0.0.1', '0:0:0:0:0:0:0:1'], commonName: 'ignored.example' };
  it('checks DNS names against DNS SANs and IP addresses against IP SANs', () => {
    expect(certificateCoversHost(names, 'localhost')).toBe(true);
    expect(certificateCoversHost(names, 'node-3.nodes.test')).toBe(true);
    expect(certificateCoversHost(names, '127.0.0.1')).toBe(true);
    expect(certificateCoversHost(names, '::1')).toBe(true);
    expect(certificateCoversHost(names, '127.0.0.2')).toBe(false);
    expect(certificateCoversHost(names, 'ignored.example')).toBe(false);
  });

  it('falls back to the common name only without SANs', () => {
    expect(certificateCoversHost({ dns: [], ip: [], commonName: 'node.example' }, 'node.example')).toBe(true);
    expect(certificateCoversHost({ dns: [], ip: [], commonName: 'node.example' }, 'other.example')).toBe(false);
  });
});
