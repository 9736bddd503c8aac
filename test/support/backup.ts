/**
 * The specification's "simple full backup" and "simple restore", as file operations.
 * Backup order: index checkpoint files, other index files, database checkpoint files, chunks.
 * Restore: copy everything to the target, then copy chaser.chk over truncate.chk.
 */
import fs from 'node:fs';
import path from 'node:path';

function listFiles(root: string): string[] {
  const out: string[] = [];
  const walk = (dir: string): void => {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(full); else out.push(path.relative(root, full));
    }
  };
  if (fs.existsSync(root)) walk(root);
  return out;
}

function copyRelative(fromRoot: string, toRoot: string, rel: string): void {
  fs.mkdirSync(path.dirname(path.join(toRoot, rel)), { recursive: true });
  fs.copyFileSync(path.join(fromRoot, rel), path.join(toRoot, rel));
}

export function simpleFullBackup(source: { db: string; index: string }, target: { db: string; index: string }): string[] {
  const order: string[] = [];
  const indexFiles = listFiles(source.index);
  const dbFiles = listFiles(source.db);
  const steps: [string, string, string, string[]][] = [
    ['index', source.index, target.index, indexFiles.filter((f) => f.endsWith('.chk'))],
    ['index', source.index, target.index, indexFiles.filter((f) => !f.endsWith('.chk'))],
    ['db', source.db, target.db, dbFiles.filter((f) => f.endsWith('.chk'))],
    ['db', source.db, target.db, dbFiles.filter((f) => /^chunk-\d{6}\.\d{6}$/.test(f))],
  ];
  for (const [kind, from, to, files] of steps) {
    for (const f of files) { copyRelative(from, to, f); order.push(`${kind}/${f}`); }
  }
  return order;
}

export function prepareRestore(target: { db: string }): void {
  fs.copyFileSync(path.join(target.db, 'chaser.chk'), path.join(target.db, 'truncate.chk'));
}
