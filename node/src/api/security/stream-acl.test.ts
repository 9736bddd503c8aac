import { describe, expect, it } from 'vitest';

import {
  effectiveRoles,
  parseAclObject,
  parseSystemSettings,
  resolveAclTarget,
  rolesAdmit,
} from './stream-acl.js';

const alice = { login: 'alice', groups: ['devs'] };

describe('stream-acl', () => {
  it('maps metastream access onto the original stream', () => {
    expect(resolveAclTarget('$$orders', 'r')).toEqual({ stream: 'orders', access: 'mr' });
    expect(resolveAclTarget('$$orders', 'w')).toEqual({ stream: 'orders', access: 'mw' });
    expect(resolveAclTarget('$$$system', 'r')).toEqual({ stream: '$system', access: 'mr' });
    expect(resolveAclTarget('orders', 'd')).toEqual({ stream: 'orders', access: 'd' });
  });

  it('takes roles from the stream ACL, then settings, then the default, per action', () => {
    const settings = { userStreamAcl: { w: ['writers'] }, systemStreamAcl: { r: ['$ops'] } };
    expect(effectiveRoles('s', 'r', { r: ['alice'] }, settings)).toEqual(['alice']);
    expect(effectiveRoles('s', 'w', { r: ['alice'] }, settings)).toEqual(['writers']);
    expect(effectiveRoles('s', 'd', { r: ['alice'] }, settings)).toEqual(['$all']);
    expect(effectiveRoles('$s', 'r', undefined, settings)).toEqual(['$ops']);
    expect(effectiveRoles('$s', 'w', undefined, settings)).toEqual(['$admins']);
    expect(effectiveRoles('s', 'r', { r: [] }, settings)).toEqual([]);
  });

  it('admits by $all, by group and by login name; anonymous only by $all', () => {
    expect(rolesAdmit(['$all'], undefined)).toBe(true);
    expect(rolesAdmit(['devs'], alice)).toBe(true);
    expect(rolesAdmit(['alice'], alice)).toBe(true);
    expect(rolesAdmit(['bob', '$ops'], alice)).toBe(false);
    expect(rolesAdmit(['devs'], undefined)).toBe(false);
    expect(rolesAdmit([], alice)).toBe(false);
    expect(rolesAdmit(['$admins'], { login: '$admins', groups: [] })).toBe(false);
  });

  it('parses $acl objects and $settings leniently', () => {
    expect(parseAclObject({ $r: 'a', $w: ['b', 'c'], $d: 5, $mr: [] })).toEqual({
      r: ['a'],
      w: ['b', 'c'],
      mr: [],
    });
    expect(parseAclObject('nope')).toBeUndefined();
    expect(parseSystemSettings({ $userStreamAcl: { $r: '$all' } })).toEqual({
      userStreamAcl: { r: ['$all'] },
    });
    expect(parseSystemSettings(null)).toEqual({});
    expect(parseSystemSettings({ $systemStreamAcl: [1] })).toEqual({});
  });
});
