import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { pino } from 'pino';
import { EventDbError } from '../errors.js';
import { loadConfig, type LoadedConfig } from '../config/load.js';
import { createReloader, describeChanges, diffConfig } from './reload.js';

function loaded(yaml: string): LoadedConfig {
  return loadConfig({ argv: ['--config', 'c.yaml'], env: {}, readFile: () => yaml });
}

function memoryLogger(): { log: pino.Logger; records: Array<Record<string, unknown>> } {
  const records: Array<Record<string, unknown>> = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      records.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
      done();
    },
  });
  return { log: pino({ level: 'info' }, stream), records };
}

describe('diffConfig / describeChanges', () => {
  it('lists changed options by YAML name and masks secrets', () => {
    const before = loaded('LogLevel: info').config;
    const after = loaded('LogLevel: debug\nDefaultAdminPassword: s3cret\nHttpPort: 3000').config;
    const changes = diffConfig(before, after);
    expect(changes.map((c) => c.option)).toEqual(['logLevel', 'defaultAdminPassword', 'nodePort']);
    expect(describeChanges(changes)).toEqual({
      LogLevel: { from: 'info', to: 'debug' },
      DefaultAdminPassword: { from: '****', to: '****' },
      NodePort: { from: 2113, to: 3000 },
    });
    expect(diffConfig(before, before)).toEqual([]);
  });
});

describe('createReloader', () => {
  it('applies the log level, keeps other changes pending until a restart, and runs steps', async () => {
    const { log, records } = memoryLogger();
    let yaml = 'LogLevel: info\nChunkSize: 8192';
    const reloader = createReloader({ load: () => loaded(yaml), initial: loaded(yaml).config, log });
    const seen: number[] = [];
    reloader.addStep('probe', (l) => void seen.push(l.config.chunkSize));

    yaml = 'LogLevel: warn\nChunkSize: 16384';
    const first = await reloader.reload();
    if (!first.ok) throw first.error;
    expect(first.applied.map((c) => c.option)).toEqual(['logLevel']);
    expect(first.needsRestart.map((c) => c.option)).toEqual(['chunkSize']);
    expect(log.level).toBe('warn');
    expect(reloader.current().logLevel).toBe('warn');
    expect(reloader.current().chunkSize).toBe(8192);
    expect(seen).toEqual([16384]);
    // at level warn the info line is gone, the restart warning is there
    expect(records.find((r) => r['msg'] === 'configuration reloaded')).toBeUndefined();
    expect(records.find((r) => r['option'] === 'ChunkSize')).toMatchObject({ from: 8192, to: 16384 });

    log.level = 'info';
    records.length = 0;
    const second = await reloader.reload();
    if (!second.ok) throw second.error;
    expect(second.applied).toEqual([]);
    expect(second.needsRestart.map((c) => c.option)).toEqual(['chunkSize']);
  });

  it('keeps the running configuration when the sources became invalid', async () => {
    const { log, records } = memoryLogger();
    let yaml = 'LogLevel: info';
    const reloader = createReloader({ load: () => loaded(yaml), initial: loaded(yaml).config, log });
    yaml = 'LogLevel: loud\nNoSuchOption: 1';
    const outcome = await reloader.reload();
    expect(outcome).toMatchObject({ ok: false, failedAt: 'config', error: { code: 'EDB_CONFIG_INVALID' } });
    expect(log.level).toBe('info');
    const failure = records.find((r) => String(r['msg']).startsWith('configuration reload failed'));
    expect(JSON.stringify(failure?.['issues'])).toMatch(/LogLevel[\s\S]*NoSuchOption|NoSuchOption[\s\S]*LogLevel/);
  });

  it('passes errors other than ConfigError on', async () => {
    const { log } = memoryLogger();
    const reloader = createReloader({
      load: () => {
        throw new Error('disk gone');
      },
      initial: loaded('').config,
      log,
    });
    await expect(reloader.reload()).rejects.toThrow('disk gone');
  });

  it('is all or nothing: a step that refuses leaves the log level and every other step as they were', async () => {
    const { log, records } = memoryLogger();
    let yaml = 'LogLevel: info\nChunkSize: 8192';
    const reloader = createReloader({ load: () => loaded(yaml), initial: loaded(yaml).config, log });
    const committed: string[] = [];
    let refuse = true;
    reloader.addStep('first', () => () => void committed.push('first'));
    reloader.addStep(
      'certificates',
      (l) => {
        if (refuse) throw new EventDbError('EDB_CERTIFICATE_INVALID', 'certificate file /x does not exist', { httpStatus: 400 });
        return () => void committed.push(`certificates ${l.config.chunkSize}`);
      },
      { liveOptions: ['chunkSize'] },
    );
    yaml = 'LogLevel: debug\nChunkSize: 16384';
    const failed = await reloader.reload();
    expect(failed).toMatchObject({ ok: false, failedAt: { step: 'certificates' }, error: { message: 'certificate file /x does not exist' } });
    expect(log.level).toBe('info');
    expect(reloader.current().chunkSize).toBe(8192);
    expect(committed).toEqual([]);
    expect(records.find((r) => r['level'] === 50)).toMatchObject({
      step: 'certificates',
      code: 'EDB_CERTIFICATE_INVALID',
      msg: 'configuration reload failed, nothing changed: certificate file /x does not exist',
    });

    refuse = false;
    const done = await reloader.reload();
    if (!done.ok) throw done.error;
    // a step's live options are applied, not reported as needing a restart
    expect(done.applied.map((c) => c.option)).toEqual(['logLevel', 'chunkSize']);
    expect(done.needsRestart).toEqual([]);
    expect(log.level).toBe('debug');
    expect(committed).toEqual(['first', 'certificates 16384']);
  });

  it('runs one reload at a time', async () => {
    const { log } = memoryLogger();
    const reloader = createReloader({ load: () => loaded(''), initial: loaded('').config, log });
    const events: string[] = [];
    let n = 0;
    reloader.addStep('slow', async () => {
      const id = ++n;
      events.push(`start ${id}`);
      await new Promise((r) => setTimeout(r, 30));
      events.push(`end ${id}`);
    });
    await Promise.all([reloader.reload(), reloader.reload(), reloader.reload()]);
    expect(events).toEqual(['start 1', 'end 1', 'start 2', 'end 2', 'start 3', 'end 3']);
  });
});
