/**
 * The browser tests' Chromium: Debian's (`make test-tools` installs it), driven by playwright-core
 * (whose own browser download cannot work here). Every page collects its script errors and console
 * errors; screenshots go to .local/web-screenshots/ (gitignored).
 */
import { mkdirSync } from 'node:fs';
import { resolve } from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { expect } from 'vitest';

export const CHROMIUM = process.env['CHROMIUM_PATH'] ?? '/usr/bin/chromium';
export const SCREENSHOTS = resolve(import.meta.dirname, '../../.local/web-screenshots');

export async function launchBrowser(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] });
}

export interface WatchedPage {
  readonly page: Page;
  readonly context: BrowserContext;
  /** Uncaught script errors and console errors, except the network lines Chromium writes itself. */
  readonly errors: string[];
  /** Chromium's own "Failed to load resource" lines: answers the pages handle (a 401, a 404). */
  readonly failedLoads: string[];
  close(): Promise<void>;
}

export async function openPage(browser: Browser, width = 1280, height = 900, options: { ignoreHTTPSErrors?: boolean } = {}): Promise<WatchedPage> {
  const context = await browser.newContext({ viewport: { width, height }, ...options });
  const page = await context.newPage();
  page.setDefaultTimeout(20_000);
  const errors: string[] = [];
  const failedLoads: string[] = [];
  page.on('pageerror', (err) => errors.push(`pageerror: ${err.message}`));
  page.on('console', (msg) => {
    if (msg.type() !== 'error') return;
    if (msg.text().startsWith('Failed to load resource')) failedLoads.push(msg.text());
    else errors.push(`console: ${msg.text()}`);
  });
  return { page, context, errors, failedLoads, close: () => context.close() };
}

export async function logIn(page: Page, baseUrl: string, login: string, password: string): Promise<void> {
  await page.goto(`${baseUrl}/`);
  await page.getByLabel('User').fill(login);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Log in' }).click();
}

export async function screenshot(page: Page, name: string): Promise<void> {
  mkdirSync(SCREENSHOTS, { recursive: true });
  await page.screenshot({ path: resolve(SCREENSHOTS, `${name}.png`), fullPage: true });
}

/** The page is no wider than its window: nothing needs a horizontal scroll at the page level. */
export async function expectNoPageOverflow(page: Page): Promise<void> {
  // a string: the test code is compiled without the DOM's types
  const { scroll, client } = await page.evaluate<{ scroll: number; client: number }>(
    '({ scroll: document.documentElement.scrollWidth, client: document.documentElement.clientWidth })',
  );
  expect(scroll).toBeLessThanOrEqual(client);
}
