/**
 * A backup's manifest, `<backup>/backup-manifest.json`: whose backup it is, how it was taken,
 * the checkpoints it holds, and every file with its size and SHA-256. It is written last
 * (temp file, fsync, rename, directory fsync), so a backup without one is incomplete; while a
 * backup writes, `<backup>/backup-in-progress.json` names the node, and restore and verify refuse.
 */
import { z } from 'zod';

export const MANIFEST_FILE = 'backup-manifest.json';
export const IN_PROGRESS_FILE = 'backup-in-progress.json';
export const MANIFEST_FORMAT = 1;

export const ManifestFileSchema = z.object({
  /** `db/<name>` or `index/<name>`. */
  path: z.string().regex(/^(db|index)\/[^\0]+$/).refine((p) => !p.split('/').some((part) => part === '..' || part === '.' || part === ''), 'no empty, . or .. segments'),
  sizeBytes: z.number().int().nonnegative(),
  sha256: z.string().regex(/^[0-9a-f]{64}$/),
  /** The backup copy's modification time, to reuse the checksum of an unchanged file. */
  mtimeMs: z.number(),
});
export type ManifestFile = z.infer<typeof ManifestFileSchema>;

export const ManifestSchema = z.object({
  format: z.literal(MANIFEST_FORMAT),
  /** full: the spec's simple full backup (restored with truncate.chk = chaser.chk); differential. */
  kind: z.enum(['full', 'differential']),
  /** The identity of the node the files come from (`<db>/eventdb.node-id`). */
  nodeId: z.string().min(1),
  source: z.object({ db: z.string(), index: z.string(), host: z.string() }),
  startedAt: z.string(),
  completedAt: z.string(),
  /** writer.chk of the source when the backup started. */
  writerAtStartPosition: z.number().int(),
  /** writer.chk and chaser.chk as copied into the backup. */
  writerPosition: z.number().int(),
  chaserPosition: z.number().int(),
  chunkSizeBytes: z.number().int().positive().optional(),
  files: z.array(ManifestFileSchema),
});
export type Manifest = z.infer<typeof ManifestSchema>;

export const InProgressSchema = z.object({ nodeId: z.string().min(1), startedAt: z.string(), pid: z.number().int() });
export type InProgress = z.infer<typeof InProgressSchema>;

/** Parses manifest JSON; throws a message naming the problem. */
export function parseManifest(text: string): Manifest {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err: unknown) {
    throw new Error(`the manifest is not JSON (${err instanceof Error ? err.message : String(err)})`);
  }
  const parsed = ManifestSchema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new Error(`the manifest is invalid: ${issue === undefined ? 'unknown' : `${issue.path.join('.')}: ${issue.message}`}`);
  }
  return parsed.data;
}

export interface ObservedFile {
  readonly path: string;
  readonly sizeBytes: number;
  /** Undefined when not hashed (size already differs). */
  readonly sha256?: string;
}

export interface VerifyProblem {
  readonly path: string;
  readonly problem: 'missing' | 'size' | 'checksum' | 'unexpected';
  readonly detail: string;
}

/** Compares the files found in a backup with its manifest. Pure. */
export function compareWithManifest(manifest: Manifest, observed: readonly ObservedFile[]): VerifyProblem[] {
  const problems: VerifyProblem[] = [];
  const seen = new Map(observed.map((f) => [f.path, f]));
  for (const expected of manifest.files) {
    const found = seen.get(expected.path);
    seen.delete(expected.path);
    if (found === undefined) {
      problems.push({ path: expected.path, problem: 'missing', detail: 'listed in the manifest but not in the backup' });
    } else if (found.sizeBytes !== expected.sizeBytes) {
      problems.push({ path: expected.path, problem: 'size', detail: `${found.sizeBytes} bytes, the manifest says ${expected.sizeBytes}` });
    } else if (found.sha256 !== expected.sha256) {
      problems.push({ path: expected.path, problem: 'checksum', detail: `sha256 ${found.sha256 ?? '?'}, the manifest says ${expected.sha256}` });
    }
  }
  for (const extra of seen.keys()) {
    problems.push({ path: extra, problem: 'unexpected', detail: 'in the backup but not in the manifest' });
  }
  return problems.sort((a, b) => a.path.localeCompare(b.path));
}
