/// <reference lib="dom" />
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { go, nextPoll, openQueuePage, signIn, skipBrowser, useAdminDashboard } from './browser.js';

/** Pause, Resume, Delete and Check again from the keyboard alone: the focus stays where it was. */

const dashboard = useAdminDashboard({
  name: 'action-focus',
  queues: ['toggled', 'held', 'refused', 'removed', 'jobs'],
});
const { api } = dashboard;

/** The element that has the focus: its tag and text. */
const focused = (page: Page) =>
  page.evaluate(() => {
    const element = document.activeElement;
    return `${element?.tagName.toLowerCase()} ${element?.textContent?.trim()}`;
  });

describe.skipIf(skipBrowser)('queue actions and Check again from the keyboard (Chromium)', () => {
  it('keeps the focus on Pause queue while it pauses, where it then reads Resume queue, and Enter again resumes', async () => {
    const page = await signIn(dashboard.browser, dashboard.server.url, dashboard.key);
    await openQueuePage(page, 'toggled');
    await page.getByRole('button', { name: 'Pause queue', exact: true }).focus();
    await page.keyboard.press('Enter');
    await page.getByRole('status').filter({ hasText: 'Paused toggled.' }).waitFor();
    await expect.poll(() => focused(page)).toBe('button Resume queue');
    expect((await api('GET', '/v1/queues/toggled/stats')).body.paused).toBe(true);

    await page.keyboard.press('Enter');
    await page.getByRole('status').filter({ hasText: 'Resumed toggled.' }).waitFor();
    await expect.poll(() => focused(page)).toBe('button Pause queue');
    expect((await api('GET', '/v1/queues/toggled/stats')).body.paused).toBe(false);
    await page.context().close();
  });

  it('takes no second action while one is on its way, the focus kept', async () => {
    const page = await signIn(dashboard.browser, dashboard.server.url, dashboard.key);
    await openQueuePage(page, 'held');
    const sent: string[] = [];
    let release: () => void = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    await page.route('**/v1/queues/held', async (route) => {
      if (route.request().method() === 'GET') return route.continue();
      sent.push(route.request().method());
      await held;
      await route.continue();
    });
    await page.getByRole('button', { name: 'Pause queue', exact: true }).focus();
    await page.keyboard.press('Enter');
    await page.getByText('Pausing held…').waitFor();
    // Enter again, and Delete, while the pause is on its way: nothing more is sent or asked.
    await page.keyboard.press('Enter');
    // Forced: a button that takes nothing meanwhile may still be pressed.
    await page.getByRole('button', { name: 'Delete queue', exact: true }).click({ force: true });
    await expect(page.getByRole('alertdialog').count()).resolves.toBe(0);
    expect(sent).toEqual(['PATCH']);
    await expect(focused(page)).resolves.toBe('button Delete queue');
    release();
    await page.getByRole('status').filter({ hasText: 'Paused held.' }).waitFor();
    expect(sent).toEqual(['PATCH']);
    await api('PATCH', '/v1/queues/held', { paused: false });
    await page.context().close();
  });

  it('leaves the focus on Delete queue when the server refuses the delete, and says why', async () => {
    const page = await signIn(dashboard.browser, dashboard.server.url, dashboard.key);
    await openQueuePage(page, 'refused');
    await page.route('**/v1/queues/refused', (route) =>
      route.request().method() === 'DELETE'
        ? route.fulfill({
            status: 403,
            contentType: 'application/json',
            body: JSON.stringify({ error: { code: 'FORBIDDEN', message: 'not this key' } }),
          })
        : route.continue(),
    );
    await page.getByRole('button', { name: 'Delete queue', exact: true }).focus();
    await page.keyboard.press('Enter');
    await expect.poll(() => focused(page)).toBe('input ');
    await page.keyboard.type('refused');
    await page.keyboard.press('Enter');
    await page.getByRole('alert').filter({ hasText: 'Delete failed: not this key' }).waitFor();
    await expect.poll(() => focused(page)).toBe('button Delete queue');
    expect((await api('GET', '/v1/queues/refused')).status).toBe(200);
    await page.context().close();
  });

  it('moves the focus to what the overview says of a queue deleted from the keyboard', async () => {
    const page = await signIn(dashboard.browser, dashboard.server.url, dashboard.key);
    await openQueuePage(page, 'removed');
    await page.getByRole('button', { name: 'Delete queue', exact: true }).focus();
    await page.keyboard.press('Enter');
    await expect.poll(() => focused(page)).toBe('input ');
    await page.keyboard.type('removed');
    await page.keyboard.press('Enter');
    const said = page.getByRole('status').filter({ hasText: 'Deleted queue removed' });
    await said.waitFor();
    await expect(page.evaluate(() => location.hash)).resolves.toBe('#/');
    // A screen reader reads what has the focus; the body would say nothing.
    await expect.poll(() => focused(page)).toBe('p Deleted queue removed and every job in it.');
    await page.context().close();
  });

  it('keeps the focus on Check again while it reads a job still gone, and says when it read it', async () => {
    const page = await signIn(dashboard.browser, dashboard.server.url, dashboard.key);
    const reads: number[] = [];
    page.on('request', (request) => {
      if (new URL(request.url()).pathname === '/v1/queues/jobs/jobs/absent') reads.push(1);
    });
    await go(page, '#/queues/jobs/jobs/absent');
    const gone = page.getByText('No job absent in jobs now');
    await gone.waitFor();
    const before = await gone.textContent();
    const check = page.getByRole('button', { name: 'Check again', exact: true });
    await check.focus();
    // A second apart, so the time it says changes.
    await nextPoll(page, 1_100);
    const readsBefore = reads.length;
    await page.keyboard.press('Enter');
    await expect.poll(() => reads.length).toBe(readsBefore + 1);
    await expect.poll(() => gone.textContent()).not.toBe(before);
    await expect(focused(page)).resolves.toBe('button Check again');
    // Enter again reads it again: the button still has the focus.
    await page.keyboard.press('Enter');
    await expect.poll(() => reads.length).toBe(readsBefore + 2);
    await api('POST', '/v1/queues/jobs/jobs', { id: 'absent' });
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Payload' }).waitFor();
    await page.context().close();
  });
});
