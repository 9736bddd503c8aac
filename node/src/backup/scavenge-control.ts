/**
 * Stops a running scavenge through the node's admin API before a file-copy backup and starts it
 * again after (spec: "Do not take file-copy backups while a scavenge runs (stop it, back up,
 * resume)"): `GET /admin/scavenge/current`, `DELETE /admin/scavenge/{id}` (answers once stopped),
 * and `POST /admin/scavenge`, which resumes the stopped run where it ended.
 */
import { EventDbError } from '../errors.js';

export interface NodeAccess {
  /** e.g. `http://127.0.0.1:2113` */
  readonly url: string;
  readonly username: string;
  readonly password: string;
}

export interface ScavengeControl {
  /** Stops the running scavenge, if any; resolves with its id, or undefined when none ran. */
  stopRunning(): Promise<string | undefined>;
  /** Starts a scavenge (resuming the stopped one); resolves with the new run's id. */
  resume(): Promise<string>;
}

const TIMEOUT_MS = 120_000;

export function createScavengeControl(access: NodeAccess): ScavengeControl {
  const base = access.url.replace(/\/+$/, '');
  const headers = {
    authorization: `Basic ${Buffer.from(`${access.username}:${access.password}`).toString('base64')}`,
    accept: 'application/json',
  };
  const call = async (method: string, pathName: string, allowNotFound = false): Promise<unknown> => {
    let response: Response;
    try {
      response = await fetch(`${base}${pathName}`, { method, headers, signal: AbortSignal.timeout(TIMEOUT_MS) });
    } catch (err: unknown) {
      throw new EventDbError('EDB_BACKUP_FAILED', `cannot reach the node at ${base} (${method} ${pathName}): ${err instanceof Error ? err.message : String(err)}`, { cause: err });
    }
    const text = await response.text();
    if (allowNotFound && response.status === 404) return undefined;
    if (!response.ok) {
      throw new EventDbError('EDB_BACKUP_FAILED', `${method} ${base}${pathName} answered ${response.status}${text === '' ? '' : `: ${text.slice(0, 200)}`}`);
    }
    try {
      return text === '' ? undefined : JSON.parse(text);
    } catch {
      return text;
    }
  };
  return {
    async stopRunning() {
      const current = (await call('GET', '/admin/scavenge/current')) as { scavengeId?: unknown } | undefined;
      const id = typeof current?.scavengeId === 'string' ? current.scavengeId : '';
      if (id === '') return undefined;
      // 404: it ended by itself meanwhile; nothing to resume then.
      const stopped = await call('DELETE', `/admin/scavenge/${encodeURIComponent(id)}`, true);
      return stopped === undefined ? undefined : id;
    },
    async resume() {
      const started = (await call('POST', '/admin/scavenge')) as { scavengeId?: unknown } | undefined;
      return typeof started?.scavengeId === 'string' ? started.scavengeId : '';
    },
  };
}
