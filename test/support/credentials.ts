/** HTTP Basic credentials for tests and benches. */

/** The Authorization header value for `login` and `password`. */
export function basic(login: string, password: string): string {
  return `Basic ${Buffer.from(`${login}:${password}`).toString('base64')}`;
}

/** The default admin user's credentials (admin/changeit). */
export const ADMIN_AUTHORIZATION = basic('admin', 'changeit');
