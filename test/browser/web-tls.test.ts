/**
 * A node that serves TLS serves its web interface over HTTPS too, and the pages' API calls go to
 * the same https origin: a login and a stream read work end to end. (The test CA is not in
 * Chromium's store, so the browser context accepts the node's certificate without checking it;
 * what is checked here is that nothing is served or called over plain HTTP.)
 */
import { copyFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createCa, issueNodeCertificate } from '../support/certificates.js';
import { startNode, tempDir, type NodeProcess } from '../support/node-process.js';
import { launchBrowser, logIn, openPage, screenshot } from './browser.js';

const dir = tempDir('eventdb-web-tls-');
let node: NodeProcess;
let browser: Browser;

beforeAll(async () => {
  const ca = createCa(join(dir.path, 'ca'), 'ca', 'EventDB Web Test CA');
  const cert = issueNodeCertificate(join(dir.path, 'node'), 'node', ca, 'eventdb-node');
  const roots = join(dir.path, 'roots');
  mkdirSync(roots);
  copyFileSync(ca.certPath, join(roots, 'ca.crt'));
  node = await startNode({
    insecure: false,
    args: ['--certificate-file', cert.certPath, '--certificate-private-key-file', cert.keyPath, '--trusted-root-certificates-path', roots],
  });
  browser = await launchBrowser();
});

afterAll(async () => {
  await browser?.close();
  await node?.stop();
  dir.remove();
});

it('serves the interface and its API calls over HTTPS', async () => {
  expect(node.baseUrl).toMatch(/^https:\/\//);
  const watched = await openPage(browser, 1280, 900, { ignoreHTTPSErrors: true });
  const { page } = watched;
  const urls: string[] = [];
  page.on('request', (request) => urls.push(request.url()));
  try {
    await logIn(page, node.baseUrl, 'admin', 'changeit');
    await expect.poll(() => page.getByTestId('node-state').textContent()).toBe('leader');
    await page.goto(`${node.baseUrl}/web/#/streams/%24all`);
    await expect.poll(() => page.getByTestId('event-number').count()).toBeGreaterThan(0);
    await screenshot(page, 'tls-all');
  } finally {
    await watched.close();
  }
  expect(watched.errors).toEqual([]);
  expect(urls.length).toBeGreaterThan(3);
  expect(urls.filter((u) => !u.startsWith(`${node.baseUrl}/`))).toEqual([]);
});
