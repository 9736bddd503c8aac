/**
 * A bench interrupted (Ctrl-C, `timeout`, a CI cancel) must not leave servers behind: node
 * processes, load generators and the private PostgreSQL cluster would keep ports, disk and CPU
 * busy and spoil every later measurement. On SIGINT, SIGTERM or SIGHUP the registered clean-ups
 * run, every direct child of this process is killed, and the process exits.
 */
import { readdirSync, readFileSync } from 'node:fs';

const cleanups = new Set<() => void>();
let installed = false;

/** Runs `cleanup` if the bench is interrupted; returns the function that unregisters it. */
export function onInterrupt(cleanup: () => void): () => void {
  install();
  cleanups.add(cleanup);
  return () => cleanups.delete(cleanup);
}

/** Installs the signal handlers (idempotent). */
export function install(): void {
  if (installed) return;
  installed = true;
  const signals = { SIGINT: 2, SIGTERM: 15, SIGHUP: 1 } as const;
  for (const [signal, number] of Object.entries(signals)) {
    process.once(signal, () => {
      process.stderr.write(`bench interrupted (${signal}): stopping its servers\n`);
      for (const cleanup of cleanups) {
        try {
          cleanup();
        } catch {
          // Keep going: the other clean-ups and the children still need stopping.
        }
      }
      for (const pid of childPids()) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // Already gone.
        }
      }
      process.exit(128 + number);
    });
  }
}

/** Direct children of this process, from /proc (the bench runs on Linux). */
function childPids(): number[] {
  const pids: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      // Field 4 of /proc/<pid>/stat is the parent pid; the command name (field 2) may hold spaces.
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === process.pid) pids.push(Number(name));
    } catch {
      // The process ended while we looked.
    }
  }
  return pids;
}
