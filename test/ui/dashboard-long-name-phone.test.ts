/// <reference lib="dom" />
import type { Browser, BrowserContextOptions, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningServer } from '../../src/server/index.js';
import {
  artifactPath,
  callApi,
  go,
  launchChromium,
  openQueuePage,
  shownAfterPolls,
  signIn,
  skipBrowser,
  startDashboardServer,
} from './browser.js';

/**
 * The longest queue name there can be (80 characters) without a hyphen, where no line may
 * break: on a phone, the pages that name it in their text stay within the screen.
 */

const ADMIN = 'admin-key-0123456789';
const LONG_QUEUE = 'orders_eu_west_priority_'.repeat(4).slice(0, 80);

const PHONE: BrowserContextOptions = {
  viewport: { width: 390, height: 844 },
  isMobile: true,
  hasTouch: true,
};

let server: RunningServer;
let browser: Browser;

const api = (method: string, path: string, body?: unknown) =>
  callApi(server.url, ADMIN, method, path, body);

beforeAll(async () => {
  if (skipBrowser) return;
  server = await startDashboardServer({
    name: 'long-name-phone',
    keys: [{ name: 'ops', key: ADMIN, allow: [{ queues: '*', actions: ['admin'] }] }],
  });
  expect(LONG_QUEUE).toHaveLength(80);
  await api('PUT', `/v1/queues/${LONG_QUEUE}`, {});
  await api('POST', `/v1/queues/${LONG_QUEUE}/jobs`, { id: 'first' });
  await api('PATCH', `/v1/queues/${LONG_QUEUE}`, { paused: true });
  browser = await launchChromium();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await server?.close();
});

/** How far the page reaches past the screen, px (0 when it fits). */
const overflow = (page: Page) =>
  page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);

describe.skipIf(skipBrowser)(
  'an 80-character queue name without a hyphen on a phone (Chromium)',
  () => {
    it('keeps the queue page of a paused queue within the screen', async () => {
      const page = await signIn(browser, server.url, ADMIN, { context: PHONE });
      await openQueuePage(page, LONG_QUEUE);
      await page.getByText(`Paused: ${LONG_QUEUE} hands out no job`).waitFor();
      await expect(overflow(page)).resolves.toBeLessThanOrEqual(0);
      await page.screenshot({ path: artifactPath('long-name-queue-phone.png'), fullPage: true });
      await page.context().close();
    });

    it('keeps a job page, and the queue page once the queue is deleted, within the screen', async () => {
      const page = await signIn(browser, server.url, ADMIN, { context: PHONE });
      await go(page, `#/queues/${LONG_QUEUE}/jobs/first`);
      await page.getByRole('heading', { name: /Job\s+first/ }).waitFor();
      await page.getByRole('link', { name: LONG_QUEUE, exact: true }).waitFor();
      await expect(overflow(page)).resolves.toBeLessThanOrEqual(0);
      await api('DELETE', `/v1/queues/${LONG_QUEUE}`);
      await shownAfterPolls(page, page.getByText(`No job first in ${LONG_QUEUE} now`));
      await expect(overflow(page)).resolves.toBeLessThanOrEqual(0);
      await go(page, `#/queues/${LONG_QUEUE}`);
      await page.getByText(`No queue named ${LONG_QUEUE} that this key can see.`).waitFor();
      await expect(overflow(page)).resolves.toBeLessThanOrEqual(0);
      await page.context().close();
    });
  },
);
