/// <reference lib="dom" />
import type { Browser, Page, Route } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningServer } from '../../src/server/index.js';
import {
  callApi,
  launchChromium,
  openQueuePage,
  signIn,
  skipBrowser,
  startDashboardServer,
} from './browser.js';

/**
 * The delete dialog of a queue deleted elsewhere while it is open: where the keyboard focus goes
 * once it is closed, and a queue deleted and made again between two readings of the page.
 */

const ADMIN = 'admin-key-0123456789';

let server: RunningServer;
let browser: Browser;

const api = (method: string, path: string, body?: unknown) =>
  callApi(server.url, ADMIN, method, path, body);

beforeAll(async () => {
  if (skipBrowser) return;
  server = await startDashboardServer({
    name: 'delete-gone-focus',
    keys: [{ name: 'ops', key: ADMIN, allow: [{ queues: '*', actions: ['admin'] }] }],
  });
  for (const name of ['stays', 'returns', 'remade']) {
    await api('PUT', `/v1/queues/${name}`, {});
    await api('POST', `/v1/queues/${name}/jobs`, { id: 'one' });
  }
  browser = await launchChromium();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await server?.close();
});

/** The element with the focus, as its tag and text. */
const focused = (page: Page) =>
  page.evaluate(() => {
    const element = document.activeElement;
    return { tag: element?.tagName ?? '', text: element?.textContent?.trim() ?? '' };
  });

async function openDeleteDialog(page: Page, queue: string): Promise<void> {
  await openQueuePage(page, queue);
  await page.getByRole('button', { name: 'Delete queue', exact: true }).click();
  await page.getByRole('alertdialog').getByRole('textbox').waitFor();
}

describe.skipIf(skipBrowser)('the delete dialog of a queue gone, once closed (Chromium)', () => {
  it('gives the focus to the notice that there is no such queue when the operator stays', async () => {
    const page = await signIn(browser, server.url, ADMIN);
    await openDeleteDialog(page, 'stays');
    await api('DELETE', '/v1/queues/stays');
    const dialog = page.getByRole('alertdialog');
    await dialog.getByRole('heading', { name: 'Queue stays is gone' }).waitFor({ timeout: 8_000 });
    await page.keyboard.press('Shift+Tab');
    await expect(focused(page)).resolves.toEqual({ tag: 'BUTTON', text: 'Stay on this page' });
    await page.keyboard.press('Enter');
    await expect
      .poll(() => focused(page), { timeout: 8_000 })
      .toEqual({ tag: 'P', text: 'No queue named stays that this key can see.' });
    await page.context().close();
  });

  it('gives the focus to the heading of a queue made again under the name once the dialog is closed', async () => {
    const page = await signIn(browser, server.url, ADMIN);
    await openDeleteDialog(page, 'returns');
    await api('DELETE', '/v1/queues/returns');
    const dialog = page.getByRole('alertdialog');
    await dialog
      .getByRole('heading', { name: 'Queue returns is gone' })
      .waitFor({ timeout: 8_000 });
    await api('PUT', '/v1/queues/returns', {});
    await page
      .getByRole('heading', { name: 'Queue returns', exact: true })
      .waitFor({ timeout: 8_000 });
    await page.keyboard.press('Escape');
    await expect
      .poll(() => focused(page), { timeout: 8_000 })
      .toEqual({ tag: 'H1', text: 'Queue returns' });
    await page.context().close();
  });

  it('asks nothing more of a queue deleted and made again between two readings', async () => {
    const page = await signIn(browser, server.url, ADMIN);
    await openDeleteDialog(page, 'remade');
    // The page's next reading of the figures waits until the queue is deleted and made again.
    const held: Route[] = [];
    await page.route('**/v1/queues/remade/stats', (route) => {
      held.push(route);
    });
    await expect.poll(() => held.length, { timeout: 8_000 }).toBeGreaterThan(0);
    expect((await api('DELETE', '/v1/queues/remade')).body).toEqual({ deleted: true });
    await api('PUT', '/v1/queues/remade', {});
    for (const route of held) await route.continue();
    await page.unroute('**/v1/queues/remade/stats');
    const dialog = page.getByRole('alertdialog');
    await dialog
      .getByRole('heading', { name: 'Queue remade was deleted and made again' })
      .waitFor({ timeout: 8_000 });
    await expect(dialog.getByRole('textbox').count()).resolves.toBe(0);
    await expect(dialog.getByRole('button', { name: 'Delete queue' }).count()).resolves.toBe(0);
    await dialog.getByRole('button', { name: 'Stay on this page' }).click();
    await expect.poll(() => page.locator('dialog[open]').count(), { timeout: 8_000 }).toBe(0);
    // The queue made again is there, as it was made.
    expect((await api('GET', '/v1/queues/remade/stats')).body).toMatchObject({
      ready: 0,
      published: 0,
    });
    await page.context().close();
  });
});
