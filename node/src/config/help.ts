/**
 * `--help` and `--version`: what the command line asks for before any option is loaded, and the
 * help text, generated from the one option table (schema.ts) so it cannot drift from it. Pure:
 * the caller prints and exits without touching any file.
 */
import { envName, flagName, yamlKey } from './option-names.js';
import { OPTION_NAMES, optionSpec, type OptionGroup, type OptionName } from './schema.js';

export type CommandLineRequest = 'help' | 'version' | 'run';

/** `--help`/`-h` and `--version` win over everything else on the command line. */
export function commandLineRequest(argv: readonly string[]): CommandLineRequest {
  if (argv.some((arg) => arg === '--help' || arg === '-h')) return 'help';
  if (argv.includes('--version')) return 'version';
  return 'run';
}

function defaultText(name: OptionName): string {
  const parsed = optionSpec(name).schema.safeParse(undefined);
  if (!parsed.success || parsed.data === undefined) return '(none)';
  return typeof parsed.data === 'string' ? parsed.data : JSON.stringify(parsed.data);
}

function valueHint(name: OptionName): string {
  const kind = optionSpec(name).kind;
  return kind === 'boolean' ? '[true|false]' : `<${kind}>`;
}

/** The options of each group, groups in the order the table first names them. */
function optionsByGroup(): Map<OptionGroup, OptionName[]> {
  const groups = new Map<OptionGroup, OptionName[]>();
  for (const name of OPTION_NAMES) {
    const group = optionSpec(name).group;
    groups.set(group, [...(groups.get(group) ?? []), name]);
  }
  return groups;
}

export function renderHelp(version: string): string {
  const lines = [
    `EventDB ${version}: an event database node with EventStoreDB's HTTP API.`,
    '',
    'Usage: eventdb [options]',
    '       eventdb --help | -h      this text',
    '       eventdb --version        the version',
    '',
    'Every option has three forms: a flag (--node-port 2113 or --node-port=2113), a key of the',
    'YAML file given by --config (NodePort: 2113), and an environment variable',
    '(SERVICE_NODE_PORT=2113; the original\'s EVENTSTORE_ and KURRENTDB_ prefixes work too).',
    'Precedence: defaults < file < environment < flags. A boolean flag alone means true.',
    'Unknown or invalid options stop the node with exit code 2 (unknown variables: a warning).',
  ];
  for (const [group, names] of optionsByGroup()) {
    lines.push('', `${group}:`);
    for (const name of names) {
      const spec = optionSpec(name);
      lines.push(
        `  ${flagName(name)} ${valueHint(name)}`,
        `      YAML ${yamlKey(name)}, env ${envName(name)}, default ${defaultText(name)}`,
        `      ${spec.schema.description ?? ''}${spec.deprecationMessage === undefined ? '' : ` (${spec.deprecationMessage})`}`,
      );
      for (const alias of spec.aliases ?? []) {
        lines.push(`      also ${flagName(alias)}, YAML ${yamlKey(alias)}, env ${envName(alias)}`);
      }
    }
  }
  lines.push(
    '',
    'Default users: admin (password changeit, group $admins) and ops (changeit, $ops), created',
    'on first start with --default-admin-password / --default-ops-password.',
    '',
  );
  return lines.join('\n');
}
