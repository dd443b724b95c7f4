/// <reference lib="dom" />
import type { Page, Route } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { focused, go, killJobs, signIn, skipBrowser, useAdminDashboard } from './browser.js';

/**
 * A dead letter redriven or purged from its row, from the keyboard: its row goes, and the focus
 * goes to the same button of the next row, never to the body (where Tab starts the page over).
 */

const dashboard = useAdminDashboard({ name: 'focus', queues: ['redriven', 'purged', 'held'] });
const { api } = dashboard;

const rows = (page: Page) => page.locator('table tbody tr');

async function openDeadLetters(page: Page, queue: string, count: number): Promise<void> {
  await go(page, `#/queues/${queue}/dead-letters`);
  await expect.poll(() => rows(page).count()).toBe(count);
}

const dead = async (queue: string) =>
  (await api('GET', `/v1/queues/${queue}/dead-letters`)).body.deadLetters.map(
    (letter: { id: string }) => letter.id,
  );

describe.skipIf(skipBrowser)('dead letters from the keyboard (Chromium)', () => {
  it('moves the focus to Redrive of the next row once a row is redriven, then of the row before, then to what the page says', async () => {
    await killJobs(api, 'redriven', ['a1', 'a2', 'a3']);
    const page = await signIn(dashboard.browser, dashboard.server.url, dashboard.key);
    await openDeadLetters(page, 'redriven', 3);
    await page.getByRole('button', { name: 'Redrive a2', exact: true }).focus();
    await page.keyboard.press('Enter');
    await expect.poll(() => rows(page).count()).toBe(2);
    await expect.poll(() => focused(page)).toBe('button Redrive a3');
    // Tab goes on from there, not from the top of the page.
    await page.keyboard.press('Tab');
    await expect(focused(page)).resolves.toBe('button Purge a3');
    await page.keyboard.press('Shift+Tab');

    // The last row: the focus goes to the row before.
    await page.keyboard.press('Enter');
    await expect.poll(() => rows(page).count()).toBe(1);
    await expect.poll(() => focused(page)).toBe('button Redrive a1');

    // None left: to the line saying so.
    await page.keyboard.press('Enter');
    await page.getByText('No dead letters.').waitFor();
    await expect.poll(() => focused(page)).toBe('p No dead letters.');
    await expect(dead('redriven')).resolves.toEqual([]);
    await page.context().close();
  });

  it('moves the focus to Purge of the next row once a purge confirmed from the keyboard is done', async () => {
    await killJobs(api, 'purged', ['p1', 'p2']);
    const page = await signIn(dashboard.browser, dashboard.server.url, dashboard.key);
    await openDeadLetters(page, 'purged', 2);
    await page.getByRole('button', { name: 'Purge p1', exact: true }).focus();
    await page.keyboard.press('Enter');
    const dialog = page.getByRole('alertdialog');
    await dialog.waitFor();
    await expect.poll(() => focused(page)).toBe('button Cancel');
    await page.keyboard.press('Tab');
    await expect(focused(page)).resolves.toBe('button Purge 1 job');
    await page.keyboard.press('Enter');
    await page.getByRole('status').filter({ hasText: 'Purged: 1 job.' }).waitFor();
    await expect.poll(() => rows(page).count()).toBe(1);
    await expect.poll(() => focused(page)).toBe('button Purge p2');
    await expect(dead('purged')).resolves.toEqual(['p2']);

    // The last one: the focus goes to the line saying none is left.
    await page.keyboard.press('Enter');
    await dialog.waitFor();
    await page.keyboard.press('Tab');
    await page.keyboard.press('Enter');
    await page.getByText('No dead letters.').waitFor();
    await expect.poll(() => focused(page)).toBe('p No dead letters.');
    await expect(dead('purged')).resolves.toEqual([]);
    await page.context().close();
  });

  it('keeps the focus on Redrive while the redrive is on its way, and takes no second one', async () => {
    await killJobs(api, 'held', ['h1', 'h2']);
    const page = await signIn(dashboard.browser, dashboard.server.url, dashboard.key);
    await openDeadLetters(page, 'held', 2);
    const held: Route[] = [];
    await page.route('**/dead-letters/redrive', (route) => {
      held.push(route);
    });
    const redrive = page.getByRole('button', { name: 'Redrive h1', exact: true });
    await redrive.focus();
    await page.keyboard.press('Enter');
    await expect.poll(() => held.length).toBe(1);
    await page.getByRole('status').filter({ hasText: 'Redriving 1 job…' }).waitFor();
    await expect(redrive.getAttribute('aria-disabled')).resolves.toBe('true');
    await expect(focused(page)).resolves.toBe('button Redrive h1');
    // Enter again, and Purge, meanwhile: nothing more is sent or asked.
    await page.keyboard.press('Enter');
    await page.keyboard.press('Tab');
    await expect(focused(page)).resolves.toBe('button Purge h1');
    await page.keyboard.press('Enter');
    await expect(page.getByRole('alertdialog').count()).resolves.toBe(0);
    expect(held.length).toBe(1);
    await page.keyboard.press('Shift+Tab');
    await held[0]?.continue();
    await page.getByRole('status').filter({ hasText: 'Redriven: 1 job.' }).waitFor();
    await expect.poll(() => rows(page).count()).toBe(1);
    await expect.poll(() => focused(page)).toBe('button Redrive h2');
    expect(held.length).toBe(1);
    await expect(dead('held')).resolves.toEqual(['h2']);
    await page.context().close();
  });
});
