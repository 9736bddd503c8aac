/**
 * A pod's revision: a short hash of everything whose change needs the node restarted (the
 * container, its environment and the configuration file), but not of what changes in place
 * (role labels) nor of the cluster size, which the scale operation handles. A pod whose
 * revision differs from the cluster's update revision is restarted by the rolling update.
 */
import { createHash } from 'node:crypto';

/** JSON with object keys sorted, so equal content always hashes the same. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, entry]) => entry !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([key, entry]) => `${JSON.stringify(key)}:${canonicalJson(entry)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

export function hashOf(...parts: unknown[]): string {
  const hash = createHash('sha256');
  for (const part of parts) hash.update(canonicalJson(part)).update('\n');
  return hash.digest('hex').slice(0, 10);
}
