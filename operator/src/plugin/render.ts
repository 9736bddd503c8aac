/**
 * PURE: text output of the plugin. Colour (ANSI) only when the caller says the output is a
 * terminal (and NO_COLOR is unset): piped output is plain, aligned text that grep and awk read.
 */
import { stringify } from 'yaml';
import type { OutputFormat } from './args.js';
import type { StatusView } from './status-view.js';

export interface Paint {
  readonly green: (text: string) => string;
  readonly red: (text: string) => string;
  readonly yellow: (text: string) => string;
  readonly bold: (text: string) => string;
  readonly dim: (text: string) => string;
}

const wrap = (open: number, close: number) => (text: string) => `\u001b[${open}m${text}\u001b[${close}m`;
const identity = (text: string): string => text;

export function paint(colour: boolean): Paint {
  if (!colour) return { green: identity, red: identity, yellow: identity, bold: identity, dim: identity };
  return { green: wrap(32, 39), red: wrap(31, 39), yellow: wrap(33, 39), bold: wrap(1, 22), dim: wrap(2, 22) };
}

// eslint-disable-next-line no-control-regex
const ANSI = /\u001b\[[0-9;]*m/g;
export const visibleLength = (text: string): number => text.replace(ANSI, '').length;

/** Columns padded to the widest cell (ANSI codes not counted); two spaces between columns. */
export function table(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = header.map((title, column) => Math.max(visibleLength(title), ...rows.map((row) => visibleLength(row[column] ?? ''))));
  const line = (cells: readonly string[]): string =>
    cells
      .map((cell, column) => (column === cells.length - 1 ? cell : cell + ' '.repeat(Math.max(0, (widths[column] ?? 0) - visibleLength(cell)))))
      .join('  ')
      .trimEnd();
  return [line(header), ...rows.map(line)].join('\n');
}

/** Data output (-o json|yaml). */
export function formatData(value: unknown, format: Exclude<OutputFormat, 'text'>): string {
  return format === 'json' ? `${JSON.stringify(value, null, 2)}\n` : stringify(value);
}

const dash = (value: unknown): string => (value === undefined || value === null || value === '' ? '-' : String(value));

/** `3d4h`, `5m10s`, `12s` from milliseconds. */
export function formatAge(ms: number): string {
  if (!Number.isFinite(ms)) return '-';
  const negative = ms < 0;
  let seconds = Math.floor(Math.abs(ms) / 1000);
  const days = Math.floor(seconds / 86_400);
  seconds -= days * 86_400;
  const hours = Math.floor(seconds / 3600);
  seconds -= hours * 3600;
  const minutes = Math.floor(seconds / 60);
  seconds -= minutes * 60;
  const text = days > 0 ? `${days}d${hours}h` : hours > 0 ? `${hours}h${minutes}m` : minutes > 0 ? `${minutes}m${seconds}s` : `${seconds}s`;
  return negative ? `in ${text}` : text;
}

function when(iso: string | undefined, nowMs: number): string {
  if (iso === undefined || iso === '') return '-';
  const ms = Date.parse(iso);
  if (Number.isNaN(ms)) return iso;
  return ms > nowMs ? `${iso} (${formatAge(nowMs - ms)})` : `${iso} (${formatAge(nowMs - ms)} ago)`;
}

/** Bytes as `0 B`, `12.3 KiB`, `4.0 MiB`. */
export function formatBytes(bytes: number | undefined): string {
  if (bytes === undefined) return '-';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return unit === 0 ? `${value} B` : `${value.toFixed(1)} ${units[unit]}`;
}

export function renderStatus(view: StatusView, options: { readonly colour: boolean; readonly nowMs: number }): string {
  const p = paint(options.colour);
  const { nowMs } = options;
  const phaseColour = view.phase === 'Ready' ? p.green : ['Failed', 'Degraded'].includes(view.phase) ? p.red : p.yellow;
  const out: string[] = [];
  out.push(`${p.bold('Cluster')}    ${view.namespace}/${view.cluster}`);
  out.push(`${p.bold('Phase')}      ${phaseColour(view.phase)}${view.paused ? p.yellow(' (paused)') : ''}`);
  out.push(`${p.bold('Nodes')}      ${view.readyReplicas}/${view.replicas} voting ready, ${view.desiredReplicas} desired; leader ${dash(view.leader)}`);
  out.push(`${p.bold('Image')}      ${dash(view.image)}`);
  out.push('');
  out.push(p.bold('Conditions'));
  out.push(
    table(
      ['TYPE', 'STATUS', 'REASON', 'MESSAGE'],
      view.conditions.map((condition) => {
        const good = (condition.type === 'Degraded' || condition.type === 'Stalled') === (condition.status === 'False');
        return [condition.type, good ? p.green(condition.status) : condition.status === 'Unknown' ? p.yellow(condition.status) : p.red(condition.status), condition.reason, condition.message];
      }),
    ),
  );
  out.push('');
  out.push(p.bold('Nodes') + (view.nodes.some((node) => node.source === 'status') ? p.dim(` (nodes not reachable now shown from status.members, observed ${dash(view.membersObservedAt)})`) : ''));
  out.push(
    table(
      ['POD', 'ROLE', 'READY', 'EPOCH', 'WRITER', 'CHASER', 'LAG', 'LAG-S', 'UNACKED', 'CAUGHT-UP', 'RESTARTS', 'IMAGE', 'STORAGE', 'SOURCE'],
      view.nodes.map((node) => [
        node.pod,
        node.role === 'Leader' ? p.bold(node.role) : node.alive ? node.role : p.red(node.role),
        node.ready ? p.green('true') : p.red('false'),
        dash(node.epoch),
        dash(node.writerCheckpoint),
        dash(node.chaserCheckpoint),
        node.lagBytes === undefined ? '-' : node.lagBytes === 0 ? p.green('0 B') : p.yellow(formatBytes(node.lagBytes)),
        node.lagSeconds === undefined ? '-' : node.lagSeconds === 0 ? p.green('0s') : node.lagSeconds >= 10 ? p.red(`${node.lagSeconds.toFixed(1)}s`) : p.yellow(`${node.lagSeconds.toFixed(3)}s`),
        node.ackedLagBytes === undefined ? '-' : formatBytes(node.ackedLagBytes),
        node.caughtUp === undefined ? '-' : node.caughtUp ? 'true' : p.yellow('false'),
        node.restarts > 0 ? p.yellow(String(node.restarts)) : '0',
        dash(node.image),
        dash(node.storage),
        node.source,
      ]),
    ),
  );
  out.push('');
  const certificate = view.certificates;
  const days = certificate.daysLeft;
  const expiry = certificate.notAfter === undefined ? '-' : `${certificate.notAfter} (${days === undefined ? '?' : days < 0 ? p.red('expired') : days < 30 ? p.yellow(`${days} days left`) : `${days} days left`})`;
  out.push(`${p.bold('Certificates')}  tls ${certificate.mode}; expires ${certificate.mode === 'Disabled' ? '-' : expiry}; last reload ${when(certificate.reloadedAt, nowMs)}`);
  if (certificate.fingerprint !== undefined) out.push(`              served ${certificate.fingerprint}`);
  const operation = view.operation;
  out.push(
    `${p.bold('Operation')}     ${
      operation === undefined
        ? 'none'
        : p.yellow(`${operation.kind}: ${operation.step}${operation.pod === undefined ? '' : ` (${operation.pod}${operation.podStep === undefined ? '' : ` ${operation.podStep}`})`}, since ${when(operation.startedAt, nowMs)}${operation.waitingFor === undefined ? '' : `; waiting for ${operation.waitingFor}`}`)
    }`,
  );
  if (view.lastOperation !== undefined) out.push(`              last: ${view.lastOperation.kind} ${view.lastOperation.result} at ${when(view.lastOperation.finishedAt, nowMs)}`);
  const backups = view.backups;
  const last = backups.lastCompleted;
  out.push(`${p.bold('Backups')}       ${backups.total} in all; last completed ${last === undefined ? p.yellow('none') : `${last.name} (${dash(last.method)}, writer ${dash(last.writerCheckpoint)}) at ${when(last.completedAt, nowMs)}`}`);
  if (backups.running.length > 0) out.push(`              running: ${backups.running.map((backup) => `${backup.name} ${backup.phase}`).join(', ')}`);
  if (backups.lastFailed !== undefined) out.push(`              last failed: ${p.red(backups.lastFailed.name)} ${dash(backups.lastFailed.message)}`);
  if (view.scavenges.length === 0) out.push(`${p.bold('Scavenges')}     no ScavengeSchedule`);
  for (const [index, schedule] of view.scavenges.entries()) {
    const current = schedule.current === undefined ? '' : `; cycle ${schedule.current.id}: ${schedule.current.nodes.map((node) => `${node.pod} ${node.result}`).join(', ')}`;
    const lastCycle = schedule.last === undefined ? 'no cycle yet' : `last ${schedule.last.result === 'Success' ? p.green(schedule.last.result) : p.red(schedule.last.result)} at ${when(schedule.last.finishedAt, nowMs)}`;
    out.push(`${index === 0 ? p.bold('Scavenges') + '     ' : '              '}${schedule.schedule}: ${schedule.state}; ${lastCycle}; next ${when(schedule.next, nowMs)}${current}`);
  }
  out.push('');
  if (view.warnings.length === 0) out.push(`${p.bold('Warnings')}      none recent`);
  else {
    out.push(p.bold('Recent warning Events'));
    out.push(table(['AGE', 'REASON', 'OBJECT', 'COUNT', 'MESSAGE'], view.warnings.map((warning) => [formatAge(nowMs - Date.parse(warning.at)), p.yellow(warning.reason), warning.object, String(warning.count), warning.message])));
  }
  out.push('');
  out.push(view.healthy ? p.green(`Verdict: healthy (phase Ready, ${view.nodes.length} nodes ready)`) : p.red(`Verdict: NOT healthy (${verdictReasons(view).join('; ')})`));
  return `${out.join('\n')}\n`;
}

export function verdictReasons(view: StatusView): string[] {
  const reasons: string[] = [];
  if (view.phase !== 'Ready') reasons.push(`phase ${view.phase}`);
  if (view.nodes.length === 0) reasons.push('no nodes');
  for (const node of view.nodes) {
    if (!node.ready) reasons.push(`${node.pod} not ready`);
    else if (!node.alive) reasons.push(`${node.pod} ${node.role}`);
  }
  return reasons;
}
