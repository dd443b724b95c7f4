/// <reference lib="dom" />
import type { Page } from 'playwright-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { signIn, skipBrowser, useAdminDashboard } from './browser.js';

/**
 * Browser Back, reloads and links: the page of queues and the name filter of the overview, and the
 * reason the dead letters are filtered by, are in the address, so that Back from the queue or job
 * opened from them, a reload, or a link, shows them again.
 */

/** More than a page of the overview (50): two pages, the second of 11. */
const QUEUES = Array.from({ length: 60 }, (_, n) => `q${String(n).padStart(3, '0')}`);

const dashboard = useAdminDashboard({ name: 'back', queues: QUEUES });
const { api } = dashboard;

beforeAll(async () => {
  if (skipBrowser) return;
  await api('PUT', '/v1/queues/dl', { maxDeliveries: 1 });
  const ids = ['a1', 'a2', 'b1', 'b2', 'b3'];
  await api('POST', '/v1/queues/dl/jobs/batch', { jobs: ids.map((id) => ({ id })) });
  const taken = (await api('POST', '/v1/queues/dl/receive', { max: ids.length })).body;
  for (const delivery of taken.deliveries) {
    await api('POST', '/v1/queues/dl/nack', {
      receipt: delivery.receipt,
      requeue: false,
      reason: delivery.id.startsWith('a') ? 'alpha' : 'beta',
    });
  }
}, 60_000);

/** The overview says it shows `range` of the `total` queues listed (61: the 60 and dl). */
const showing = (page: Page, range: string, total = 61) =>
  expect
    .poll(() => page.locator('.pager [role=status]').textContent(), { timeout: 10_000 })
    .toBe(`${range} of ${total} ${total === 1 ? 'queue' : 'queues'}`);

const rowNames = (page: Page) => page.locator('table.figures tbody tr th a').allTextContents();

describe.skipIf(skipBrowser)(
  'Back, reloads and links keep what a page was showing (Chromium)',
  () => {
    it('shows the page of queues and the filter again on Back from a queue opened from them', async () => {
      const page = await signIn(dashboard.browser, dashboard.server.url, dashboard.key);
      await showing(page, '1–50');
      await page.getByRole('button', { name: 'Next page' }).click();
      await showing(page, '51–61');
      await page.getByRole('link', { name: 'q055', exact: true }).click();
      await page.getByRole('heading', { name: 'Queue q055', exact: true }).waitFor();
      await page.goBack();
      await showing(page, '51–61');
      await expect(rowNames(page)).resolves.toEqual(QUEUES.slice(49));

      await page.getByLabel('Filter by name').fill('q05');
      await showing(page, '1–10', 10);
      await page.getByRole('link', { name: 'q057', exact: true }).click();
      await page.getByRole('heading', { name: 'Queue q057', exact: true }).waitFor();
      await page.goBack();
      await showing(page, '1–10', 10);
      await expect(page.getByLabel('Filter by name').inputValue()).resolves.toBe('q05');
      await expect(rowNames(page)).resolves.toEqual(QUEUES.slice(50));

      // The page's own link to the overview opens it from the start.
      await page.getByRole('link', { name: 'Queues', exact: true }).click();
      await showing(page, '1–50');
      await expect(page.getByLabel('Filter by name').inputValue()).resolves.toBe('');
      await page.context().close();
    });

    it('opens the page of queues and the filter a reload or a link names', async () => {
      const page = await signIn(dashboard.browser, dashboard.server.url, dashboard.key);
      await showing(page, '1–50');
      await page.getByLabel('Filter by name').fill('Q0');
      await showing(page, '1–50', 60);
      await page.getByRole('button', { name: 'Next page' }).click();
      await showing(page, '51–60', 60);
      const hash = await page.evaluate(() => location.hash);

      await page.reload();
      await showing(page, '51–60', 60);
      await expect(page.getByLabel('Filter by name').inputValue()).resolves.toBe('Q0');

      const linked = await signIn(dashboard.browser, dashboard.server.url, dashboard.key, { hash });
      await showing(linked, '51–60', 60);
      await expect(linked.getByLabel('Filter by name').inputValue()).resolves.toBe('Q0');
      await expect(rowNames(linked)).resolves.toEqual(QUEUES.slice(50));
      await linked.context().close();
      await page.context().close();
    });

    it('filters the dead letters by the same reason again on Back from a job opened from them', async () => {
      const page = await signIn(dashboard.browser, dashboard.server.url, dashboard.key, {
        hash: '#/queues/dl/dead-letters',
      });
      const ids = page.locator('table tbody tr th a.job-id');
      await expect.poll(() => ids.count()).toBe(5);
      await page.getByLabel('Reason').selectOption('beta');
      await expect.poll(() => ids.allTextContents()).toEqual(['b1', 'b2', 'b3']);
      await page.getByRole('link', { name: 'b2', exact: true }).click();
      await page.getByRole('heading', { name: 'Attempts (1)' }).waitFor();
      await page.goBack();
      await expect.poll(() => ids.allTextContents()).toEqual(['b1', 'b2', 'b3']);
      await expect(page.getByLabel('Reason').inputValue()).resolves.toBe('beta');

      // A link to the filtered list opens it so.
      const hash = await page.evaluate(() => location.hash);
      const linked = await signIn(dashboard.browser, dashboard.server.url, dashboard.key, { hash });
      const linkedIds = linked.locator('table tbody tr th a.job-id');
      await expect.poll(() => linkedIds.allTextContents()).toEqual(['b1', 'b2', 'b3']);
      await expect(linked.getByLabel('Reason').inputValue()).resolves.toBe('beta');
      await linked.context().close();
      await page.context().close();
    });
  },
);
