/// <reference lib="dom" />
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import {
  focused,
  go,
  killJobs,
  openQueuePage,
  signIn,
  skipBrowser,
  useAdminDashboard,
} from './browser.js';

/**
 * The dashboard as an operator at a keyboard or with a screen reader uses it: each page named
 * in the document's title, the focus kept on the page once an action confirmed from the
 * keyboard is done, and text (placeholders too) readable in the dark scheme.
 */

/** Enough queues for two pages of the overview (50 a page). */
const PAGED = Array.from({ length: 51 }, (_, n) => `q${String(n).padStart(3, '0')}`);

const dashboard = useAdminDashboard({
  name: 'keyboard',
  queues: ['titled', 'toolbar', 'single', ...PAGED],
});
const { api } = dashboard;

const dead = async (queue: string) =>
  (await api('GET', `/v1/queues/${queue}/dead-letters`)).body.deadLetters.map(
    (letter: { id: string }) => letter.id,
  );

/** Presses `key` on the button named `name` (exactly), as a keyboard user does. */
async function press(page: Page, name: string, key = 'Enter'): Promise<void> {
  await page.getByRole('button', { name, exact: true }).focus();
  await page.keyboard.press(key);
}

/** Confirms the open dialog from the keyboard: Tab from Cancel to its button, then Enter. */
async function confirmDialog(page: Page, verb: string): Promise<void> {
  await page.getByRole('alertdialog').waitFor();
  await expect.poll(() => focused(page)).toBe('button Cancel');
  await page.keyboard.press('Tab');
  await expect(focused(page)).resolves.toBe(`button ${verb}`);
  await page.keyboard.press('Enter');
}

describe.skipIf(skipBrowser)('the dashboard from the keyboard (Chromium)', () => {
  it('names the page shown in the document title', async () => {
    await killJobs(api, 'titled', ['t1']);
    const page = await signIn(dashboard.browser, dashboard.server.url, dashboard.key);
    await expect.poll(() => page.title()).toBe('Queues · leaseq dashboard');
    await openQueuePage(page, 'titled');
    await expect.poll(() => page.title()).toBe('Queue titled · leaseq dashboard');
    await go(page, '#/queues/titled/dead-letters');
    await expect.poll(() => page.title()).toBe('Dead letters of titled · leaseq dashboard');
    await go(page, '#/queues/titled/jobs/t1');
    await expect.poll(() => page.title()).toBe('Job t1 in titled · leaseq dashboard');
    await go(page, '#/no/such/page');
    await expect.poll(() => page.title()).toBe('No such page · leaseq dashboard');
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('API key').waitFor();
    await expect.poll(() => page.title()).toBe('leaseq dashboard');
    await page.context().close();
  });

  it('keeps the focus on a dead letters toolbar button once its action, confirmed from the keyboard, is done', async () => {
    await killJobs(api, 'toolbar', ['b1', 'b2', 'b3']);
    const page = await signIn(dashboard.browser, dashboard.server.url, dashboard.key);
    await go(page, '#/queues/toolbar/dead-letters');
    const rows = page.locator('table tbody tr');
    await expect.poll(() => rows.count()).toBe(3);

    await page.getByRole('checkbox', { name: 'Select b2' }).focus();
    await page.keyboard.press('Space');
    await press(page, 'Purge selected (1)');
    await confirmDialog(page, 'Purge 1 job');
    await page.getByRole('status').filter({ hasText: 'Purged: 1 job.' }).waitFor();
    await expect.poll(() => rows.count()).toBe(2);
    // Nothing is selected now: the button takes nothing, and still has the focus.
    await expect.poll(() => focused(page)).toBe('button Purge selected (0)');
    await expect(
      page.getByRole('button', { name: 'Purge selected (0)' }).getAttribute('aria-disabled'),
    ).resolves.toBe('true');
    await page.keyboard.press('Enter');
    await expect(page.getByRole('alertdialog').count()).resolves.toBe(0);

    await press(page, 'Redrive all');
    await confirmDialog(page, 'Redrive 2 jobs');
    await page.getByRole('status').filter({ hasText: 'Redriven: 2 jobs.' }).waitFor();
    await page.getByText('No dead letters.').waitFor();
    await expect.poll(() => focused(page)).toBe('button Redrive all');
    await expect(dead('toolbar')).resolves.toEqual([]);
    await page.context().close();
  });

  it('gives the focus to the heading of a job page once its Redrive or Purge is done', async () => {
    await killJobs(api, 'single', ['s1', 's2']);
    const page = await signIn(dashboard.browser, dashboard.server.url, dashboard.key);
    await go(page, '#/queues/single/jobs/s1');
    await press(page, 'Redrive');
    await page.getByRole('status').filter({ hasText: 'Redriven.' }).waitFor();
    await expect.poll(() => page.getByRole('button', { name: 'Redrive' }).count()).toBe(0);
    await expect.poll(() => focused(page)).toBe('h1 Job s1');

    await go(page, '#/queues/single/jobs/s2');
    await press(page, 'Purge');
    await confirmDialog(page, 'Purge 1 job');
    await page.getByText('No job s2 in single now', { exact: false }).waitFor();
    await expect.poll(() => focused(page)).toBe('h1 Job s2');
    await expect(dead('single')).resolves.toEqual([]);
    await page.context().close();
  });

  it('keeps the focus on Next page once the last page of queues is shown', async () => {
    const page = await signIn(dashboard.browser, dashboard.server.url, dashboard.key);
    const total = PAGED.length + 3;
    await page.getByText(`1–50 of ${total} queues`).waitFor();
    await press(page, 'Next page');
    await page.getByText(`51–${total} of ${total} queues`).waitFor();
    await expect.poll(() => focused(page)).toBe('button Next page');
    await page.keyboard.press('Shift+Tab');
    await expect(focused(page)).resolves.toBe('button Previous page');
    await page.keyboard.press('Space');
    await page.getByText(`1–50 of ${total} queues`).waitFor();
    await expect.poll(() => focused(page)).toBe('button Previous page');
    await page.context().close();
  });

  it('draws the filter placeholder at a contrast of at least 4.5:1 in the dark scheme', async () => {
    const page = await signIn(dashboard.browser, dashboard.server.url, dashboard.key, {
      context: { colorScheme: 'dark' },
    });
    const filter = page.getByLabel('Filter by name');
    await filter.waitFor();
    const ratio = await filter.evaluate((input) => {
      const rgb = (color: string) =>
        (color.match(/[\d.]+/g) ?? []).slice(0, 3).map((part) => Number(part) / 255);
      const luminance = (color: string) => {
        const [r = 0, g = 0, b = 0] = rgb(color).map((c) =>
          c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4,
        );
        return 0.2126 * r + 0.7152 * g + 0.0722 * b;
      };
      const text = luminance(getComputedStyle(input, '::placeholder').color);
      const ground = luminance(getComputedStyle(input).backgroundColor);
      return (Math.max(text, ground) + 0.05) / (Math.min(text, ground) + 0.05);
    });
    expect(ratio).toBeGreaterThanOrEqual(4.5);
    await page.context().close();
  });
});
