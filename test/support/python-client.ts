/**
 * The official Python client (kurrentdbclient from PyPI, grpcio underneath) in a virtual
 * environment that test/support/python-client.sh makes (run by `make test-tools`), cached by
 * version outside the checkout.
 */
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';

export const PYTHON_CLIENT_VERSION = '1.3.5';

/** The environment's python; throws, naming the command that installs it, when it is missing. */
export function pythonClientPython(): string {
  const root = process.env['EVENTDB_PY_CACHE'] ?? join(process.env['XDG_CACHE_HOME'] ?? join(homedir(), '.cache'), 'eventdb-py');
  const dir = join(root, `kurrentdbclient-${PYTHON_CLIENT_VERSION}`);
  if (!existsSync(join(dir, '.complete'))) {
    throw new Error(`the Python client kurrentdbclient ${PYTHON_CLIENT_VERSION} is not installed in ${dir}: run \`make test-tools\` (test/support/python-client.sh)`);
  }
  return join(dir, 'bin', 'python');
}
