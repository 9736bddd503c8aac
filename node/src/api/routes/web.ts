/**
 * The web interface: the files `make build` writes to dist/node/web/ (from node/web/, Vite),
 * served under /web/, and `/` redirecting a browser there. Only files: the pages call the same
 * HTTP API as every other client, with the credentials the user types into their login form, so
 * every ACL and endpoint policy applies to them unchanged. Nothing here reads data or credentials.
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import fastifyStatic from '@fastify/static';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { sendStatus } from '../streams/stream-http.js';

/** dist/node/src/api/routes/web.js → dist/node/web/ */
export const WEB_ROOT = fileURLToPath(new URL('../../../web/', import.meta.url));

/** The pages load only their own files; no frame may embed them (clickjacking of admin actions). */
const SECURITY_HEADERS = {
  'content-security-policy':
    "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'",
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
} as const;

export interface WebRoutesOptions {
  /** Folder of the built interface (tests); default dist/node/web/. */
  readonly root?: string;
}

export function registerWebRoutes(app: FastifyInstance, options: WebRoutesOptions = {}): void {
  const root = options.root ?? WEB_ROOT;
  app.get('/', { schema: { hide: true } }, async (request, reply) => {
    if (!prefersHtml(request.headers.accept)) return sendStatus(reply, 404, 'Not Found');
    return reply.redirect('/web/', 302);
  });
  if (!existsSync(`${root}/index.html`)) {
    const notBuilt = async (_request: unknown, reply: FastifyReply) =>
      sendStatus(reply, 503, 'Service Unavailable', 'The web interface was not built with this node (make build).');
    app.get('/web', { schema: { hide: true } }, notBuilt);
    app.get('/web/*', { schema: { hide: true } }, notBuilt);
    return;
  }
  // `/web` answers a redirect to `/web/`, so that the pages' relative URLs resolve
  app.get('/web', { schema: { hide: true } }, async (_request, reply) => reply.redirect('/web/', 302));
  // where GET /projections sends a browser (EventStoreDB's old page): the projections page here
  app.get('/web/projections.htm', { schema: { hide: true } }, async (_request, reply) => reply.redirect('/web/#/projections', 302));
  void app.register(fastifyStatic, {
    root,
    prefix: '/web/',
    index: 'index.html',
    // the cache headers are set below, per file
    cacheControl: false,
    decorateReply: false,
    schemaHide: true,
    setHeaders(res, path) {
      for (const [name, value] of Object.entries(SECURITY_HEADERS)) res.setHeader(name, value);
      // Vite names every asset by its content hash: it never changes; index.html names the current ones.
      res.setHeader('cache-control', path.includes('/assets/') ? 'public, max-age=31536000, immutable' : 'no-cache');
    },
  });
}

/**
 * True when the Accept header ranks text/html (or XHTML) at least as high as every other type it
 * names, as a browser's navigation does; API clients (JSON, Atom, `*\/*`, none) are unaffected.
 */
export function prefersHtml(accept: string | undefined): boolean {
  if (accept === undefined) return false;
  let html = -1;
  let other = -1;
  for (const part of accept.split(',')) {
    const [type = '', ...params] = part.trim().toLowerCase().split(';');
    const qParam = params.map((p) => p.trim()).find((p) => p.startsWith('q='));
    const q = qParam === undefined ? 1 : Number(qParam.slice(2));
    if (!Number.isFinite(q) || q <= 0) continue;
    if (type === 'text/html' || type === 'application/xhtml+xml') html = Math.max(html, q);
    else if (type !== '') other = Math.max(other, q);
  }
  return html > 0 && html >= other;
}
