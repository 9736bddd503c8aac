/**
 * The rule that keeps a node administrable: the last enabled member of `$admins` can be neither
 * deleted, nor disabled, nor taken out of `$admins`. Without it one `DELETE /users/admin` locks
 * every administrator out for good (a restart does not recreate a deleted default user, and
 * `$ops` may not manage users). Pure: the caller reads the users and serialises the changes.
 */
import { ROLE_ADMINS } from './stream-acl.js';

export interface AdminView {
  readonly loginName: string;
  readonly groups: readonly string[];
  readonly disabled: boolean;
}

export function isEnabledAdmin(user: AdminView): boolean {
  return !user.disabled && user.groups.includes(ROLE_ADMINS);
}

/**
 * The refusal message when changing `login` to `after` (undefined: deleting it) would leave no
 * enabled `$admins` member; undefined when the change is allowed.
 */
export function lastAdminRefusal(
  users: readonly AdminView[],
  login: string,
  after: Pick<AdminView, 'groups' | 'disabled'> | undefined,
): string | undefined {
  const current = users.find((u) => u.loginName === login);
  if (current === undefined || !isEnabledAdmin(current)) return undefined;
  if (after !== undefined && isEnabledAdmin({ loginName: login, ...after })) return undefined;
  const others = users.filter((u) => u.loginName !== login && isEnabledAdmin(u));
  if (others.length > 0) return undefined;
  const action = after === undefined ? 'deleted' : after.disabled ? 'disabled' : `removed from ${ROLE_ADMINS}`;
  return `'${login}' is the last enabled member of ${ROLE_ADMINS} and cannot be ${action}: make another user an enabled member of ${ROLE_ADMINS} first`;
}
