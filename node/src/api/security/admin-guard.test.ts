import { describe, expect, it } from 'vitest';

import { lastAdminRefusal, type AdminView } from './admin-guard.js';

const admin: AdminView = { loginName: 'admin', groups: ['$admins'], disabled: false };
const ops: AdminView = { loginName: 'ops', groups: ['$ops'], disabled: false };
const root: AdminView = { loginName: 'root', groups: ['$admins', 'devs'], disabled: false };

describe('lastAdminRefusal', () => {
  it('refuses deleting, disabling or demoting the only enabled admin, with a message', () => {
    expect(lastAdminRefusal([admin, ops], 'admin', undefined)).toMatch(/last enabled member of \$admins and cannot be deleted/);
    expect(lastAdminRefusal([admin, ops], 'admin', { groups: ['$admins'], disabled: true })).toMatch(/cannot be disabled/);
    expect(lastAdminRefusal([admin, ops], 'admin', { groups: [], disabled: false })).toMatch(/cannot be removed from \$admins/);
  });

  it('allows it when another enabled admin remains', () => {
    expect(lastAdminRefusal([admin, root], 'admin', undefined)).toBeUndefined();
    expect(lastAdminRefusal([admin, root], 'root', { groups: [], disabled: false })).toBeUndefined();
  });

  it('a disabled admin does not count as the one that remains', () => {
    expect(lastAdminRefusal([admin, { ...root, disabled: true }], 'admin', undefined)).toBeDefined();
  });

  it('changes that keep the admin enabled, and changes to other users, are allowed', () => {
    expect(lastAdminRefusal([admin], 'admin', { groups: ['$admins', 'x'], disabled: false })).toBeUndefined();
    expect(lastAdminRefusal([admin, ops], 'ops', undefined)).toBeUndefined();
    expect(lastAdminRefusal([admin], 'nobody', undefined)).toBeUndefined();
  });
});
