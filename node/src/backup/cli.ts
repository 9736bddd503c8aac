/**
 * The `backup` and `restore` subcommands of the node's program (`eventdb backup ...`,
 * `eventdb restore ...`; main.ts hands them here before any node option is read).
 *
 *   eventdb backup --db DIR --index DIR --to DIR [--differential]
 *                  [--node-url URL --username NAME (--password PW | --password-file FILE)]
 *   eventdb backup --verify DIR
 *   eventdb restore --from DIR --db DIR --index DIR [--overwrite]
 *
 * Exit codes: 0 done; 1 refused or failed (the message says why; a damaged backup for --verify);
 * 2 bad options (the option is named).
 */
import { readFileSync } from 'node:fs';
import { EventDbError } from '../errors.js';
import { directoryProblem } from '../config/paths.js';
import { runBackup } from './backup.js';
import { runRestore, verifyBackup } from './restore.js';

export const EXIT_OK = 0;
export const EXIT_FAILED = 1;
export const EXIT_USAGE = 2;

export type ToolCommand =
  | { readonly kind: 'help'; readonly command: 'backup' | 'restore' }
  | {
    readonly kind: 'backup'; readonly db: string; readonly index: string; readonly to: string; readonly differential: boolean;
    readonly node?: { readonly url: string; readonly username: string; readonly password: string };
    readonly chaserWaitMs?: number;
  }
  | { readonly kind: 'verify'; readonly dir: string }
  | { readonly kind: 'restore'; readonly from: string; readonly db: string; readonly index: string; readonly overwrite: boolean };

export class UsageError extends Error {}

export const TOOL_COMMANDS = ['backup', 'restore'] as const;

export function isToolCommand(argv: readonly string[]): boolean {
  return argv[0] === 'backup' || argv[0] === 'restore';
}

const USAGE = {
  backup: [
    'usage: eventdb backup --db DIR --index DIR --to DIR [--differential]',
    '                      [--node-url URL --username NAME (--password PW | --password-file FILE)] [--chaser-wait-ms MS]',
    '       eventdb backup --verify DIR',
    '',
    'Copies a node\'s data and index directories into DIR/db and DIR/index in the order of the',
    'spec\'s simple full backup, or (--differential) its differential backup against the backup',
    'already in DIR, and writes DIR/backup-manifest.json (node identity, checkpoints, SHA-256 of',
    'every file). The node may be running. With --node-url and credentials a running scavenge is',
    'stopped first and resumed after. --verify checks every file of a backup against its manifest.',
  ],
  restore: [
    'usage: eventdb restore --from DIR --db DIR --index DIR [--overwrite]',
    '',
    'Restores a backup onto a STOPPED node\'s directories (refused while a node runs on them):',
    'copies every file, checked against the manifest, then for a full backup copies chaser.chk',
    'over truncate.chk. The directories must hold no database files unless --overwrite (which',
    'deletes them first). The restored directories get a new node identity.',
  ],
} as const;

export function usage(command: 'backup' | 'restore'): string {
  return `${USAGE[command].join('\n')}\n`;
}

const VALUE_OPTIONS: Record<'backup' | 'restore', readonly string[]> = {
  backup: ['--db', '--index', '--to', '--verify', '--node-url', '--username', '--password', '--password-file', '--chaser-wait-ms'],
  restore: ['--from', '--db', '--index'],
};
const FLAG_OPTIONS: Record<'backup' | 'restore', readonly string[]> = {
  backup: ['--differential', '--help'],
  restore: ['--overwrite', '--help'],
};

/** Parses `argv` (starting with the subcommand). Pure; throws UsageError naming the option. */
export function parseToolArgs(argv: readonly string[], readFile: (file: string) => string = (f) => readFileSync(f, 'utf8')): ToolCommand {
  const command = argv[0];
  if (command !== 'backup' && command !== 'restore') throw new UsageError(`unknown command ${String(command)} (expected backup or restore)`);
  const values = new Map<string, string>();
  const flags = new Set<string>();
  for (let i = 1; i < argv.length; i++) {
    const arg = argv[i]!;
    const eq = arg.indexOf('=');
    const name = arg.startsWith('--') && eq > 0 ? arg.slice(0, eq) : arg;
    if (FLAG_OPTIONS[command].includes(name)) {
      if (eq > 0) throw new UsageError(`option ${name} takes no value`);
      flags.add(name);
      continue;
    }
    if (!VALUE_OPTIONS[command].includes(name)) {
      throw new UsageError(arg.startsWith('-') ? `unknown option ${name} for eventdb ${command}` : `unexpected argument ${JSON.stringify(arg)} for eventdb ${command}`);
    }
    let value: string | undefined;
    if (eq > 0) value = arg.slice(eq + 1);
    else {
      value = argv[i + 1];
      if (value === undefined || value.startsWith('--')) throw new UsageError(`option ${name} needs a value`);
      i++;
    }
    if (value === '') throw new UsageError(`option ${name} needs a non-empty value`);
    if (values.has(name)) throw new UsageError(`option ${name} is given twice`);
    values.set(name, value);
  }
  if (flags.has('--help')) return { kind: 'help', command };
  const need = (name: string): string => {
    const v = values.get(name);
    if (v === undefined) throw new UsageError(`option ${name} is required for eventdb ${command}`);
    // Every required option names a directory: one under /proc or /sys is refused at once.
    const problem = directoryProblem(v);
    if (problem !== undefined) throw new UsageError(`option ${name}: ${problem}`);
    return v;
  };
  if (command === 'restore') {
    return { kind: 'restore', from: need('--from'), db: need('--db'), index: need('--index'), overwrite: flags.has('--overwrite') };
  }
  const verify = values.get('--verify');
  if (verify !== undefined) {
    const other = [...values.keys(), ...flags].find((n) => n !== '--verify');
    if (other !== undefined) throw new UsageError(`option ${other} cannot be combined with --verify`);
    return { kind: 'verify', dir: verify };
  }
  const url = values.get('--node-url');
  const credentialOptions = ['--username', '--password', '--password-file'].filter((n) => values.has(n));
  let node: { url: string; username: string; password: string } | undefined;
  if (url === undefined) {
    if (credentialOptions.length > 0) throw new UsageError(`option ${credentialOptions[0]} needs --node-url`);
  } else {
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      throw new UsageError(`option --node-url: ${JSON.stringify(url)} is not a URL`);
    }
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new UsageError('option --node-url must be an http:// or https:// URL');
    if (values.has('--password') && values.has('--password-file')) throw new UsageError('options --password and --password-file cannot be combined');
    const file = values.get('--password-file');
    let password = values.get('--password');
    if (file !== undefined) {
      try {
        password = readFile(file).replace(/\r?\n$/, '');
      } catch (err: unknown) {
        throw new UsageError(`option --password-file: cannot read ${file} (${err instanceof Error ? err.message : String(err)})`);
      }
    }
    if (password === undefined) throw new UsageError('option --node-url needs --password or --password-file');
    node = { url, username: values.get('--username') ?? 'admin', password };
  }
  let chaserWaitMs: number | undefined;
  const wait = values.get('--chaser-wait-ms');
  if (wait !== undefined) {
    chaserWaitMs = Number(wait);
    if (!/^\d+$/.test(wait) || !Number.isSafeInteger(chaserWaitMs)) throw new UsageError(`option --chaser-wait-ms: ${JSON.stringify(wait)} is not a whole number of milliseconds`);
  }
  return {
    kind: 'backup', db: need('--db'), index: need('--index'), to: need('--to'), differential: flags.has('--differential'),
    ...(node === undefined ? {} : { node }), ...(chaserWaitMs === undefined ? {} : { chaserWaitMs }),
  };
}

/** Runs a subcommand; resolves with the exit code. Progress goes to stdout, problems to stderr. */
export async function runTool(argv: readonly string[]): Promise<number> {
  const out = (line: string): void => void process.stdout.write(`${line}\n`);
  let command: ToolCommand;
  try {
    command = parseToolArgs(argv);
  } catch (err: unknown) {
    if (!(err instanceof UsageError)) throw err;
    const which = argv[0] === 'restore' ? 'restore' : 'backup';
    process.stderr.write(`eventdb ${which}: ${err.message}\n${usage(which)}`);
    return EXIT_USAGE;
  }
  try {
    switch (command.kind) {
      case 'help':
        out(usage(command.command));
        return EXIT_OK;
      case 'verify': {
        const { problems } = await verifyBackup(command.dir, out);
        return problems.length === 0 ? EXIT_OK : EXIT_FAILED;
      }
      case 'backup':
        await runBackup({
          dbDir: command.db, indexDir: command.index, toDir: command.to, differential: command.differential, out,
          ...(command.node === undefined ? {} : { node: command.node }),
          ...(command.chaserWaitMs === undefined ? {} : { chaserWaitMs: command.chaserWaitMs }),
        });
        return EXIT_OK;
      case 'restore':
        await runRestore({ fromDir: command.from, dbDir: command.db, indexDir: command.index, overwrite: command.overwrite, out });
        return EXIT_OK;
    }
  } catch (err: unknown) {
    const which = argv[0] === 'restore' ? 'restore' : 'backup';
    if (err instanceof EventDbError) process.stderr.write(`eventdb ${which}: ${err.code}: ${err.message}\n`);
    else process.stderr.write(`eventdb ${which} failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    return EXIT_FAILED;
  }
}
