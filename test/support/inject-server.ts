/**
 * An in-process API over the real engine in --mem-db mode, for `inject` tests of the HTTP layer.
 */
import type { FastifyInstance } from 'fastify';
import { pino } from 'pino';
import { buildServer } from '../../node/src/api/build-server.js';
import { createSecurity } from '../../node/src/api/security/security.js';
import { loadConfig } from '../../node/src/config/load.js';
import { openMemEngine } from './engine-fixture.js';
import type { Engine } from '../../node/src/storage/event-db.js';

export interface InjectServer {
  readonly app: FastifyInstance;
  readonly db: Engine;
  close(): Promise<void>;
}

export async function startInjectServer(argv: string[] = []): Promise<InjectServer> {
  const db = await openMemEngine();
  const log = pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' });
  const security = await createSecurity({ db, log });
  const loaded = loadConfig({ argv: ['--mem-db', ...argv], env: {}, readFile: () => '' });
  const app = buildServer({
    db,
    security,
    log,
    loaded,
    version: '0.0.0-test',
    requestShutdown: () => undefined,
  });
  await app.ready();
  return {
    app,
    db,
    async close() {
      await app.close();
      security.close();
      await db.close();
    },
  };
}
