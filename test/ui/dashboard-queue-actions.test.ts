/// <reference lib="dom" />
import type { Browser, Page, Request } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningServer } from '../../src/server/index.js';
import {
  artifactPath,
  callApi,
  go,
  launchChromium,
  nextPoll,
  openQueuePage,
  shownAfterPolls,
  signIn,
  skipBrowser,
  startDashboardServer,
} from './browser.js';

/** A queue paused, resumed and deleted from its page; a job page once the job is gone. */

const ADMIN = 'admin-key-0123456789';
/** May consume every queue: sees the figures, not the admin actions. */
const VIEWER = 'viewer-key-0123456789';

let server: RunningServer;
let browser: Browser;

const api = (method: string, path: string, body?: unknown, key = ADMIN) =>
  callApi(server.url, key, method, path, body);

beforeAll(async () => {
  if (skipBrowser) return;
  server = await startDashboardServer({
    name: 'queue-actions',
    keys: [
      { name: 'ops', key: ADMIN, allow: [{ queues: '*', actions: ['admin'] }] },
      { name: 'viewer', key: VIEWER, allow: [{ queues: '*', actions: ['consume'] }] },
    ],
  });
  await api('PUT', '/v1/queues/orders', {});
  await api('POST', '/v1/queues/orders/jobs/batch', {
    jobs: Array.from({ length: 4 }, (_, n) => ({ id: `order-${n}` })),
  });
  // doomed: 3 ready, 1 delayed, 1 in flight and 2 dead, 7 jobs in all.
  await api('PUT', '/v1/queues/doomed', { maxDeliveries: 1 });
  await api('POST', '/v1/queues/doomed/jobs/batch', {
    jobs: ['d1', 'd2', 'd3', 'd4', 'd5', 'd6'].map((id) => ({ id })),
  });
  await api('POST', '/v1/queues/doomed/jobs', { id: 'later', delay: 3_600_000 });
  const taken = (await api('POST', '/v1/queues/doomed/receive', { max: 3 })).body.deliveries;
  for (const delivery of taken.slice(0, 2)) {
    await api('POST', '/v1/queues/doomed/nack', { receipt: delivery.receipt, requeue: false });
  }
  await api('PUT', '/v1/queues/jobs', {});
  browser = await launchChromium();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await server?.close();
});

/** The text of the figure card `label` on a queue's page. */
const card = (page: Page, label: string) =>
  page
    .locator('dl.cards > div')
    .filter({ has: page.getByText(label, { exact: true }) })
    .locator('dd');

/** The page's requests to change `queue` (PATCH or DELETE of /v1/queues/{queue}). */
function changes(page: Page, queue: string): Request[] {
  const seen: Request[] = [];
  page.on('request', (request) => {
    if (request.method() === 'GET') return;
    if (new URL(request.url()).pathname === `/v1/queues/${queue}`) seen.push(request);
  });
  return seen;
}

describe.skipIf(skipBrowser)(
  'pausing, resuming and deleting a queue from its page (Chromium)',
  () => {
    it('pauses and resumes a queue: the server hands out nothing meanwhile, and the page shows it', async () => {
      const page = await signIn(browser, server.url, ADMIN);
      const sent = changes(page, 'orders');
      await openQueuePage(page, 'orders');
      await expect.poll(() => card(page, 'State').textContent()).toBe('Running');
      await page.getByRole('button', { name: 'Pause queue', exact: true }).click();
      await page.getByRole('status').filter({ hasText: 'Paused orders.' }).waitFor();
      expect((await api('GET', '/v1/queues/orders/stats')).body.paused).toBe(true);
      expect((await api('POST', '/v1/queues/orders/receive', { wait: 0 })).body.deliveries).toEqual(
        [],
      );
      // Shown to whoever opens the page, and the button now resumes.
      await expect.poll(() => card(page, 'State').textContent()).toBe('Paused');
      await page.getByText('Paused: orders hands out no job (receives answer empty)').waitFor();
      const resume = page.getByRole('button', { name: 'Resume queue', exact: true });
      await resume.waitFor();
      await expect(page.getByRole('button', { name: 'Pause queue' }).count()).resolves.toBe(0);
      // Under the pointer it keeps its colour: its text is white.
      const background = () =>
        resume.evaluate((button) => getComputedStyle(button).backgroundColor);
      await page.mouse.move(0, 0);
      const resting = await background();
      await resume.hover();
      await expect(background()).resolves.toBe(resting);
      await page.screenshot({ path: artifactPath('queue-paused.png'), fullPage: true });

      await resume.click();
      await page.getByRole('status').filter({ hasText: 'Resumed orders.' }).waitFor();
      expect((await api('GET', '/v1/queues/orders/stats')).body.paused).toBe(false);
      await expect.poll(() => card(page, 'State').textContent()).toBe('Running');
      await page.getByRole('button', { name: 'Pause queue', exact: true }).waitFor();
      await expect(
        page.getByText('hands out no job (receives answer empty)').count(),
      ).resolves.toBe(0);
      const given = (await api('POST', '/v1/queues/orders/receive', {})).body.deliveries;
      expect(given.map((delivery: { id: string }) => delivery.id)).toEqual(['order-0']);
      // Each a request of the page's own origin, which the server takes from a browser.
      expect(sent.map((request) => request.method())).toEqual(['PATCH', 'PATCH']);
      for (const request of sent) {
        await expect(request.headerValue('origin')).resolves.toBe(server.url);
      }
      await page.context().close();
    });

    it('deletes a queue only once its name is typed in a dialog that counts its jobs, then shows the overview', async () => {
      const page = await signIn(browser, server.url, ADMIN);
      const sent = changes(page, 'doomed');
      await openQueuePage(page, 'doomed');
      await expect.poll(() => card(page, 'Dead').textContent()).toBe('2');
      const remove = page.getByRole('button', { name: 'Delete queue', exact: true });
      await remove.click();
      const dialog = page.getByRole('alertdialog');
      await expect(dialog.getByRole('heading').textContent()).resolves.toBe('Delete queue doomed?');
      await expect(dialog.locator('#confirm-body').textContent()).resolves.toBe(
        'Its 7 jobs at the latest reading (3 ready, 1 delayed, 1 in flight, 2 dead) are removed ' +
          'for good with their history, and so is any job published before you confirm. The ' +
          'consumers of the jobs in flight can no longer ack them. Its options, schedules, ' +
          'sessions and figures go too. This cannot be undone.',
      );
      const confirm = dialog.getByRole('button', { name: 'Delete queue', exact: true });
      const name = dialog.getByRole('textbox');
      await expect(confirm.isDisabled()).resolves.toBe(true);
      // The field has the focus; a name not quite the queue's leaves the button off.
      await page.keyboard.type('doome');
      await expect(name.inputValue()).resolves.toBe('doome');
      await expect(confirm.isDisabled()).resolves.toBe(true);
      // Enter in the field neither deletes nor cancels while the name is not the queue's.
      await name.press('Enter');
      await expect(dialog.isVisible()).resolves.toBe(true);
      await page.screenshot({ path: artifactPath('queue-delete-dialog.png') });
      // Cancelled: nothing is sent, the queue stays.
      await dialog.getByRole('button', { name: 'Cancel' }).click();
      await expect(dialog.isVisible()).resolves.toBe(false);
      expect((await api('GET', '/v1/queues/doomed')).status).toBe(200);

      // Asked again, the field starts empty.
      await remove.click();
      await expect(name.inputValue()).resolves.toBe('');
      await name.fill('doomed');
      await confirm.click();
      await page
        .getByRole('status')
        .filter({ hasText: 'Deleted queue doomed and every job in it.' })
        .waitFor();
      await page.getByRole('heading', { name: 'Queues', exact: true }).waitFor();
      await expect(page.evaluate(() => location.hash)).resolves.toBe('#/');
      expect((await api('GET', '/v1/queues/doomed')).status).toBe(404);
      await expect.poll(() => page.locator('table.figures tbody tr').count()).toBe(2);
      await expect(page.getByRole('link', { name: 'doomed', exact: true }).count()).resolves.toBe(
        0,
      );
      expect(sent.map((request) => request.method())).toEqual(['DELETE']);
      await expect(sent[0]?.headerValue('origin')).resolves.toBe(server.url);
      await page.screenshot({ path: artifactPath('queue-deleted.png') });
      // The message is the overview's: the next page opened does not repeat it.
      await openQueuePage(page, 'orders');
      await expect(page.getByText('Deleted queue doomed').count()).resolves.toBe(0);
      await page.context().close();
    });

    it('shows a viewer whether a queue is paused but no Pause or Delete, and the server refuses both', async () => {
      await api('PATCH', '/v1/queues/orders', { paused: true });
      const page = await signIn(browser, server.url, VIEWER);
      await openQueuePage(page, 'orders');
      await expect.poll(() => card(page, 'State').textContent()).toBe('Paused');
      await page.getByText('Paused: orders hands out no job (receives answer empty)').waitFor();
      await expect(
        page.getByRole('button', { name: /^(Pause|Resume|Delete) queue$/ }).count(),
      ).resolves.toBe(0);
      const resumed = await api('PATCH', '/v1/queues/orders', { paused: false }, VIEWER);
      expect(resumed.status).toBe(403);
      const deleted = await api('DELETE', '/v1/queues/orders', undefined, VIEWER);
      expect(deleted.status).toBe(403);
      expect((await api('GET', '/v1/queues/orders/stats')).body.paused).toBe(true);
      await api('PATCH', '/v1/queues/orders', { paused: false });
      await page.context().close();
    });
  },
);

describe.skipIf(skipBrowser)('a job page once the job is gone (Chromium)', () => {
  it('stops reading a job that is gone, says so, and reads it again on Check again', async () => {
    await api('POST', '/v1/queues/jobs/jobs', { id: 'once', payload: { n: 1 } });
    const page = await signIn(browser, server.url, ADMIN);
    const reads: string[] = [];
    page.on('request', (request) => {
      const url = new URL(request.url());
      if (url.pathname === '/v1/queues/jobs/jobs/once') reads.push(url.pathname);
    });
    await go(page, '#/queues/jobs/jobs/once');
    const state = page
      .locator('dl.facts > div')
      .filter({ has: page.getByText('State', { exact: true }) })
      .locator('dd');
    await expect.poll(() => state.textContent()).toBe('ready');
    const taken = (await api('POST', '/v1/queues/jobs/receive', {})).body.deliveries[0];
    await api('POST', '/v1/queues/jobs/ack', { receipt: taken.receipt });
    await shownAfterPolls(page, page.getByText('No job once in jobs now'));
    await page.getByText('The page no longer reads it.').waitFor();
    // Three intervals (2 s each) later, it was not asked for again.
    const readsWhenGone = reads.length;
    await nextPoll(page, 6_500);
    expect(reads.length).toBe(readsWhenGone);

    // Published again under the same id: Check again reads it once more, and it is back.
    await api('POST', '/v1/queues/jobs/jobs', { id: 'once', payload: { n: 2 } });
    await page.getByRole('button', { name: 'Check again' }).click();
    await expect.poll(() => state.textContent()).toBe('ready');
    await page.getByText('"n": 2').waitFor();
    expect(reads.length).toBeGreaterThan(readsWhenGone);
    await page.context().close();
  });
});
