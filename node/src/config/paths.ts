/**
 * Directories the node (or the backup tool) can never keep files in: the kernel's /proc and
 * /sys. Refused when the options are read, with the option's name, instead of failing (or
 * retrying) later on files that cannot be created there. Lexical: the path is resolved
 * against the working directory, nothing is touched on disk.
 */
import { posix } from 'node:path';

const PSEUDO_FILESYSTEMS = ['/proc', '/sys'] as const;

/** Why `path` cannot hold the node's files, or undefined when nothing is known against it. */
export function directoryProblem(path: string, cwd: string = process.cwd()): string | undefined {
  const absolute = posix.resolve(cwd, path);
  const root = PSEUDO_FILESYSTEMS.find((fs) => absolute === fs || absolute.startsWith(`${fs}/`));
  return root === undefined ? undefined : `${path} is under ${root}, a kernel pseudo-filesystem that cannot hold files`;
}
