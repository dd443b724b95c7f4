/// <reference lib="dom" />
import type { Browser, Page, Route } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningServer } from '../../src/server/index.js';
import {
  afterPoll,
  callApi,
  launchChromium,
  openQueuePage,
  POLLED,
  shownAfterPolls,
  signIn,
  skipBrowser,
  startDashboardServer,
} from './browser.js';

/**
 * A queue deleted elsewhere (another operator, the CLI) while its delete dialog is open; where
 * the keyboard focus goes once it is closed, and a queue deleted and made again between two
 * readings of the page.
 */

const ADMIN = 'admin-key-0123456789';

let server: RunningServer;
let browser: Browser;

const api = (method: string, path: string, body?: unknown) =>
  callApi(server.url, ADMIN, method, path, body);

beforeAll(async () => {
  if (skipBrowser) return;
  server = await startDashboardServer({
    name: 'delete-gone',
    keys: [{ name: 'ops', key: ADMIN, allow: [{ queues: '*', actions: ['admin'] }] }],
  });
  for (const name of ['leave', 'stay', 'again', 'stays', 'returns', 'remade']) {
    await api('PUT', `/v1/queues/${name}`, {});
    await api('POST', `/v1/queues/${name}/jobs`, { id: 'one' });
  }
  browser = await launchChromium();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await server?.close();
});

/** Opens `queue`'s delete dialog, types part of its name, and deletes it through the API. */
async function deleteWhileAsked(page: Page, queue: string): Promise<void> {
  await openQueuePage(page, queue);
  await page.getByRole('button', { name: 'Delete queue', exact: true }).click();
  const dialog = page.getByRole('alertdialog');
  await dialog.getByRole('textbox').fill(queue.slice(0, 2));
  expect((await api('DELETE', `/v1/queues/${queue}`)).body).toEqual({ deleted: true });
}

describe.skipIf(skipBrowser)(
  'a queue deleted elsewhere while its delete dialog is open (Chromium)',
  () => {
    it('keeps the dialog open saying the queue is gone, and leaves for the overview from it', async () => {
      const page = await signIn(browser, server.url, ADMIN);
      await deleteWhileAsked(page, 'leave');
      const dialog = page.getByRole('alertdialog');
      await shownAfterPolls(page, dialog.getByRole('heading', { name: 'Queue leave is gone' }));
      await expect(dialog.isVisible()).resolves.toBe(true);
      await expect(dialog.getByRole('alert').textContent()).resolves.toContain(
        'It was deleted elsewhere',
      );
      // Nothing left to confirm: no field, no Delete queue button in the dialog.
      await expect(dialog.getByRole('textbox').count()).resolves.toBe(0);
      await expect(dialog.getByRole('button', { name: 'Delete queue' }).count()).resolves.toBe(0);
      const leave = dialog.getByRole('button', { name: 'Go to the overview' });
      // The focus is on the way out, within the dialog, rather than lost with the field.
      await expect(leave.evaluate((button) => document.activeElement === button)).resolves.toBe(
        true,
      );
      await page.keyboard.press('Enter');
      await page.getByRole('heading', { name: 'Queues' }).waitFor();
      await expect(page.evaluate(() => location.hash)).resolves.toBe('#/');
      await page
        .getByRole('status')
        .filter({
          hasText: 'Queue leave was deleted elsewhere before its delete here was confirmed.',
        })
        .waitFor();
      await expect(page.locator('dialog[open]').count()).resolves.toBe(0);
      await page.context().close();
    });

    it('stays on the queue page, which says there is no such queue, when the operator chooses to', async () => {
      const page = await signIn(browser, server.url, ADMIN);
      await deleteWhileAsked(page, 'stay');
      const dialog = page.getByRole('alertdialog');
      await shownAfterPolls(page, dialog.getByRole('heading', { name: 'Queue stay is gone' }));
      await dialog.getByRole('button', { name: 'Stay on this page' }).click();
      await expect.poll(() => page.locator('dialog[open]').count(), { timeout: 10_000 }).toBe(0);
      await page.getByText('No queue named stay that this key can see.').waitFor();
      await expect(page.evaluate(() => location.hash)).resolves.toBe('#/queues/stay');
      await page.context().close();
    });

    it('still says the queue is gone when one of the same name is made again before the dialog is closed', async () => {
      const page = await signIn(browser, server.url, ADMIN);
      await deleteWhileAsked(page, 'again');
      const dialog = page.getByRole('alertdialog');
      await shownAfterPolls(page, dialog.getByRole('heading', { name: 'Queue again is gone' }));
      await api('PUT', '/v1/queues/again', {});
      // The page reads the new queue behind the dialog; the dialog does not turn back into a
      // question about it, with the figures of the queue that was deleted.
      await shownAfterPolls(page, page.getByRole('heading', { name: 'Queue again', exact: true }));
      await expect(
        dialog.getByRole('heading', { name: 'Queue again is gone' }).count(),
      ).resolves.toBe(1);
      await expect(dialog.getByRole('textbox').count()).resolves.toBe(0);
      await page.keyboard.press('Escape');
      await expect.poll(() => page.locator('dialog[open]').count(), { timeout: 10_000 }).toBe(0);
      // Asked again, it counts what the new queue holds.
      await page.getByRole('button', { name: 'Delete queue', exact: true }).click();
      await expect(dialog.textContent()).resolves.toContain(
        'again holds no job at the latest reading',
      );
      expect((await api('GET', '/v1/queues/again')).status).toBe(200);
      await page.context().close();
    });
  },
);

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
    await shownAfterPolls(page, dialog.getByRole('heading', { name: 'Queue stays is gone' }));
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
    await shownAfterPolls(page, dialog.getByRole('heading', { name: 'Queue returns is gone' }));
    await api('PUT', '/v1/queues/returns', {});
    await shownAfterPolls(page, page.getByRole('heading', { name: 'Queue returns', exact: true }));
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
    await expect
      .poll(
        afterPoll(page, () => held.length),
        POLLED,
      )
      .toBeGreaterThan(0);
    expect((await api('DELETE', '/v1/queues/remade')).body).toEqual({ deleted: true });
    await api('PUT', '/v1/queues/remade', {});
    for (const route of held) await route.continue();
    await page.unroute('**/v1/queues/remade/stats');
    const dialog = page.getByRole('alertdialog');
    await shownAfterPolls(
      page,
      dialog.getByRole('heading', { name: 'Queue remade was deleted and made again' }),
    );
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
