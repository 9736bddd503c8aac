/**
 * The web interface in a real browser (Debian's Chromium through playwright-core) against a real
 * node process: what a user does with it and sees. Each test saves a screenshot of its page
 * under .local/web-screenshots/; none may leave a script or console error behind (Chromium's own
 * "Failed to load resource" lines for answers the pages handle, such as a refused login's 401,
 * are kept apart).
 */
import { randomUUID } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import type { Browser } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { CompetingConsumer } from '../support/competing-consumer.js';
import { httpClient, EVENTS_JSON, type Http } from '../support/http-client.js';
import { startNode, type NodeProcess } from '../support/node-process.js';
import { expectNoPageOverflow, launchBrowser, logIn, openPage, screenshot, type WatchedPage } from './browser.js';

const BROWSER_ACCEPT = 'text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8';

let node: NodeProcess;
let http: Http;
let browser: Browser;
let current: WatchedPage | undefined;

async function open(width = 1280, height = 900): Promise<WatchedPage> {
  current = await openPage(browser, width, height);
  return current;
}

async function appendEvents(stream: string, from: number, count: number, eventType = 'Numbered'): Promise<void> {
  const events = Array.from({ length: count }, (_, i) => ({ eventId: randomUUID(), eventType, data: { n: from + i } }));
  const response = await http('POST', `/streams/${encodeURIComponent(stream)}`, { headers: { 'content-type': EVENTS_JSON }, body: JSON.stringify(events) });
  expect(response.status).toBe(201);
}

beforeAll(async () => {
  node = await startNode({ args: ['--run-projections', 'All'] });
  http = httpClient(node.baseUrl);
  browser = await launchBrowser();
});

afterEach(async () => {
  const page = current;
  current = undefined;
  if (page === undefined) return;
  await page.close();
  expect(page.errors).toEqual([]);
});

afterAll(async () => {
  await browser?.close();
  await node?.stop();
});

describe('serving the interface', () => {
  it('redirects a browser from / to /web/, leaves API clients alone, and keeps the assets under 500 KB compressed', async () => {
    const forBrowser = await http('GET', '/', { headers: { accept: BROWSER_ACCEPT }, auth: false });
    expect(forBrowser.status).toBe(302);
    expect(forBrowser.headers.get('location')).toBe('/web/');
    for (const accept of ['application/json', '*/*', 'application/vnd.eventstore.atom+json']) {
      const forClient = await http('GET', '/', { headers: { accept }, auth: false });
      expect(forClient.status).toBe(404);
    }
    expect((await http('GET', '/web', { auth: false })).headers.get('location')).toBe('/web/');

    const index = await http('GET', '/web/', { auth: false });
    expect(index.status).toBe(200);
    expect(index.headers.get('content-security-policy')).toContain("default-src 'self'");
    const assets = [...index.text.matchAll(/(?:src|href)="(\/web\/assets\/[^"]+)"/g)].map((m) => m[1]!);
    expect(assets.length).toBeGreaterThanOrEqual(2);
    let compressed = gzipSync(index.bytes).length;
    for (const asset of assets) {
      const file = await http('GET', asset, { auth: false });
      expect(file.status).toBe(200);
      expect(file.headers.get('cache-control')).toContain('immutable');
      // nothing is fetched from anywhere else at run time
      expect(file.text).not.toMatch(/https?:\/\/(?!www\.w3\.org)[a-z0-9.-]+\.[a-z]{2,}\/[^\s"'`]*\.(js|css|woff2?)/i);
      compressed += gzipSync(file.bytes).length;
    }
    console.log(`web interface assets: ${assets.length + 1} files, ${compressed} bytes gzip-compressed`);
    expect(compressed).toBeLessThan(500 * 1024);
  });
});

describe('logging in', () => {
  it('refuses a wrong password with a message and shows nothing behind the form', async () => {
    const { page, failedLoads } = await open();
    await logIn(page, node.baseUrl, 'admin', 'not-the-password');
    await expect.poll(() => page.getByRole('alert').textContent()).toContain('Wrong user name or password');
    expect(await page.getByRole('navigation').count()).toBe(0);
    expect(failedLoads.every((line) => line.includes('401'))).toBe(true);
    await screenshot(page, 'login-refused');
  });

  it('logs in with the keyboard alone and paints the dashboard within a second', async () => {
    const { page } = await open();
    const started = Date.now();
    await page.goto(`${node.baseUrl}/`);
    expect(page.url()).toBe(`${node.baseUrl}/web/`);
    await page.waitForFunction(() => performance.getEntriesByName('first-contentful-paint').length > 0);
    const firstPaint = await page.evaluate<number>("performance.getEntriesByName('first-contentful-paint')[0].startTime");
    console.log(`login page first contentful paint: ${Math.round(firstPaint)} ms`);
    expect(firstPaint).toBeGreaterThan(0);
    expect(firstPaint).toBeLessThan(1000);
    // the user field has the focus; Tab goes to the password, Enter submits
    await page.keyboard.type('admin');
    await page.keyboard.press('Tab');
    await page.keyboard.type('changeit');
    const submitted = Date.now();
    await page.keyboard.press('Enter');
    // checked on every animation frame in the page, so the time is the page's, not a poll interval's
    await page.waitForFunction(
      () => {
        // runs in the page (the test code is compiled without the DOM's types)
        const doc = (globalThis as unknown as { document: { querySelector(s: string): { textContent: string | null } | null; querySelectorAll(s: string): { length: number } } }).document;
        return doc.querySelector('[data-testid=node-state]')?.textContent === 'leader' && doc.querySelectorAll('[data-testid=members] tbody tr').length === 1;
      },
      undefined,
      { polling: 'raf' },
    );
    const dashboardMs = Date.now() - submitted;
    console.log(`dashboard with the node's state and members: ${dashboardMs} ms after submit (${Date.now() - started} ms from navigation)`);
    expect(dashboardMs).toBeLessThan(1000);
    // the navigation is reachable by keyboard: Tab from the top of the page reaches the Streams link
    await page.locator('body').focus();
    let reached = false;
    for (let i = 0; i < 10 && !reached; i++) {
      await page.keyboard.press('Tab');
      reached = await page.evaluate<boolean>("document.activeElement?.textContent === 'Streams'");
    }
    expect(reached).toBe(true);
    await page.keyboard.press('Enter');
    await expect.poll(() => page.url()).toContain('#/streams');
    // the live charts draw as /stats samples arrive (every 2 s)
    await page.goto(`${node.baseUrl}/web/#/dashboard`);
    await page.reload();
    await logInAgain(page);
    await expect.poll(() => page.locator('figure.chart canvas').count()).toBe(7);
    await expect.poll(async () => page.locator('figure.chart .u-legend').first().textContent(), { timeout: 15_000 }).toMatch(/bytes\/s/);
    await page.waitForTimeout(6500);
    await screenshot(page, 'dashboard');
  });
});

async function logInAgain(page: WatchedPage['page']): Promise<void> {
  // a reload forgets the credentials (they are in memory only): the form asks again
  await page.getByLabel('User').fill('admin');
  await page.getByLabel('Password').fill('changeit');
  await page.getByRole('button', { name: 'Log in' }).click();
  await page.getByRole('navigation').waitFor();
}

describe('streams', () => {
  it('appends an event through the form and shows it, its data pretty-printed', async () => {
    const { page } = await open();
    await logIn(page, node.baseUrl, 'admin', 'changeit');
    await page.getByRole('navigation').waitFor();
    await page.goto(`${node.baseUrl}/web/#/streams`);
    await page.getByLabel('Stream name').fill('ui-orders');
    await page.getByRole('button', { name: 'Open' }).click();
    await expect.poll(() => page.getByTestId('stream-name').textContent()).toBe('ui-orders');
    await page.getByLabel('Event type').fill('OrderPlaced');
    await page.getByLabel('Data (JSON)').fill('{"orderId": 42, "lines": [{"sku": "A-1", "qty": 2}]}');
    await page.getByRole('button', { name: 'Append', exact: true }).click();
    await expect.poll(() => page.getByRole('status').first().textContent()).toContain('Appended OrderPlaced');
    const first = page.getByTestId('events').locator('li').first();
    await expect.poll(() => first.locator('summary').textContent()).toMatch(/^0 OrderPlaced/);
    await first.locator('summary').click();
    expect(await first.getByTestId('event-data').textContent()).toBe(JSON.stringify({ orderId: 42, lines: [{ sku: 'A-1', qty: 2 }] }, null, 2));
    // what the node holds is what the form sent
    const read = await http('GET', '/streams/ui-orders/0', { headers: { accept: 'application/json' } });
    expect(read.json()).toEqual({ orderId: 42, lines: [{ sku: 'A-1', qty: 2 }] });
    await screenshot(page, 'stream');

    // bad JSON is refused with a message, nothing is appended
    await page.getByLabel('Data (JSON)').fill('{not json');
    await page.getByRole('button', { name: 'Append', exact: true }).click();
    await expect.poll(() => page.getByRole('alert').first().textContent()).toContain('must be JSON');
    expect((await http('GET', '/streams/ui-orders/1', { headers: { accept: 'application/json' } })).status).toBe(404);

    // the recently written list names it
    await page.goto(`${node.baseUrl}/web/#/streams`);
    await expect.poll(() => page.getByTestId('recent-streams').textContent()).toContain('ui-orders');
  });

  it('pages through a stream of 10,000 events forwards and backwards, and reads $all from a position', async () => {
    for (let from = 0; from < 10_000; from += 500) await appendEvents('ui-big', from, 500);
    const { page } = await open();
    await logIn(page, node.baseUrl, 'admin', 'changeit');
    await page.getByRole('navigation').waitFor();
    await page.goto(`${node.baseUrl}/web/#/streams/ui-big`);
    const numbers = async () => (await page.getByTestId('event-number').allTextContents()).map(Number);
    const range = (hi: number, lo: number) => Array.from({ length: hi - lo + 1 }, (_, i) => hi - i);
    await expect.poll(numbers).toEqual(range(9999, 9980));
    await page.getByRole('link', { name: 'Older' }).click();
    await expect.poll(numbers).toEqual(range(9979, 9960));
    await page.getByRole('link', { name: 'Older' }).click();
    await expect.poll(numbers).toEqual(range(9959, 9940));
    await page.getByRole('link', { name: 'Newer' }).click();
    await expect.poll(numbers).toEqual(range(9979, 9960));
    await page.getByRole('link', { name: 'Oldest' }).click();
    await expect.poll(numbers).toEqual(range(19, 0));
    await page.getByRole('link', { name: 'Newer' }).click();
    await expect.poll(numbers).toEqual(range(39, 20));
    await page.getByRole('link', { name: 'Newest' }).click();
    await expect.poll(numbers).toEqual(range(9999, 9980));
    const first = page.getByTestId('events').locator('li').first();
    await first.locator('summary').click();
    expect(JSON.parse((await first.getByTestId('event-data').textContent()) ?? '')).toEqual({ n: 9999 });
    await screenshot(page, 'stream-paged');

    // $all from the position of ui-big's event 5000: that event is the first of the page
    const atom = await http('GET', '/streams/ui-big/5000?embed=none', { headers: { accept: 'application/vnd.eventstore.atom+json' } });
    expect(atom.status).toBe(200);
    const allPage = await http('GET', '/streams/%24all/head/backward/20', { headers: { accept: 'application/vnd.eventstore.atom+json' } });
    expect(allPage.status).toBe(200);
    await page.goto(`${node.baseUrl}/web/#/streams/%24all`);
    await expect.poll(async () => (await page.getByTestId('event-number').allTextContents())[0]).toBe('9999@ui-big');
    await page.getByRole('link', { name: 'Older' }).click();
    await expect.poll(async () => (await page.getByTestId('event-number').allTextContents())[0]).toBe('9979@ui-big');
    await page.getByLabel('From position').fill('0');
    await page.getByRole('button', { name: 'Go' }).click();
    // the first 20 records of the log, as the API reads them from position 0
    const fromStart = await http('GET', `/streams/%24all/${'0'.repeat(32)}/forward/20`, { headers: { accept: 'application/vnd.eventstore.atom+json' } });
    const titles = (fromStart.json() as { entries: { title: string }[] }).entries.map((e) => e.title);
    expect(titles).toHaveLength(20);
    await expect.poll(() => page.getByTestId('event-number').allTextContents()).toEqual(titles);
    await screenshot(page, 'all');
  });

  it('edits stream metadata and its ACL, and shows a refusal as a message', async () => {
    await appendEvents('ui-meta', 0, 3);
    const { page } = await open();
    await logIn(page, node.baseUrl, 'admin', 'changeit');
    await page.getByRole('navigation').waitFor();
    await page.goto(`${node.baseUrl}/web/#/streams/ui-meta`);
    const editor = page.getByLabel(/^Metadata \(JSON: \$maxCount/);
    await expect.poll(() => editor.inputValue()).toBe('{}');
    await editor.fill(JSON.stringify({ $maxCount: 2, $acl: { $r: '$admins', $w: '$admins' }, owner: 'billing' }));
    await page.getByRole('button', { name: 'Save metadata' }).click();
    await expect.poll(() => page.getByRole('status').first().textContent()).toContain('Metadata saved');
    const meta = await http('GET', '/streams/ui-meta/metadata', { headers: { accept: 'application/json' } });
    expect(meta.json()).toEqual({ $maxCount: 2, $acl: { $r: '$admins', $w: '$admins' }, owner: 'billing' });
    // $maxCount 2: the stream now shows its last two events only
    await page.getByRole('button', { name: 'Refresh' }).click();
    await expect.poll(async () => (await page.getByTestId('event-number').allTextContents()).map(Number)).toEqual([2, 1]);
    await screenshot(page, 'stream-metadata');

    // a user the ACL leaves out sees the refusal as a message, not the events
    await http('POST', '/users', { headers: { 'content-type': 'application/json' }, body: JSON.stringify({ loginName: 'ui-outsider', fullName: 'Outsider', groups: [], password: 'outsider-pw' }) });
    const outsider = await openPage(browser);
    try {
      await logIn(outsider.page, node.baseUrl, 'ui-outsider', 'outsider-pw');
      await outsider.page.getByRole('navigation').waitFor();
      await outsider.page.goto(`${node.baseUrl}/web/#/streams/ui-meta`);
      await expect.poll(() => outsider.page.getByRole('alert').first().textContent()).toContain('Access denied');
      expect(await outsider.page.getByTestId('event-number').count()).toBe(0);
    } finally {
      await outsider.close();
    }
    expect(outsider.errors).toEqual([]);
  });

  it('shows a missing stream as a message, and fits a 390 px wide window', async () => {
    const { page } = await open(390, 844);
    await logIn(page, node.baseUrl, 'admin', 'changeit');
    await page.getByRole('navigation').waitFor();
    await expectNoPageOverflow(page);
    await screenshot(page, 'dashboard-390');
    await page.goto(`${node.baseUrl}/web/#/streams/ui-never-written`);
    await expect.poll(() => page.getByRole('alert').first().textContent()).toContain('404');
    await expectNoPageOverflow(page);
    await page.goto(`${node.baseUrl}/web/#/streams/ui-orders`);
    await expect.poll(() => page.getByTestId('event-number').count()).toBeGreaterThan(0);
    await expectNoPageOverflow(page);
    await screenshot(page, 'stream-390');
  });
});

describe('projections', () => {
  it('creates a projection and shows its state change as events arrive', async () => {
    const { page } = await open();
    await logIn(page, node.baseUrl, 'admin', 'changeit');
    await page.getByRole('navigation').waitFor();
    await page.goto(`${node.baseUrl}/web/#/projections`);
    await page.getByLabel('Name').fill('ui-counter');
    await page.getByLabel('Query (JavaScript)').fill(
      "fromStream('ui-proj-src').when({ $init: function () { return { count: 0, total: 0 }; }, Added: function (s, e) { s.count += 1; s.total += e.data.amount; return s; } });",
    );
    await page.getByRole('button', { name: 'Create' }).click();
    await expect.poll(() => page.url()).toContain('#/projections/ui-counter');
    await expect.poll(() => page.getByTestId('projection-status').textContent()).toBe('Running');
    const addEvent = (amount: number) =>
      http('POST', '/streams/ui-proj-src', { headers: { 'content-type': EVENTS_JSON }, body: JSON.stringify([{ eventId: randomUUID(), eventType: 'Added', data: { amount } }]) });
    await addEvent(5);
    await expect.poll(async () => JSON.parse((await page.getByTestId('projection-state').textContent()) || 'null'), { timeout: 15_000 }).toEqual({ count: 1, total: 5 });
    await addEvent(7);
    await addEvent(30);
    await expect.poll(async () => JSON.parse((await page.getByTestId('projection-state').textContent()) || 'null'), { timeout: 15_000 }).toEqual({ count: 3, total: 42 });
    await screenshot(page, 'projection');
    // stop it, and the list says so
    await page.getByRole('button', { name: 'Stop' }).click();
    await expect.poll(() => page.getByTestId('projection-status').textContent()).toBe('Stopped');
    await page.goto(`${node.baseUrl}/web/#/projections`);
    await expect.poll(() => page.getByTestId('projections').locator('tr', { hasText: 'ui-counter' }).textContent()).toContain('Stopped');
    await screenshot(page, 'projections');
  });

  it('shows a faulted projection with its reason', async () => {
    const { page } = await open();
    await logIn(page, node.baseUrl, 'admin', 'changeit');
    await page.getByRole('navigation').waitFor();
    await page.goto(`${node.baseUrl}/web/#/projections`);
    await page.getByLabel('Name').fill('ui-faulty');
    await page.getByLabel('Query (JavaScript)').fill("fromStream('ui-faulty-src').when({ $any: function (s, e) { throw new Error('boom from the handler'); } });");
    await page.getByRole('button', { name: 'Create' }).click();
    await appendEvents('ui-faulty-src', 0, 1);
    await expect.poll(() => page.getByTestId('projection-status').textContent(), { timeout: 15_000 }).toMatch(/^Faulted/);
    await expect.poll(() => page.getByTestId('projection-reason').textContent()).toContain('boom from the handler');
  });
});

describe('persistent subscriptions', () => {
  it('creates a group, shows a parked message and replays it to the consumers', async () => {
    const { page } = await open();
    await logIn(page, node.baseUrl, 'admin', 'changeit');
    await page.getByRole('navigation').waitFor();
    await page.goto(`${node.baseUrl}/web/#/subscriptions`);
    await page.getByLabel('Stream', { exact: true }).fill('ui-ps-src');
    await page.getByLabel('Group', { exact: true }).fill('workers');
    await page.getByLabel('Max retries before parking').fill('0');
    await page.getByRole('button', { name: 'Create' }).click();
    await expect.poll(() => page.url()).toContain('#/subscriptions/ui-ps-src/workers');
    const info = await http('GET', '/subscriptions/ui-ps-src/workers/info', { headers: { accept: 'application/json' } });
    expect(info.json().config.maxRetryCount).toBe(0);

    await appendEvents('ui-ps-src', 0, 1, 'Job');
    const consumer = new CompetingConsumer(node.baseUrl, 'ui-ps-src', 'workers');
    try {
      const pulled = await pullUntil(consumer, 1);
      expect(await consumer.nack(pulled.entries, 'Park')).toBe(202);
      await expect.poll(() => page.getByTestId('parked-count').textContent(), { timeout: 15_000 }).toBe('1');
      await expect.poll(() => page.getByTestId('parked').locator('li').count()).toBe(1);
      await screenshot(page, 'subscription');
      await page.getByRole('button', { name: 'Replay parked messages' }).click();
      await expect.poll(() => page.getByRole('status').first().textContent()).toContain('replayed');
      // the consumer gets the parked event again
      const again = await pullUntil(consumer, 1);
      expect(again.entries.map((e) => e.eventNumber)).toEqual([0]);
      await consumer.ackAll(again);
      await expect.poll(() => page.getByTestId('parked-count').textContent(), { timeout: 15_000 }).toBe('0');
    } finally {
      await consumer.close();
    }
    await page.goto(`${node.baseUrl}/web/#/subscriptions`);
    await expect.poll(() => page.getByTestId('subscriptions').locator('tbody tr', { hasText: 'workers' }).count()).toBe(1);
    await screenshot(page, 'subscriptions');
  });
});

async function pullUntil(consumer: CompetingConsumer, count: number) {
  const deadline = Date.now() + 20_000;
  while (Date.now() < deadline) {
    const result = await consumer.pull(count, { embed: 'body' });
    if (result.entries.length >= count) return result;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error('no message delivered within 20 s');
}

describe('admin', () => {
  it('starts a scavenge and sees it complete in the history', async () => {
    const { page } = await open();
    await logIn(page, node.baseUrl, 'admin', 'changeit');
    await page.getByRole('link', { name: 'Admin' }).click();
    await page.getByRole('button', { name: 'Start scavenge' }).click();
    await expect.poll(() => page.getByRole('status').first().textContent()).toContain('Scavenge started');
    const id = ((await page.getByRole('status').first().textContent()) ?? '').replace('Scavenge started: ', '').trim();
    expect(id).toMatch(/^[0-9a-f-]{36}$/);
    const completed = page.getByTestId('scavenge-history').locator('tr', { hasText: id }).filter({ hasText: 'Completed' });
    await expect.poll(() => completed.count(), { timeout: 30_000 }).toBe(1);
    expect(await completed.textContent()).toContain('Success');
    await expect.poll(() => page.getByTestId('scavenge-current').textContent()).toBe('No scavenge is running.');
    await expect.poll(() => page.getByTestId('options').locator('tbody tr').count()).toBeGreaterThan(10);
    await screenshot(page, 'admin');
  });

  it('creates a user who, not being an admin, is shown no admin actions; resets their password and disables them', async () => {
    const { page } = await open();
    await logIn(page, node.baseUrl, 'admin', 'changeit');
    await page.getByRole('link', { name: 'Admin' }).click();
    await page.getByLabel('Login', { exact: true }).fill('ui-reader');
    await page.getByLabel('Full name').fill('Reader');
    await page.getByLabel('Password', { exact: true }).fill('reader-pw');
    await page.getByRole('button', { name: 'Create user' }).click();
    // creating a user hashes its password (scrypt): on a loaded machine that takes longer than poll's default 1 s
    await expect.poll(() => page.getByTestId('users').locator('tr[data-login="ui-reader"]').count(), { timeout: 15_000 }).toBe(1);

    const reader = await openPage(browser);
    try {
      await logIn(reader.page, node.baseUrl, 'ui-reader', 'reader-pw');
      await reader.page.getByRole('navigation').waitFor();
      expect(await reader.page.getByRole('navigation').getByRole('link').allTextContents()).toEqual(['Dashboard', 'Streams', 'Projections', 'Subscriptions']);
      await expect.poll(() => reader.page.getByTestId('node-state').textContent()).toBe('leader');
      expect(await reader.page.getByRole('button', { name: 'Resign leadership' }).count()).toBe(0);
      await reader.page.goto(`${node.baseUrl}/web/#/admin`);
      await expect.poll(() => reader.page.locator('main').textContent()).toContain('Only $ops and $admins');
      expect(await reader.page.getByRole('button', { name: 'Start scavenge' }).count()).toBe(0);
      await screenshot(reader.page, 'non-admin');
    } finally {
      await reader.close();
    }
    expect(reader.errors).toEqual([]);

    // the admin resets the password: the old one is refused, the new one admitted
    const row = page.getByTestId('users').locator('tr[data-login="ui-reader"]');
    await row.getByLabel('New password for ui-reader').fill('reader-pw-2');
    await row.getByRole('button', { name: 'Reset password' }).click();
    await expect.poll(() => page.getByRole('status').first().textContent()).toContain('Password of ui-reader reset');
    const basicOf = (pw: string) => ({ headers: { authorization: `Basic ${Buffer.from(`ui-reader:${pw}`).toString('base64')}`, accept: 'application/json' } });
    expect((await http('GET', '/users/ui-reader', basicOf('reader-pw'))).status).toBe(401);
    expect((await http('GET', '/users/ui-reader', basicOf('reader-pw-2'))).status).toBe(200);

    // disabled by the admin: the login is refused from then on
    await row.getByRole('button', { name: 'Disable' }).click();
    await expect.poll(() => row.textContent()).toContain('disabled');
    const again = await openPage(browser);
    try {
      await logIn(again.page, node.baseUrl, 'ui-reader', 'reader-pw-2');
      await expect.poll(() => again.page.getByRole('alert').textContent()).toContain('Wrong user name or password');
    } finally {
      await again.close();
    }
  });
});
