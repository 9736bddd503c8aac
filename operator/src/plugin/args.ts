/**
 * PURE: the command line of `kubectl eventdb` (node:util parseArgs, strict). Every verb has its
 * own options besides the common ones (-n/--namespace, --context, -o/--output, -h/--help); a bad
 * option or value is a UsageError naming it, and the launcher exits 2 with that message.
 */
import { parseArgs, type ParseArgsConfig } from 'node:util';

export type OutputFormat = 'text' | 'json' | 'yaml';

export interface CommonOptions {
  readonly namespace: string | undefined;
  readonly context: string | undefined;
  readonly output: OutputFormat;
}

export type Command = CommonOptions &
  (
    | { readonly verb: 'status'; readonly cluster: string; readonly watch: boolean; readonly intervalMs: number }
    | { readonly verb: 'report'; readonly cluster: string; readonly file: string | undefined; readonly logLines: number }
    | {
        readonly verb: 'backup';
        readonly cluster: string;
        readonly method: 'VolumeSnapshot' | 'FileCopy' | undefined;
        readonly name: string | undefined;
        readonly node: string | undefined;
        readonly claim: string | undefined;
        readonly snapshotClass: string | undefined;
        readonly differential: boolean;
        readonly wait: boolean;
        readonly timeoutMs: number;
      }
    | {
        readonly verb: 'scavenge';
        readonly cluster: string;
        readonly wait: boolean;
        readonly timeoutMs: number;
        readonly ignoreMaintenanceWindows: boolean;
        readonly throttlePercent: number;
      }
    | { readonly verb: 'restart'; readonly cluster: string; readonly pod: string | undefined; readonly wait: boolean; readonly timeoutMs: number }
    | { readonly verb: 'switchover'; readonly cluster: string; readonly pod: string }
    | { readonly verb: 'hibernate'; readonly cluster: string; readonly on: boolean }
    | { readonly verb: 'fence'; readonly cluster: string; readonly pod: string; readonly on: boolean }
    | { readonly verb: 'logs'; readonly cluster: string; readonly follow: boolean; readonly json: boolean; readonly tail: number | undefined; readonly sinceSeconds: number | undefined }
    | { readonly verb: 'read'; readonly cluster: string; readonly stream: string; readonly from: number; readonly count: number }
    | { readonly verb: 'append'; readonly cluster: string; readonly stream: string; readonly type: string; readonly data: unknown }
  );

export type Verb = Command['verb'];

export type ParseOutcome =
  | { readonly kind: 'command'; readonly command: Command }
  | { readonly kind: 'help'; readonly text: string }
  | { readonly kind: 'version' };

/** A bad command line: the message names the verb and the option or argument. Exit code 2. */
export class UsageError extends Error {
  readonly code = 'EDBPLUGIN_USAGE';
  readonly verb: Verb | undefined;
  constructor(message: string, verb?: Verb) {
    super(message);
    this.name = 'UsageError';
    this.verb = verb;
  }
}

type OptionSpec = NonNullable<ParseArgsConfig['options']>;

const COMMON: OptionSpec = {
  namespace: { type: 'string', short: 'n' },
  context: { type: 'string' },
  output: { type: 'string', short: 'o' },
  help: { type: 'boolean', short: 'h' },
};

interface VerbSpec {
  readonly usage: string;
  readonly summary: string;
  readonly options: OptionSpec;
  readonly optionHelp: readonly string[];
  /** It prints data, so -o json|yaml applies (logs: -o json is --json; the others refuse -o). */
  readonly data: boolean;
  /** What exit code 1 means for this verb (0 is always success, 2 always a usage error). */
  readonly failure: string;
}

export const VERBS: Readonly<Record<Verb, VerbSpec>> = {
  status: {
    usage: 'status <cluster> [--watch [--interval 2s]]',
    summary: 'phase, conditions, every node (role, readiness, epoch, checkpoints, lag), certificates, operation, backups, scavenges, warnings',
    options: { watch: { type: 'boolean', short: 'w' }, interval: { type: 'string' } },
    optionHelp: ['-w, --watch          redraw until interrupted', '    --interval <d>   redraw period with --watch (default 2s)'],
    data: true,
    failure: 'the cluster is not healthy (phase not Ready, a node not ready or not alive) or could not be read; with --watch, the last round\'s verdict'
  },
  report: {
    usage: 'report <cluster> [-f <file.tar.gz>]',
    summary: 'a support bundle (tar.gz): CRs, children, Events, operator and node logs, each node\'s /info /gossip /stats; Secrets redacted',
    options: { file: { type: 'string', short: 'f' }, 'log-lines': { type: 'string' } },
    optionHelp: ['-f, --file <path>    the archive (default report-<cluster>-<time>.tar.gz)', '    --log-lines <n>  log lines per container (default 5000)'],
    data: true,
    failure: 'the cluster could not be read or the archive not written (items that could not be collected are listed in errors.txt, exit 0)'
  },
  backup: {
    usage: 'backup <cluster> [--method VolumeSnapshot|FileCopy] [--wait]',
    summary: 'creates a Backup of the cluster',
    options: {
      method: { type: 'string' },
      name: { type: 'string' },
      node: { type: 'string' },
      claim: { type: 'string' },
      'snapshot-class': { type: 'string' },
      differential: { type: 'boolean' },
      wait: { type: 'boolean' },
      timeout: { type: 'string' },
    },
    optionHelp: [
      '    --method <m>           VolumeSnapshot (default) or FileCopy',
      '    --name <name>          the Backup\'s name (default <cluster>-<yyyymmdd-hhmmss>)',
      '    --node <n>             PreferFollower (default), Leader or a pod name',
      '    --claim <pvc>          FileCopy: the PVC that receives the copy (required with FileCopy)',
      '    --differential         FileCopy: only what changed since the last backup in that claim',
      '    --snapshot-class <c>   VolumeSnapshot: the VolumeSnapshotClass',
      '    --wait                 wait until the Backup is Completed or Failed',
      '    --timeout <d>          with --wait (default 30m)',
    ],
    data: true,
    failure: 'the Backup could not be created; with --wait, it ended Failed or did not finish within --timeout'
  },
  scavenge: {
    usage: 'scavenge <cluster> [--wait]',
    summary: 'a one-off scavenge cycle (followers first, the leader last) through a one-shot ScavengeSchedule',
    options: { wait: { type: 'boolean' }, timeout: { type: 'string' }, 'ignore-maintenance-windows': { type: 'boolean' }, 'throttle-percent': { type: 'string' } },
    optionHelp: [
      '    --wait                         wait for the cycle\'s result, then delete the one-shot schedule',
      '    --timeout <d>                  with --wait (default 6h)',
      '    --ignore-maintenance-windows   start even outside the cluster\'s maintenance windows',
      '    --throttle-percent <1..100>    default 100',
    ],
    data: true,
    failure: 'the one-off schedule could not be created; with --wait, the cycle was not Success, the operator refused it, or no result within --timeout'
  },
  restart: {
    usage: 'restart <cluster> [<pod>] [--wait]',
    summary: 'a rolling restart of the cluster by the operator (annotation eventdb.io/restartedAt), or one pod',
    options: { wait: { type: 'boolean' }, timeout: { type: 'string' } },
    optionHelp: ['    --wait          wait until the restart is over', '    --timeout <d>   with --wait (default 30m)'],
    data: true,
    failure: 'the restart could not be requested (cluster busy, pod not a node, the leader did not resign); with --wait, not over within --timeout'
  },
  switchover: {
    usage: 'switchover <cluster> <pod>',
    summary: 'makes <pod> the leader (needs the operator\'s switchover support)',
    options: {},
    optionHelp: [],
    data: false,
    failure: 'always, until the operator supports switchover: nothing is changed'
  },
  hibernate: {
    usage: 'hibernate on|off <cluster>',
    summary: 'stops every node keeping the data, or brings them back (needs the operator\'s hibernation support)',
    options: {},
    optionHelp: [],
    data: false,
    failure: 'always, until the operator supports hibernation: nothing is changed'
  },
  fence: {
    usage: 'fence on|off <cluster> <pod>',
    summary: 'takes a node out of service without touching its data (needs the operator\'s fencing support)',
    options: {},
    optionHelp: [],
    data: false,
    failure: 'always, until the operator supports fencing: nothing is changed'
  },
  logs: {
    usage: 'logs <cluster> [--follow] [--json]',
    summary: 'every node\'s log, interleaved by time, rendered readable',
    options: { follow: { type: 'boolean', short: 'f' }, json: { type: 'boolean' }, tail: { type: 'string' }, since: { type: 'string' } },
    optionHelp: [
      '-f, --follow       keep streaming',
      '    --json         the raw pino JSON lines',
      '    --tail <n>     the last n lines of each node',
      '    --since <d>    only lines newer than this, e.g. 10m',
    ],
    data: false,
    failure: 'no node\'s log could be read'
  },
  read: {
    usage: 'read <cluster> <stream> [--from N] [--count N]',
    summary: 'reads events forward with the admin credentials',
    options: { from: { type: 'string' }, count: { type: 'string' } },
    optionHelp: ['    --from <n>    first event number (default 0)', '    --count <n>   at most n events (default 20, at most 4096)'],
    data: true,
    failure: 'the stream does not exist or is deleted, or the read was refused'
  },
  append: {
    usage: 'append <cluster> <stream> <type> <json>',
    summary: 'appends one event with the admin credentials',
    options: {},
    optionHelp: [],
    data: true,
    failure: 'the append was refused (the node\'s status and message are printed)'
  },
};

const VERB_NAMES = Object.keys(VERBS) as Verb[];

export function mainHelp(): string {
  const width = Math.max(...VERB_NAMES.map((verb) => VERBS[verb].usage.length));
  return [
    'kubectl eventdb: day-2 operations of EventDB clusters run by the eventdb operator',
    '',
    'Usage: kubectl eventdb <verb> [options]',
    '',
    'Verbs:',
    ...VERB_NAMES.map((verb) => `  ${VERBS[verb].usage.padEnd(width)}  ${VERBS[verb].summary}`),
    '',
    ...commonHelp(),
    '',
    'Exit codes: 0 ok, 1 failure or a bad verdict (not healthy, Backup Failed, cycle not Success, ...; see each verb\'s --help), 2 usage error.',
    'Run `kubectl eventdb <verb> --help` for a verb\'s options.',
  ].join('\n');
}

const DATA_VERBS = (): Verb[] => VERB_NAMES.filter((verb) => VERBS[verb].data);

function commonHelp(verb?: Verb): string[] {
  const output = verb === undefined ? [`-o, --output json|yaml   data instead of text (${DATA_VERBS().join(', ')}; logs: -o json is --json)`] : VERBS[verb].data ? ['-o, --output json|yaml   the result as data instead of text'] : verb === 'logs' ? ['-o, --output json        the same as --json'] : [];
  return [
    'Common options:',
    '-n, --namespace <ns>     the cluster\'s namespace (default: the context\'s namespace, else default)',
    '    --context <name>     the kubeconfig context',
    ...output,
    '-h, --help               this help',
  ];
}

export function verbHelp(verb: Verb): string {
  const spec = VERBS[verb];
  const output = spec.data ? ' [-o json|yaml]' : verb === 'logs' ? ' [-o json]' : '';
  return [
    `Usage: kubectl eventdb ${spec.usage} [-n <ns>] [--context <ctx>]${output}`,
    '',
    spec.summary,
    '',
    ...(spec.optionHelp.length > 0 ? ['Options:', ...spec.optionHelp, ''] : []),
    ...commonHelp(verb),
    '',
    `Exit codes: 0 ok; 1 ${spec.failure}; 2 a usage error (the message names the option or argument).`,
  ].join('\n');
}

/** `90s`, `2m`, `1h30m`, `500ms`: milliseconds; a bare number is seconds. */
export function parseDurationOption(text: string, option: string, verb: Verb): number {
  const trimmed = text.trim();
  if (/^\d+(\.\d+)?$/.test(trimmed)) return Number(trimmed) * 1000;
  const units: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };
  let total = 0;
  let rest = trimmed;
  const part = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)/;
  for (let i = 0; rest !== '' && i < 8; i++) {
    const match = part.exec(rest);
    if (match === null) break;
    total += Number(match[1]) * (units[match[2] ?? 's'] ?? 0);
    rest = rest.slice(match[0].length);
  }
  if (rest !== '' || trimmed === '' || total <= 0) throw new UsageError(`${verb}: --${option} '${text}' is not a duration (e.g. 90s, 5m, 1h)`, verb);
  return total;
}

function parseCount(text: string, option: string, verb: Verb, min: number, max: number): number {
  if (!/^\d+$/.test(text.trim())) throw new UsageError(`${verb}: --${option} '${text}' is not a whole number`, verb);
  const value = Number(text);
  if (value < min || value > max) throw new UsageError(`${verb}: --${option} must be between ${min} and ${max}, not ${text}`, verb);
  return value;
}

/** Node's parseArgs messages, reworded to name the verb and the option. */
function describeParseError(err: unknown, verb: Verb): UsageError {
  const message = (err as Error).message;
  const code = (err as { code?: string }).code;
  const option = /'(-[^']*)'/.exec(message)?.[1];
  if (code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION') return new UsageError(`${verb}: unknown option ${option ?? message} (see kubectl eventdb ${verb} --help)`, verb);
  if (code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE') {
    const name = /--([a-z-]+)/.exec(message)?.[1];
    return new UsageError(`${verb}: option --${name ?? '?'} ${message.includes('argument missing') ? 'needs a value' : 'takes no value'}`, verb);
  }
  return new UsageError(`${verb}: ${message}`, verb);
}

const NAME = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;

function dnsName(value: string, what: string, verb: Verb): string {
  if (!NAME.test(value) || value.length > 253) throw new UsageError(`${verb}: ${what} '${value}' is not a valid Kubernetes name`, verb);
  return value;
}

function onOff(value: string | undefined, verb: Verb): boolean {
  if (value === 'on') return true;
  if (value === 'off') return false;
  throw new UsageError(`${verb}: the first argument must be on or off, not ${value === undefined ? 'nothing' : `'${value}'`}`, verb);
}

/** Parses `argv` (without node and the script). Throws UsageError. */
export function parseCommandLine(argv: readonly string[]): ParseOutcome {
  const [first, ...rest] = argv;
  if (first === undefined || first === '-h' || first === '--help' || first === 'help') {
    const topic = first === 'help' ? rest[0] : undefined;
    if (topic !== undefined && (VERB_NAMES as string[]).includes(topic)) return { kind: 'help', text: verbHelp(topic as Verb) };
    return { kind: 'help', text: mainHelp() };
  }
  if (first === 'version' || first === '--version') return { kind: 'version' };
  if (!(VERB_NAMES as string[]).includes(first)) throw new UsageError(`unknown verb '${first}'; verbs: ${VERB_NAMES.join(', ')} (kubectl eventdb --help)`);
  const verb = first as Verb;
  const spec = VERBS[verb];
  let parsed: { values: Record<string, string | boolean | undefined>; positionals: string[] };
  try {
    parsed = parseArgs({ args: [...rest], options: { ...COMMON, ...spec.options }, allowPositionals: true, strict: true }) as typeof parsed;
  } catch (err: unknown) {
    throw describeParseError(err, verb);
  }
  const values = parsed.values;
  if (values['help'] === true) return { kind: 'help', text: verbHelp(verb) };
  const str = (key: string): string | undefined => values[key] as string | undefined;
  const bool = (key: string): boolean => values[key] === true;
  const output = str('output');
  if (output !== undefined && output !== 'json' && output !== 'yaml') throw new UsageError(`${verb}: --output must be json or yaml, not '${output}'`, verb);
  if (output !== undefined && !spec.data && !(verb === 'logs' && output === 'json')) throw new UsageError(`${verb}: -o ${output} does not apply: ${verb} prints no data${verb === 'logs' ? ' (-o json, or --json, prints the raw records)' : ''}`, verb);
  const namespace = str('namespace');
  if (namespace !== undefined) dnsName(namespace, '--namespace', verb);
  const common: CommonOptions = { namespace, context: str('context'), output: output ?? 'text' };
  const positionals = parsed.positionals;
  const expect = (names: readonly string[], optional: readonly string[] = []): string[] => {
    if (positionals.length < names.length) throw new UsageError(`${verb}: missing ${names.slice(positionals.length).map((name) => `<${name}>`).join(' ')} (usage: kubectl eventdb ${spec.usage})`, verb);
    if (positionals.length > names.length + optional.length) throw new UsageError(`${verb}: unexpected argument '${positionals[names.length + optional.length]}' (usage: kubectl eventdb ${spec.usage})`, verb);
    return positionals;
  };
  const timeout = (fallbackMs: number): number => (str('timeout') === undefined ? fallbackMs : parseDurationOption(str('timeout') ?? '', 'timeout', verb));
  switch (verb) {
    case 'status': {
      const [cluster = ''] = expect(['cluster']);
      const interval = str('interval');
      return { kind: 'command', command: { ...common, verb, cluster: dnsName(cluster, 'cluster', verb), watch: bool('watch'), intervalMs: interval === undefined ? 2000 : parseDurationOption(interval, 'interval', verb) } };
    }
    case 'report': {
      const [cluster = ''] = expect(['cluster']);
      const lines = str('log-lines');
      return { kind: 'command', command: { ...common, verb, cluster: dnsName(cluster, 'cluster', verb), file: str('file'), logLines: lines === undefined ? 5000 : parseCount(lines, 'log-lines', verb, 1, 1_000_000) } };
    }
    case 'backup': {
      const [cluster = ''] = expect(['cluster']);
      const method = str('method');
      if (method !== undefined && method !== 'VolumeSnapshot' && method !== 'FileCopy') throw new UsageError(`backup: --method must be VolumeSnapshot or FileCopy, not '${method}'`, verb);
      const claim = str('claim');
      if (method === 'FileCopy' && claim === undefined) throw new UsageError('backup: --method FileCopy needs --claim <pvc> (the PVC that receives the copy)', verb);
      if (method !== 'FileCopy' && (claim !== undefined || bool('differential'))) throw new UsageError(`backup: --${claim !== undefined ? 'claim' : 'differential'} needs --method FileCopy`, verb);
      const name = str('name');
      return {
        kind: 'command',
        command: {
          ...common,
          verb,
          cluster: dnsName(cluster, 'cluster', verb),
          method,
          name: name === undefined ? undefined : dnsName(name, '--name', verb),
          node: str('node'),
          claim,
          snapshotClass: str('snapshot-class'),
          differential: bool('differential'),
          wait: bool('wait'),
          timeoutMs: timeout(30 * 60_000),
        },
      };
    }
    case 'scavenge': {
      const [cluster = ''] = expect(['cluster']);
      const throttle = str('throttle-percent');
      return {
        kind: 'command',
        command: {
          ...common,
          verb,
          cluster: dnsName(cluster, 'cluster', verb),
          wait: bool('wait'),
          timeoutMs: timeout(6 * 3_600_000),
          ignoreMaintenanceWindows: bool('ignore-maintenance-windows'),
          throttlePercent: throttle === undefined ? 100 : parseCount(throttle, 'throttle-percent', verb, 1, 100),
        },
      };
    }
    case 'restart': {
      const [cluster = '', pod] = expect(['cluster'], ['pod']);
      return { kind: 'command', command: { ...common, verb, cluster: dnsName(cluster, 'cluster', verb), pod: pod === undefined ? undefined : dnsName(pod, 'pod', verb), wait: bool('wait'), timeoutMs: timeout(30 * 60_000) } };
    }
    case 'switchover': {
      const [cluster = '', pod = ''] = expect(['cluster', 'pod']);
      return { kind: 'command', command: { ...common, verb, cluster: dnsName(cluster, 'cluster', verb), pod: dnsName(pod, 'pod', verb) } };
    }
    case 'hibernate': {
      const [state, cluster = ''] = positionals;
      const on = onOff(state, verb);
      expect(['on|off', 'cluster']);
      return { kind: 'command', command: { ...common, verb, cluster: dnsName(cluster, 'cluster', verb), on } };
    }
    case 'fence': {
      const [state, cluster = '', pod = ''] = positionals;
      const on = onOff(state, verb);
      expect(['on|off', 'cluster', 'pod']);
      return { kind: 'command', command: { ...common, verb, cluster: dnsName(cluster, 'cluster', verb), pod: pod === '*' ? pod : dnsName(pod, 'pod', verb), on } };
    }
    case 'logs': {
      const [cluster = ''] = expect(['cluster']);
      const tail = str('tail');
      const since = str('since');
      return {
        kind: 'command',
        command: {
          ...common,
          verb,
          cluster: dnsName(cluster, 'cluster', verb),
          follow: bool('follow'),
          json: bool('json') || output === 'json',
          tail: tail === undefined ? undefined : parseCount(tail, 'tail', verb, 0, 10_000_000),
          sinceSeconds: since === undefined ? undefined : Math.max(1, Math.ceil(parseDurationOption(since, 'since', verb) / 1000)),
        },
      };
    }
    case 'read': {
      const [cluster = '', stream = ''] = expect(['cluster', 'stream']);
      if (stream === '') throw new UsageError('read: <stream> must not be empty', verb);
      const from = str('from');
      const count = str('count');
      return {
        kind: 'command',
        command: {
          ...common,
          verb,
          cluster: dnsName(cluster, 'cluster', verb),
          stream,
          from: from === undefined ? 0 : parseCount(from, 'from', verb, 0, Number.MAX_SAFE_INTEGER),
          count: count === undefined ? 20 : parseCount(count, 'count', verb, 1, 4096),
        },
      };
    }
    case 'append': {
      const [cluster = '', stream = '', type = '', json = ''] = expect(['cluster', 'stream', 'type', 'json']);
      if (stream === '') throw new UsageError('append: <stream> must not be empty', verb);
      if (type === '') throw new UsageError('append: <type> must not be empty', verb);
      let data: unknown;
      try {
        data = JSON.parse(json);
      } catch (err: unknown) {
        throw new UsageError(`append: <json> is not JSON: ${(err as Error).message}`, verb);
      }
      return { kind: 'command', command: { ...common, verb, cluster: dnsName(cluster, 'cluster', verb), stream, type, data } };
    }
  }
}
