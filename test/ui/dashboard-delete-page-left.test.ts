/// <reference lib="dom" />
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { openQueuePage, signIn, skipBrowser, useAdminDashboard } from './browser.js';

/** A queue's delete that ends after the operator has gone on to another page. */

const dashboard = useAdminDashboard({
  name: 'delete-page-left',
  queues: ['slow', 'stays', 'other'],
});
const { api } = dashboard;

/**
 * Starts the delete of `queue` from its page and holds it until the returned function lets it
 * go on: its request (`request`), or the server's answer once the queue is deleted (`answer`).
 */
async function startHeldDelete(
  page: Page,
  queue: string,
  hold: 'request' | 'answer',
): Promise<() => void> {
  let release: () => void = () => {};
  const held = new Promise<void>((resolve) => {
    release = resolve;
  });
  await page.route(`**/v1/queues/${queue}`, async (route) => {
    if (route.request().method() !== 'DELETE') return route.continue();
    if (hold === 'request') {
      await held;
      return route.continue();
    }
    const response = await route.fetch();
    await held;
    await route.fulfill({ response });
  });
  await openQueuePage(page, queue);
  await page.getByRole('button', { name: 'Delete queue', exact: true }).click();
  await page.getByRole('alertdialog').getByRole('textbox').fill(queue);
  await page.getByRole('alertdialog').getByRole('button', { name: 'Delete queue' }).click();
  await page.getByText(`Deleting ${queue}…`).waitFor();
  return release;
}

describe.skipIf(skipBrowser)('a delete that ends after its page was left (Chromium)', () => {
  it('leaves the operator on the page they went to and says there that the queue was deleted', async () => {
    const page = await signIn(dashboard.browser, dashboard.server.url, dashboard.key);
    const release = await startHeldDelete(page, 'slow', 'request');
    await openQueuePage(page, 'other');
    release();
    await page
      .getByRole('status')
      .filter({ hasText: 'Deleted queue slow and every job in it.' })
      .waitFor();
    expect((await api('GET', '/v1/queues/slow')).status).toBe(404);
    // Still on the page opened meanwhile, not taken to the overview.
    await page.waitForTimeout(500);
    await expect(page.evaluate(() => location.hash)).resolves.toBe('#/queues/other');
    await page.getByRole('heading', { name: 'Queue other', exact: true }).waitFor();
    // Said there until another page is opened.
    await openQueuePage(page, 'stays');
    await expect(page.getByText('Deleted queue slow').count()).resolves.toBe(0);
    await page.context().close();
  });

  it('still goes to the overview when its own page was kept open, though it read the queue gone first', async () => {
    const page = await signIn(dashboard.browser, dashboard.server.url, dashboard.key);
    const release = await startHeldDelete(page, 'stays', 'answer');
    // Its page reads the queue gone before the answer comes.
    await page.getByText('No queue named stays').waitFor();
    release();
    await page
      .getByRole('status')
      .filter({ hasText: 'Deleted queue stays and every job in it.' })
      .waitFor();
    await expect(page.evaluate(() => location.hash)).resolves.toBe('#/');
    await page.context().close();
  });
});
