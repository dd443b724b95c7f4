/// <reference lib="dom" />
import type { Browser, BrowserContextOptions, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningServer } from '../../src/server/index.js';
import {
  artifactPath,
  callApi,
  launchChromium,
  signIn,
  skipBrowser,
  startDashboardServer,
} from './browser.js';

/** What an operator reads during an incident: long names, long reasons, a phone, a keyboard. */

const ADMIN = 'admin-key-0123456789';
/** The longest queue name there can be (80 characters). */
const LONG_QUEUE = `payments-settlement-reconciliation-${'x'.repeat(45)}`;
/** A reason as a stack trace gives it, one frame a line. */
const TRACE = [
  'IllegalStateException: upstream answered 503',
  '    at Gateway.charge(Gateway.java:123)',
  '    at Worker.run(Worker.java:45)',
].join('\n');
/** A reason longer than the filter's options show (60 characters). */
const WIDE_REASON = `gateway timeout while charging the card of customer ${'7'.repeat(40)}`;

let server: RunningServer;
let browser: Browser;

const api = (method: string, path: string, body?: unknown) =>
  callApi(server.url, ADMIN, method, path, body);

const PHONE: BrowserContextOptions = {
  viewport: { width: 390, height: 844 },
  isMobile: true,
  hasTouch: true,
};

beforeAll(async () => {
  if (skipBrowser) return;
  server = await startDashboardServer({
    name: 'layout',
    keys: [{ name: 'ops', key: ADMIN, allow: [{ queues: '*', actions: ['admin'] }] }],
  });
  for (const name of [LONG_QUEUE, 'orders', 'emails']) {
    await api('PUT', `/v1/queues/${name}`, { maxDeliveries: 1 });
    await api('POST', `/v1/queues/${name}/jobs/batch`, {
      jobs: Array.from({ length: 3 }, (_, n) => ({ id: `job-${n}` })),
    });
  }
  // A queue paused, and a wait of minutes on every row: the widest figures a row shows.
  await api('PATCH', `/v1/queues/${LONG_QUEUE}`, { paused: true });
  const taken = (await api('POST', '/v1/queues/orders/receive', { max: 2 })).body.deliveries;
  const reasons = [TRACE, WIDE_REASON];
  for (const [index, delivery] of taken.entries()) {
    await api('POST', '/v1/queues/orders/nack', {
      receipt: delivery.receipt,
      requeue: false,
      reason: reasons[index],
    });
  }
  browser = await launchChromium();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await server?.close();
});

const open = (context: BrowserContextOptions = {}, hash?: string): Promise<Page> =>
  signIn(browser, server.url, ADMIN, { context, ...(hash === undefined ? {} : { hash }) });

/** How far the page, or the overview's table, reaches past its box (px; 0 when it fits). */
const overflow = (page: Page, selector: string) =>
  page.locator(selector).evaluate((element) => element.scrollWidth - element.clientWidth);

describe.skipIf(skipBrowser)('the dashboard as an operator reads it (Chromium)', () => {
  it('cuts an 80-character queue name on the overview, so that every figure stays in view', async () => {
    const page = await open();
    const link = page.getByRole('link', { name: LONG_QUEUE, exact: true });
    await link.waitFor();
    // Two readings, so that the rates and the sparklines are drawn.
    await page.waitForFunction(() => document.querySelectorAll('svg.sparkline').length === 3);
    await expect(overflow(page, '.table-scroll')).resolves.toBeLessThanOrEqual(0);
    // The whole name in its title.
    await expect(link.getAttribute('title')).resolves.toBe(LONG_QUEUE);
    await page.screenshot({ path: artifactPath('layout-long-queue.png') });
    await page.context().close();

    // On a phone the table scrolls sideways, but the first figures sit beside the names.
    const phone = await open(PHONE);
    await phone.getByRole('link', { name: LONG_QUEUE, exact: true }).waitFor();
    const ready = await phone
      .getByRole('columnheader', { name: 'Ready', exact: true })
      .boundingBox();
    expect(ready).not.toBeNull();
    expect((ready?.x ?? 0) + (ready?.width ?? 0)).toBeLessThanOrEqual(390);
    await phone.screenshot({ path: artifactPath('layout-long-queue-phone.png') });
    await phone.context().close();
  });

  it('keeps the page within a phone when a dead letter has a long reason', async () => {
    const page = await open(PHONE, '#/queues/orders/dead-letters');
    await page.locator('table tbody tr').nth(1).waitFor();
    await expect(overflow(page, 'html')).resolves.toBeLessThanOrEqual(0);
    const select = await page.locator('.toolbar select').boundingBox();
    expect((select?.x ?? 0) + (select?.width ?? 0)).toBeLessThanOrEqual(390);
    await page.screenshot({ path: artifactPath('layout-reason-phone.png') });
    await page.context().close();
  });

  it('shows a reason of several lines with its line breaks on the job page', async () => {
    const page = await open({}, '#/queues/orders/jobs/job-0');
    const fact = page
      .locator('dl.facts > div')
      .filter({ has: page.getByText('Reason', { exact: true }) })
      .locator('dd');
    await fact.waitFor();
    // The text as laid out (innerText): the breaks are there only if drawn.
    // biome-ignore lint/performance/useDomNodeTextContent: the drawn text is what is checked
    await expect(fact.innerText()).resolves.toBe(TRACE);
    const attempt = page
      .locator('ol.timeline dl > div')
      .filter({ has: page.getByText('Reason', { exact: true }) })
      .locator('dd');
    // biome-ignore lint/performance/useDomNodeTextContent: the drawn text is what is checked
    await expect(attempt.innerText()).resolves.toBe(TRACE);
    await page.context().close();
  });

  it('skips to the content of the page shown, without leaving it', async () => {
    const page = await open({}, '#/queues/orders/dead-letters');
    await page.getByRole('heading', { name: /Dead letters of\s+orders/ }).waitFor();
    await page.locator('table tbody tr').first().waitFor();
    await page.getByText('Skip to content').focus();
    await page.keyboard.press('Enter');
    await expect.poll(() => page.evaluate(() => document.activeElement?.id)).toBe('main');
    await expect(page.evaluate(() => location.hash)).resolves.toBe('#/queues/orders/dead-letters');
    await expect(page.getByText('No such page').count()).resolves.toBe(0);
    await expect(page.locator('table tbody tr').count()).resolves.toBe(2);
    // The next Tab goes on inside the content: the sections of the queue.
    await page.keyboard.press('Tab');
    await expect(page.evaluate(() => document.activeElement?.textContent)).resolves.toBe(
      'Overview',
    );
    await page.context().close();
  });
});
