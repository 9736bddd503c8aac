import { describe, expect, it } from 'vitest';
import { checkNodeConfiguration } from './node-configuration.js';

describe('checkNodeConfiguration', () => {
  it('accepts node options with their PascalCase keys and values of their kinds', () => {
    const check = checkNodeConfiguration({ MaxMemTableSize: 5000, DisableScavengeMerging: true, LogLevel: 'debug' });
    expect(check).toEqual({
      ok: true,
      configuration: { MaxMemTableSize: 5000, DisableScavengeMerging: true, LogLevel: 'debug' },
    });
  });

  it('accepts an absent configuration', () => {
    expect(checkNodeConfiguration(undefined)).toEqual({ ok: true, configuration: {} });
  });

  it('names a misspelt key', () => {
    const check = checkNodeConfiguration({ MaxMemTabelSize: 5000 });
    expect(check).toEqual({ ok: false, issues: ['spec.configuration.MaxMemTabelSize: unknown node option'] });
  });

  it('names a value of the wrong kind or out of range', () => {
    const check = checkNodeConfiguration({ MaxMemTableSize: 0, MemDb: 'yes' });
    expect(check.ok).toBe(false);
    const issues = check.ok ? [] : check.issues;
    expect(issues.some((issue) => issue.startsWith('spec.configuration.MaxMemTableSize:'))).toBe(true);
    expect(issues.some((issue) => issue.startsWith('spec.configuration.MemDb:'))).toBe(true);
  });

  it('takes an option under its alias, but not under both names', () => {
    expect(checkNodeConfiguration({ AdvertiseHttpPortToClientAs: 80 }).ok).toBe(true);
    expect(checkNodeConfiguration({ AdvertiseHttpPortToClientAs: 80, AdvertiseNodePortToClientAs: 81 })).toEqual({
      ok: false,
      issues: ['spec.configuration: AdvertiseNodePortToClientAs and AdvertiseHttpPortToClientAs are the same option: give one'],
    });
  });

  it('refuses options the operator sets itself, naming the spec field to use', () => {
    const check = checkNodeConfiguration({ NodePort: 2114, HttpPort: 2114, DefaultAdminPassword: 'x' });
    expect(check.ok).toBe(false);
    const issues = check.ok ? [] : check.issues;
    expect(issues).toContain('spec.configuration.NodePort: managed by the operator: the node port is fixed at 2113');
    expect(issues).toContain('spec.configuration.HttpPort: managed by the operator: the node port is fixed at 2113');
    expect(issues).toContain(
      'spec.configuration.DefaultAdminPassword: managed by the operator: set spec.users.adminPasswordSecret',
    );
  });
});
