/**
 * The dashboard of a 3-node cluster of real processes, in Debian's Chromium: it lists the three
 * members with their checkpoints, and after "Resign leadership" on the leader's page the members
 * table shows another node as the leader (the page is served by the node that resigned, which
 * then answers as a follower).
 */
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createCluster, type TestCluster } from '../support/cluster.js';
import { launchBrowser, logIn, openPage, screenshot } from './browser.js';

let cluster: TestCluster;
let browser: Browser;

beforeAll(async () => {
  cluster = await createCluster({ size: 3, firstHost: 131 });
  await cluster.waitForStable(120_000);
  browser = await launchBrowser();
}, 200_000);

afterAll(async () => {
  await browser?.close();
  await cluster?.stop();
});

it("shows the cluster's members with their checkpoints and a leader change after a resign", async () => {
  const leader = await cluster.leader();
  const leaderEndpoint = leader.baseUrl.replace('http://', '');
  const watched = await openPage(browser);
  const { page } = watched;
  try {
    await logIn(page, leader.baseUrl, 'admin', 'changeit');
    const rows = page.getByTestId('members').locator('tbody tr');
    await expect.poll(() => rows.count(), { timeout: 20_000 }).toBe(3);
    await expect.poll(() => page.getByTestId('members').locator('tr[data-state="Leader"]').textContent()).toContain(leaderEndpoint);
    await expect.poll(() => page.getByTestId('members').locator('tr[data-state="Follower"]').count()).toBe(2);
    // every member's writer checkpoint is a number, the same once replication has caught up
    await expect
      .poll(async () => new Set((await rows.locator('td:nth-child(4)').allTextContents()).map(Number)).size, { timeout: 20_000 })
      .toBe(1);
    await expect.poll(() => page.getByTestId('node-state').textContent()).toBe('leader');
    await page.waitForTimeout(2500);
    await screenshot(page, 'cluster');

    await page.getByRole('button', { name: 'Resign leadership' }).click();
    await expect.poll(() => page.getByRole('status').first().textContent()).toContain('Resign requested');
    // another member leads; the node serving this page follows it
    await expect
      .poll(async () => {
        const text = await page.getByTestId('members').locator('tr[data-state="Leader"]').textContent().catch(() => '');
        return text !== null && text !== '' && !text.includes(leaderEndpoint);
      }, { timeout: 60_000 })
      .toBe(true);
    await expect.poll(() => page.getByTestId('members').locator('tr[data-state="Leader"]').count()).toBe(1);
    await expect.poll(() => page.getByTestId('node-state').textContent(), { timeout: 30_000 }).toBe('follower');
    const newLeader = await cluster.leader();
    expect(newLeader.baseUrl).not.toBe(leader.baseUrl);
    await expect.poll(() => page.getByTestId('members').locator('tr[data-state="Leader"]').textContent()).toContain(newLeader.baseUrl.replace('http://', ''));
    await screenshot(page, 'cluster-after-resign');
  } finally {
    await watched.close();
  }
  expect(watched.errors).toEqual([]);
});
