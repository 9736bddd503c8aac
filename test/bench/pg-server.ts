/**
 * A private PostgreSQL cluster for the bench: installed with apt when missing (as root), created
 * with initdb in a temp directory owned by the `postgres` user, listening on 127.0.0.1 only, with
 * durable commits (fsync on, synchronous_commit on). Stopped and removed afterwards.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import pg from 'pg';
import { onInterrupt } from './interrupt.js';

export interface PgServer {
  readonly connectionString: string;
  readonly version: string;
  stop(): void;
}

const INSTALL_TIMEOUT_MS = 6 * 60_000;

/** Finds PostgreSQL's bin directory, installing the package when it is missing and we are root. */
export function ensurePostgresInstalled(notes: string[]): string | undefined {
  const found = findBinDir();
  if (found !== undefined) return found;
  if (process.getuid?.() !== 0) {
    notes.push(
      'PostgreSQL is not installed and the bench is not root: PostgreSQL comparison skipped',
    );
    return undefined;
  }
  notes.push('PostgreSQL was missing: installed with apt-get');
  const install = spawnSync(
    'bash',
    [
      '-c',
      'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql',
    ],
    {
      stdio: ['ignore', 'ignore', 'pipe'],
      timeout: INSTALL_TIMEOUT_MS,
    },
  );
  if (install.status !== 0) {
    notes.push(`apt-get install postgresql failed: ${install.stderr.toString().slice(-300)}`);
    return undefined;
  }
  return findBinDir();
}

function findBinDir(): string | undefined {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return undefined;
  const versions = readdirSync(root).sort((a, b) => Number(b) - Number(a));
  for (const version of versions) {
    const bin = join(root, version, 'bin');
    if (existsSync(join(bin, 'initdb')) && existsSync(join(bin, 'pg_ctl'))) return bin;
  }
  return undefined;
}

/** initdb + pg_ctl start as the postgres user (PostgreSQL refuses to run as root). */
export async function startPostgres(binDir: string, port: number): Promise<PgServer> {
  const dir = mkdtempSync(join(process.env['BENCH_DIR'] ?? tmpdir(), 'eventdb-bench-pg-'));
  const dataDir = join(dir, 'data');
  const asPostgres = process.getuid?.() === 0 ? ['runuser', '-u', 'postgres', '--'] : [];
  if (asPostgres.length > 0) chownSync(dir, uidOf('postgres'), gidOf('postgres'));
  const run = (args: string[]): void => {
    const [command = '', ...rest] = [...asPostgres, ...args];
    execFileSync(command, rest, { stdio: ['ignore', 'ignore', 'pipe'], cwd: dir });
  };
  run([join(binDir, 'initdb'), '-D', dataDir, '-A', 'trust', '-U', 'postgres', '-E', 'UTF8']);
  const serverOptions = [
    `-c port=${port}`,
    '-c listen_addresses=127.0.0.1',
    `-c unix_socket_directories=${dir}`,
    '-c fsync=on',
    '-c synchronous_commit=on',
    '-c max_connections=200',
    '-c shared_buffers=256MB',
  ].join(' ');
  run([
    join(binDir, 'pg_ctl'),
    '-D',
    dataDir,
    '-l',
    join(dir, 'server.log'),
    '-o',
    serverOptions,
    '-w',
    'start',
  ]);
  const stop = (): void => {
    try {
      run([join(binDir, 'pg_ctl'), '-D', dataDir, '-m', 'fast', '-w', 'stop']);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  };
  const forget = onInterrupt(stop);
  const connectionString = `postgres://postgres@127.0.0.1:${port}/postgres`;
  const client = new pg.Client({ connectionString });
  await client.connect();
  const version = String(
    (await client.query('SHOW server_version')).rows[0]?.server_version ?? '?',
  );
  await client.query(
    'CREATE TABLE events (' +
      'global_position bigserial PRIMARY KEY, stream text NOT NULL, version bigint NOT NULL, ' +
      'event_id uuid NOT NULL, event_type text NOT NULL, data text NOT NULL, ' +
      'created_at timestamptz NOT NULL DEFAULT now(), UNIQUE (stream, version))',
  );
  await client.end();
  return {
    connectionString,
    version,
    stop: () => {
      forget();
      stop();
    },
  };
}

function uidOf(user: string): number {
  return Number(execFileSync('id', ['-u', user]).toString().trim());
}

function gidOf(user: string): number {
  return Number(execFileSync('id', ['-g', user]).toString().trim());
}
