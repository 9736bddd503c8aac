import { describe, expect, it } from 'vitest';
import { commandLineRequest, renderHelp } from './help.js';
import { envName, flagName, yamlKey } from './option-names.js';
import { OPTION_NAMES, optionSpec } from './schema.js';

describe('command line requests', () => {
  it('answers --help and -h before --version, and runs otherwise', () => {
    expect(commandLineRequest(['--mem-db', '--help'])).toBe('help');
    expect(commandLineRequest(['-h'])).toBe('help');
    expect(commandLineRequest(['--version', '-h'])).toBe('help');
    expect(commandLineRequest(['--version'])).toBe('version');
    expect(commandLineRequest(['--mem-db', '--http-port', '1'])).toBe('run');
  });
});

describe('help text', () => {
  const help = renderHelp('9.8.7');

  it('names every option in its three forms with its default and meaning', () => {
    expect(help).toContain('EventDB 9.8.7');
    for (const name of OPTION_NAMES) {
      const spec = optionSpec(name);
      const block = help.slice(help.indexOf(`  ${flagName(name)} `));
      expect(block.startsWith(`  ${flagName(name)} `), name).toBe(true);
      const [, forms, meaning] = block.split('\n');
      expect(forms).toContain(`YAML ${yamlKey(name)}, env ${envName(name)}, default `);
      expect(meaning?.trim()).toContain(spec.schema.description ?? '<none>');
    }
    expect(help).toMatch(/--node-port <integer>\n\s+YAML NodePort, env SERVICE_NODE_PORT, default 2113\n.*\n\s+also --http-port, YAML HttpPort, env SERVICE_HTTP_PORT\n/);
    expect(help).toMatch(/--mem-db \[true\|false\]\n\s+YAML MemDb, env SERVICE_MEM_DB, default false\n/);
  });

  it('groups the options as /info/options does', () => {
    const groups = [...new Set(OPTION_NAMES.map((name) => optionSpec(name).group))];
    for (const group of groups) expect(help).toContain(`\n${group}:\n`);
    const database = help.slice(help.indexOf('\nDatabase:\n'));
    expect(database.indexOf('--chunk-size')).toBeLessThan(database.indexOf('\nInterface:\n'));
  });
});
