import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Fastify from 'fastify';
import { afterAll, describe, expect, it } from 'vitest';
import { prefersHtml, registerWebRoutes } from './web.js';

describe('prefersHtml', () => {
  it('is true for a browser navigation only', () => {
    expect(prefersHtml('text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8')).toBe(true);
    expect(prefersHtml('text/html')).toBe(true);
    expect(prefersHtml(undefined)).toBe(false);
    expect(prefersHtml('*/*')).toBe(false);
    expect(prefersHtml('application/json')).toBe(false);
    expect(prefersHtml('application/vnd.eventstore.atom+json')).toBe(false);
    expect(prefersHtml('application/json, text/html;q=0.5')).toBe(false);
    expect(prefersHtml('text/html;q=0')).toBe(false);
  });
});

describe('registerWebRoutes', () => {
  const dir = mkdtempSync(join(tmpdir(), 'edb-web-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('serves the built files under /web/ and redirects a browser from /', async () => {
    const root = join(dir, 'built');
    mkdirSync(join(root, 'assets'), { recursive: true });
    writeFileSync(join(root, 'index.html'), '<!doctype html><title>EventDB</title>');
    writeFileSync(join(root, 'assets', 'index-abc.js'), 'console.log(1)');
    const app = Fastify();
    registerWebRoutes(app, { root });
    try {
      const browser = await app.inject({ url: '/', headers: { accept: 'text/html' } });
      expect([browser.statusCode, browser.headers.location]).toEqual([302, '/web/']);
      expect((await app.inject({ url: '/', headers: { accept: 'application/json' } })).statusCode).toBe(404);
      expect((await app.inject({ url: '/web' })).headers.location).toBe('/web/');
      expect((await app.inject({ url: '/web/projections.htm' })).headers.location).toBe('/web/#/projections');
      const index = await app.inject({ url: '/web/' });
      expect(index.statusCode).toBe(200);
      expect(index.body).toContain('<title>EventDB</title>');
      expect(index.headers['cache-control']).toBe('no-cache');
      expect(index.headers['x-frame-options']).toBe('DENY');
      const asset = await app.inject({ url: '/web/assets/index-abc.js' });
      expect(asset.headers['cache-control']).toContain('immutable');
      expect((await app.inject({ url: '/web/../package.json' })).statusCode).not.toBe(200);
    } finally {
      await app.close();
    }
  });

  it('says the interface was not built when its files are missing', async () => {
    const app = Fastify();
    registerWebRoutes(app, { root: join(dir, 'missing') });
    try {
      const response = await app.inject({ url: '/web/' });
      expect(response.statusCode).toBe(503);
      expect(response.body).toContain('make build');
    } finally {
      await app.close();
    }
  });
});
