import { describe, expect, it } from 'vitest';
import { parseCommandLine, UsageError, type Command } from './args.js';

function command(argv: string[]): Command {
  const outcome = parseCommandLine(argv);
  if (outcome.kind !== 'command') throw new Error(`not a command: ${outcome.kind}`);
  return outcome.command;
}

function usage(argv: string[]): string {
  try {
    parseCommandLine(argv);
  } catch (err: unknown) {
    expect(err).toBeInstanceOf(UsageError);
    return (err as Error).message;
  }
  throw new Error(`no usage error for ${argv.join(' ')}`);
}

describe('the command line', () => {
  it('parses each verb with the common options', () => {
    expect(command(['status', 'orders', '-n', 'shop', '--context', 'kind-x', '-o', 'json', '--watch'])).toEqual({
      verb: 'status', cluster: 'orders', namespace: 'shop', context: 'kind-x', output: 'json', watch: true, intervalMs: 2000,
    });
    expect(command(['backup', 'orders', '--method', 'FileCopy', '--claim', 'backups', '--differential', '--wait', '--timeout', '10m'])).toMatchObject({
      verb: 'backup', method: 'FileCopy', claim: 'backups', differential: true, wait: true, timeoutMs: 600_000, output: 'text', namespace: undefined,
    });
    expect(command(['restart', 'orders', 'orders-1'])).toMatchObject({ verb: 'restart', cluster: 'orders', pod: 'orders-1', wait: false });
    expect(command(['restart', 'orders'])).toMatchObject({ verb: 'restart', pod: undefined });
    expect(command(['hibernate', 'off', 'orders'])).toMatchObject({ verb: 'hibernate', cluster: 'orders', on: false });
    expect(command(['fence', 'on', 'orders', 'orders-2'])).toMatchObject({ verb: 'fence', cluster: 'orders', pod: 'orders-2', on: true });
    expect(command(['logs', 'orders', '-f', '--json', '--tail', '100', '--since', '10m'])).toMatchObject({ verb: 'logs', follow: true, json: true, tail: 100, sinceSeconds: 600 });
    expect(command(['read', 'orders', 'order-1', '--from', '5', '--count', '10'])).toMatchObject({ verb: 'read', stream: 'order-1', from: 5, count: 10 });
    expect(command(['append', 'orders', 'order-1', 'Placed', '{"total":3}'])).toMatchObject({ verb: 'append', stream: 'order-1', type: 'Placed', data: { total: 3 } });
    expect(command(['scavenge', 'orders', '--wait', '--throttle-percent', '50'])).toMatchObject({ verb: 'scavenge', wait: true, throttlePercent: 50, ignoreMaintenanceWindows: false });
  });

  it('answers --help for the tool and for each verb', () => {
    const main = parseCommandLine(['--help']);
    expect(main.kind).toBe('help');
    expect(main.kind === 'help' && main.text).toContain('Exit codes: 0 ok, 1 failure');
    const verb = parseCommandLine(['backup', '--help']);
    expect(verb.kind === 'help' && verb.text).toContain('--method <m>');
    expect(parseCommandLine([]).kind).toBe('help');
    expect(parseCommandLine(['version']).kind).toBe('version');
  });

  it('names the bad option, value or argument', () => {
    expect(usage(['status', 'orders', '--bogus'])).toBe('status: unknown option --bogus (see kubectl eventdb status --help)');
    expect(usage(['status', 'orders', '-x'])).toContain('unknown option -x');
    expect(usage(['backup', 'orders', '--method'])).toBe('backup: option --method needs a value');
    expect(usage(['backup', 'orders', '--method', 'Tape'])).toBe("backup: --method must be VolumeSnapshot or FileCopy, not 'Tape'");
    expect(usage(['backup', 'orders', '--method', 'FileCopy'])).toContain('needs --claim');
    expect(usage(['backup', 'orders', '--claim', 'x'])).toBe('backup: --claim needs --method FileCopy');
    expect(usage(['backup', 'orders', '--wait', '--timeout', 'soon'])).toContain("--timeout 'soon' is not a duration");
    expect(usage(['status', 'orders', '-o', 'xml'])).toBe("status: --output must be json or yaml, not 'xml'");
    expect(usage(['status'])).toContain('status: missing <cluster>');
    expect(usage(['status', 'orders', 'extra'])).toContain("unexpected argument 'extra'");
    expect(usage(['status', 'Orders_1'])).toContain("cluster 'Orders_1' is not a valid Kubernetes name");
    expect(usage(['read', 'orders', 's', '--count', '0'])).toBe('read: --count must be between 1 and 4096, not 0');
    expect(usage(['read', 'orders', 's', '--from', '-1'])).toContain('--from');
    expect(usage(['append', 'orders', 's', 't', '{nope'])).toContain('append: <json> is not JSON');
    expect(usage(['hibernate', 'orders'])).toBe("hibernate: the first argument must be on or off, not 'orders'");
    expect(usage(['fence', 'on', 'orders'])).toContain('fence: missing <pod>');
    expect(usage(['promote', 'orders'])).toContain("unknown verb 'promote'");
    expect(usage(['scavenge', 'orders', '--throttle-percent', '0'])).toContain('--throttle-percent must be between 1 and 100');
  });

  it('takes -n, --context and --help on every verb, -o json|yaml on the verbs that print data, and refuses -o elsewhere', () => {
    const samples: Record<string, string[]> = {
      status: ['status', 'orders'], report: ['report', 'orders'], backup: ['backup', 'orders'], scavenge: ['scavenge', 'orders'],
      restart: ['restart', 'orders'], switchover: ['switchover', 'orders', 'orders-1'], hibernate: ['hibernate', 'on', 'orders'],
      fence: ['fence', 'on', 'orders', 'orders-1'], logs: ['logs', 'orders'], read: ['read', 'orders', 's'], append: ['append', 'orders', 's', 't', '{}'],
    };
    const dataVerbs = ['status', 'report', 'backup', 'scavenge', 'restart', 'read', 'append'];
    for (const [verb, argv] of Object.entries(samples)) {
      expect(command([...argv, '-n', 'shop', '--context', 'kind-x'])).toMatchObject({ verb, namespace: 'shop', context: 'kind-x' });
      const help = parseCommandLine([...argv, '--help']);
      expect(help.kind, verb).toBe('help');
      const text = help.kind === 'help' ? help.text : '';
      expect(text).toContain(`Usage: kubectl eventdb ${verb} `);
      expect(text).toMatch(/Exit codes: 0 ok; 1 .+; 2 a usage error/);
      if (dataVerbs.includes(verb)) {
        expect(command([...argv, '-o', 'yaml'])).toMatchObject({ output: 'yaml' });
        expect(command([...argv, '--output', 'json'])).toMatchObject({ output: 'json' });
        expect(text).toContain('-o, --output json|yaml');
      } else {
        expect(usage([...argv, '-o', 'yaml'])).toContain(`${verb}: -o yaml does not apply: ${verb} prints no data`);
      }
    }
    // logs: -o json is --json (the raw records), -o yaml is refused
    expect(command(['logs', 'orders', '-o', 'json'])).toMatchObject({ json: true });
    expect(usage(['logs', 'orders', '-o', 'yaml'])).toContain('(-o json, or --json, prints the raw records)');
  });
});
