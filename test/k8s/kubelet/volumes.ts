// Volume helpers of the local kubelet: the kubelet's atomic writer (..data symlink swap) and
// the projections of ConfigMaps, Secrets and the downward API into files.
import fs from 'node:fs';
import path from 'node:path';
import crypto from 'node:crypto';
import type { V1KeyToPath, V1Pod } from '@kubernetes/client-node';

export interface FileEntry {
  data: Buffer;
  mode: number;
}

const DATA_DIR = '..data';

function payloadHash(files: Map<string, FileEntry>): string {
  const h = crypto.createHash('sha256');
  for (const [p, f] of [...files.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    h.update(p).update('\0').update(String(f.mode)).update('\0').update(f.data).update('\0');
  }
  return h.digest('hex');
}

const lastWritten = new Map<string, string>();

function validRelPath(p: string): boolean {
  if (!p || path.isAbsolute(p)) return false;
  const parts = p.split('/');
  return !parts.some((x) => x === '..' || x === '' || x.startsWith('..'));
}

/**
 * Writes `files` into `dir` the way the kubelet's AtomicWriter does: the payload goes to a fresh
 * timestamped directory, `..data` is switched to it by a symlink rename (atomic), every top-level
 * name is a symlink through `..data`, and the previous payload directory is removed afterwards.
 * Returns true when something changed.
 */
export function atomicWrite(dir: string, files: Map<string, FileEntry>): boolean {
  const hash = payloadHash(files);
  const dataLink = path.join(dir, DATA_DIR);
  if (lastWritten.get(dir) === hash && fs.existsSync(dataLink)) return false;
  fs.mkdirSync(dir, { recursive: true });
  let oldTarget: string | undefined;
  try {
    oldTarget = fs.readlinkSync(dataLink);
  } catch {
    oldTarget = undefined;
  }
  const stamp = new Date().toISOString().replace(/[-:]/g, '_').replace('.', '_');
  const tsDir = `..${stamp}.${crypto.randomBytes(4).toString('hex')}`;
  const tsPath = path.join(dir, tsDir);
  fs.mkdirSync(tsPath, { mode: 0o755 });
  for (const [rel, f] of files) {
    if (!validRelPath(rel)) continue;
    const target = path.join(tsPath, rel);
    fs.mkdirSync(path.dirname(target), { recursive: true });
    fs.writeFileSync(target, f.data, { mode: f.mode });
    fs.chmodSync(target, f.mode);
  }
  const tmpLink = path.join(dir, `${DATA_DIR}_tmp`);
  fs.rmSync(tmpLink, { force: true });
  fs.symlinkSync(tsDir, tmpLink);
  fs.renameSync(tmpLink, dataLink);
  const topLevel = new Set([...files.keys()].filter(validRelPath).map((p) => p.split('/')[0] ?? p));
  for (const name of topLevel) {
    const link = path.join(dir, name);
    let exists = false;
    try {
      fs.lstatSync(link);
      exists = true;
    } catch {
      exists = false;
    }
    if (!exists) fs.symlinkSync(path.join(DATA_DIR, name), link);
  }
  for (const entry of fs.readdirSync(dir)) {
    if (entry.startsWith('..')) continue;
    if (!topLevel.has(entry)) fs.rmSync(path.join(dir, entry), { force: true, recursive: true });
  }
  if (oldTarget && oldTarget !== tsDir) fs.rmSync(path.join(dir, oldTarget), { recursive: true, force: true });
  lastWritten.set(dir, hash);
  return true;
}

export function forgetVolume(dir: string): void {
  lastWritten.delete(dir);
}

/** Maps key/value data to files, honouring `items` (key -> path, mode) and `defaultMode`. */
export function projectKeys(
  data: Map<string, Buffer>,
  items: V1KeyToPath[] | undefined,
  defaultMode: number | undefined,
  optional: boolean,
): Map<string, FileEntry> {
  const mode = defaultMode ?? 0o644;
  const out = new Map<string, FileEntry>();
  if (items && items.length > 0) {
    for (const item of items) {
      const v = data.get(item.key);
      if (v === undefined) {
        if (optional) continue;
        throw new Error(`key ${item.key} not found`);
      }
      out.set(item.path, { data: v, mode: item.mode ?? mode });
    }
  } else {
    for (const [k, v] of data) out.set(k, { data: v, mode });
  }
  return out;
}

export function configMapData(cm: { data?: Record<string, string>; binaryData?: Record<string, string> }): Map<string, Buffer> {
  const out = new Map<string, Buffer>();
  for (const [k, v] of Object.entries(cm.data ?? {})) out.set(k, Buffer.from(v, 'utf8'));
  for (const [k, v] of Object.entries(cm.binaryData ?? {})) out.set(k, Buffer.from(v, 'base64'));
  return out;
}

export function secretData(s: { data?: Record<string, string>; stringData?: Record<string, string> }): Map<string, Buffer> {
  const out = new Map<string, Buffer>();
  for (const [k, v] of Object.entries(s.data ?? {})) out.set(k, Buffer.from(v, 'base64'));
  for (const [k, v] of Object.entries(s.stringData ?? {})) out.set(k, Buffer.from(v, 'utf8'));
  return out;
}

function formatMap(m: Record<string, string> | undefined): string {
  return Object.entries(m ?? {})
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([k, v]) => `${k}=${JSON.stringify(v)}`)
    .join('\n');
}

/** Resolves a downward-API fieldRef path against the pod (env and volume flavours share this). */
export function fieldRefValue(pod: V1Pod, fieldPath: string, podIP: string): string {
  const md = pod.metadata;
  const m = /^metadata\.(labels|annotations)\['(.+)'\]$/.exec(fieldPath);
  if (m) {
    const bag = m[1] === 'labels' ? md?.labels : md?.annotations;
    return bag?.[m[2] ?? ''] ?? '';
  }
  switch (fieldPath) {
    case 'metadata.name':
      return md?.name ?? '';
    case 'metadata.namespace':
      return md?.namespace ?? '';
    case 'metadata.uid':
      return md?.uid ?? '';
    case 'metadata.labels':
      return formatMap(md?.labels);
    case 'metadata.annotations':
      return formatMap(md?.annotations);
    case 'spec.nodeName':
      return pod.spec?.nodeName ?? '';
    case 'spec.serviceAccountName':
      return pod.spec?.serviceAccountName ?? '';
    case 'status.podIP':
    case 'status.podIPs':
      return podIP;
    case 'status.hostIP':
    case 'status.hostIPs':
      return '127.0.0.1';
    default:
      throw new Error(`unsupported downward API fieldPath ${fieldPath}`);
  }
}
