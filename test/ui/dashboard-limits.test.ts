/// <reference lib="dom" />
import type { Browser, BrowserContext, Locator, Page, Route } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningServer } from '../../src/server/index.js';
import {
  afterPoll,
  artifactPath,
  callApi,
  go,
  launchChromium,
  nextPoll,
  openQueuePage,
  POLLED,
  shownAfterPolls,
  signIn,
  skipBrowser,
  startDashboardServer,
} from './browser.js';

/** The dashboard at its limits: many queues, long texts, large figures, a server gone. */

const ADMIN = 'admin-key-0123456789';
const PUBLISHER = 'publisher-key-0123456789';
/** More than a page of the overview (50), and more than keep every chart figure (100). */
const QUEUES = 120;
const LONG_REASON =
  'Error: upstream payment service answered 503 Service Unavailable while charging card; '
    .repeat(12)
    .slice(0, 1000);
const LONG_ID = `order-${'x'.repeat(250)}`;

let server: RunningServer;
let browser: Browser;

const api = (method: string, path: string, body?: unknown) =>
  callApi(server.url, ADMIN, method, path, body);

/** `ids` dead in `queue`, each with the reason `reasonOf` gives (none: the nack's default). */
async function kill(queue: string, ids: string[], reasonOf: (id: string) => string | undefined) {
  await api('PUT', `/v1/queues/${queue}`, { maxDeliveries: 1 });
  await api('POST', `/v1/queues/${queue}/jobs/batch`, { jobs: ids.map((id) => ({ id })) });
  const taken = (await api('POST', `/v1/queues/${queue}/receive`, { max: ids.length })).body;
  for (const delivery of taken.deliveries) {
    const reason = reasonOf(delivery.id);
    await api('POST', `/v1/queues/${queue}/nack`, {
      receipt: delivery.receipt,
      requeue: false,
      ...(reason === undefined ? {} : { reason }),
    });
  }
}

beforeAll(async () => {
  if (skipBrowser) return;
  server = await startDashboardServer({
    name: 'limits',
    keys: [
      { name: 'ops', key: ADMIN, allow: [{ queues: '*', actions: ['admin'] }] },
      { name: 'publisher', key: PUBLISHER, allow: [{ queues: '*', actions: ['publish'] }] },
    ],
  });
  await Promise.all(
    Array.from({ length: QUEUES }, (_, n) =>
      api('PUT', `/v1/queues/q${String(n).padStart(3, '0')}`, {}),
    ),
  );
  // 12,000 ready: five-digit figures on the depth chart's axis.
  for (let at = 0; at < 12_000; at += 100) {
    await api('POST', '/v1/queues/q000/jobs/batch', {
      jobs: Array.from({ length: 100 }, (_, n) => ({ id: `r${at + n}` })),
    });
  }
  await api('POST', '/v1/queues/q000/receive', {});
  await kill('wide', ['short', LONG_ID], (id) => (id === 'short' ? LONG_REASON : 'timeout'));
  await kill('mixed', ['a1', 'a2', 'a3', 'a4', 'b1', 'b2'], (id) =>
    id.startsWith('a') ? 'alpha' : id === 'b1' ? 'beta' : undefined,
  );
  browser = await launchChromium();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await server?.close();
});

async function open(key = ADMIN): Promise<{ context: BrowserContext; page: Page }> {
  const page = await signIn(browser, server.url, key);
  return { context: page.context(), page };
}

/**
 * The paths of the API reads `page` makes over a poll and a half (`nextPoll`): up to a request
 * of the test's own made in the page after them, so every read the poll started is counted.
 * Counted once `drawn` is shown: the figures the page opened with are in, so that no read of
 * them is still on its way, made before the count and not made again by the poll.
 */
async function readsOverAPoll(page: Page, drawn: Locator): Promise<string[]> {
  await drawn.first().waitFor();
  const paths: string[] = [];
  const listen = (request: { url(): string }) => paths.push(new URL(request.url()).pathname);
  page.on('request', listen);
  await nextPoll(page, 2_500);
  const fence = page.waitForRequest((request) => request.url().endsWith('/ui/favicon.svg?fence'));
  await page.evaluate(() => {
    void fetch('/ui/favicon.svg?fence');
  });
  await fence;
  page.off('request', listen);
  return paths;
}

describe.skipIf(skipBrowser)('the dashboard at its limits (Chromium)', () => {
  let admin: { context: BrowserContext; page: Page };

  it('lists queues a page of 50 at a time, with a name filter', async () => {
    admin = await open();
    const { page } = admin;
    const rows = page.locator('table.figures tbody tr');
    await page.getByText(`1–50 of ${QUEUES + 2} queues`).waitFor();
    await expect(rows.count()).resolves.toBe(50);
    await expect(rows.first().locator('th').textContent()).resolves.toBe('mixed');
    await page.getByRole('button', { name: 'Next page' }).click();
    await page.getByText(`51–100 of ${QUEUES + 2} queues`).waitFor();
    await expect(rows.first().locator('th').textContent()).resolves.toBe('q049');
    await page.getByLabel('Filter by name').fill('q119');
    await page.getByText('1 of 1 queue', { exact: true }).waitFor();
    await page.getByLabel('Filter by name').fill('q11');
    await page.getByText('1–10 of 10 queues').waitFor();
    await expect(rows.count()).resolves.toBe(10);
    await expect(page.getByRole('button', { name: 'Previous page' }).isDisabled()).resolves.toBe(
      true,
    );
    // Two readings later the rows have their sparklines and stay a page long.
    await expect
      .poll(
        afterPoll(page, () => page.locator('svg.sparkline').count()),
        POLLED,
      )
      .toBe(10);
    await page.getByLabel('Filter by name').fill('');
    await page.getByText(`1–50 of ${QUEUES + 2} queues`).waitFor();
  });

  it('asks the server for the page it shows: by filter and page number, a page of 50', async () => {
    const { page } = admin;
    const total = QUEUES + 2;
    /**
     * The query of each GET /v1/stats the page makes, and the size of the latest answer to each
     * query (answers of polls already on their way may come after a newer request's).
     */
    const asked: string[] = [];
    const answers = new Map<string, { queues: number; total: number }>();
    const onRequest = (request: { url(): string }) => {
      const url = new URL(request.url());
      if (url.pathname === '/v1/stats') asked.push(url.search);
    };
    const onResponse = async (response: { url(): string; json(): Promise<unknown> }) => {
      const url = new URL(response.url());
      if (url.pathname !== '/v1/stats') return;
      const body = (await response.json()) as { queues: unknown[]; total: number };
      answers.set(url.search, { queues: body.queues.length, total: body.total });
    };
    page.on('request', onRequest);
    page.on('response', onResponse);
    const rows = page.locator('table.figures tbody tr');
    await expect
      .poll(
        afterPoll(page, () => answers.size),
        POLLED,
      )
      .toBeGreaterThan(0);
    expect(new Set(asked)).toEqual(new Set(['?offset=0&limit=50']));
    expect(answers.get('?offset=0&limit=50')).toEqual({ queues: 50, total });

    await page.getByRole('button', { name: 'Next page' }).click();
    await page.getByText(`51–100 of ${total} queues`).waitFor();
    expect(asked.at(-1)).toBe('?offset=50&limit=50');
    // Upper or lower case alike, as before; the server filters.
    await page.getByLabel('Filter by name').fill('Q11');
    await page.getByText('1–10 of 10 queues').waitFor();
    expect(asked.at(-1)).toBe('?offset=0&limit=50&contains=Q11');
    await expect
      .poll(() => answers.get('?offset=0&limit=50&contains=Q11'))
      .toEqual({ queues: 10, total: 10 });
    await expect(rows.count()).resolves.toBe(10);
    // The sparklines draw from the readings of the page.
    await expect
      .poll(
        afterPoll(page, () => page.locator('svg.sparkline').count()),
        POLLED,
      )
      .toBe(10);

    // Queues deleted while the last page is open: it goes back within what there is.
    const extra = Array.from({ length: 30 }, (_, n) => `zz${String(n).padStart(2, '0')}`);
    await Promise.all(extra.map((name) => api('PUT', `/v1/queues/${name}`, {})));
    await page.getByLabel('Filter by name').fill('');
    await page.getByText(`1–50 of ${total + 30} queues`).waitFor();
    for (const shown of ['51–100', '101–150', '151–152']) {
      await page.getByRole('button', { name: 'Next page' }).click();
      await page.getByText(`${shown} of ${total + 30} queues`).waitFor();
    }
    expect(asked.at(-1)).toBe('?offset=150&limit=50');
    await expect(rows.count()).resolves.toBe(2);
    await Promise.all(extra.map((name) => api('DELETE', `/v1/queues/${name}`)));
    await shownAfterPolls(page, page.getByText(`101–${total} of ${total} queues`));
    expect(asked.at(-1)).toBe('?offset=100&limit=50');
    await expect(rows.count()).resolves.toBe(total - 100);
    await expect(page.getByRole('button', { name: 'Next page' }).isDisabled()).resolves.toBe(true);
    // Every read of the overview asked for a page: never every queue.
    expect(asked.filter((query) => !query.includes('limit=50'))).toEqual([]);
    page.off('request', onRequest);
    page.off('response', onResponse);
    await page.getByRole('button', { name: 'Previous page' }).click();
    await page.getByRole('button', { name: 'Previous page' }).click();
    await page.getByText(`1–50 of ${total} queues`).waitFor();
  });

  it('reads every queue’s figures on the overview only: a queue or job page reads its own', async () => {
    const { page } = admin;
    await openQueuePage(page, 'q000');
    const onQueue = await readsOverAPoll(page, page.locator('dl.cards'));
    expect(onQueue).toContain('/v1/queues/q000/stats');
    expect(onQueue).not.toContain('/v1/stats');
    await go(page, '#/queues/q001/jobs/none');
    const onJob = await readsOverAPoll(page, page.getByRole('heading', { name: /Job\s+none/ }));
    expect(onJob.filter((path) => path.endsWith('/stats'))).toEqual([]);
    await go(page, '#/');
    const onOverview = await readsOverAPoll(page, page.locator('table.figures tbody tr'));
    expect(onOverview).toContain('/v1/stats');
  });

  it('fits the y axis to five-digit figures, and gaps the charts from what is in flight', async () => {
    const { page } = admin;
    await go(page, '#/queues/q000');
    await page.waitForFunction(() => document.querySelectorAll('.chart canvas').length === 4);
    // Nothing drawn in the canvas's first columns beside the plot: a y label wider than its axis
    // is cut there. (The time labels below the plot: dashboard-chart-edges.test.ts.)
    const inkAtLeftEdge = await page.evaluate(() => {
      const canvas = document.querySelector('.chart canvas') as HTMLCanvasElement;
      const plot = canvas.parentElement?.querySelector('.u-over') as HTMLElement;
      const context = canvas.getContext('2d') as CanvasRenderingContext2D;
      // Down to the plot's bottom and half a line below it (the lowest y label, centred there).
      const below =
        (plot.offsetTop + plot.offsetHeight + 8) * (canvas.height / canvas.clientHeight);
      const { data } = context.getImageData(0, 0, 2, Math.min(canvas.height, Math.ceil(below)));
      let ink = 0;
      for (let at = 3; at < data.length; at += 4) if ((data[at] ?? 0) > 0) ink += 1;
      return ink;
    });
    expect(inkAtLeftEdge).toBe(0);
    const gap = await page.evaluate(() => {
      const charts = document.querySelector('.charts-section') as HTMLElement;
      const inFlight = document.querySelector('[aria-labelledby="in-flight-title"]') as HTMLElement;
      return inFlight.getBoundingClientRect().top - charts.getBoundingClientRect().bottom;
    });
    expect(gap).toBeGreaterThanOrEqual(12);
    await page.screenshot({ path: artifactPath('limits-axis.png') });
  });

  it('draws each chart once after colour-scheme changes, and resizes the one shown', async () => {
    const { page } = admin;
    const perChart = () =>
      page.$$eval('figure.chart', (charts) =>
        charts.map((chart) => chart.querySelectorAll('.uplot').length),
      );
    for (const scheme of ['dark', 'light', 'dark'] as const) {
      await page.emulateMedia({ colorScheme: scheme });
      await expect.poll(perChart).toEqual([1, 1, 1, 1]);
    }
    await page.setViewportSize({ width: 800, height: 900 });
    await expect
      .poll(() =>
        page.$$eval('figure.chart', (charts) =>
          charts.map((chart) => {
            const box = chart.firstElementChild as HTMLElement;
            const plot = chart.querySelector('.uplot') as HTMLElement;
            return Math.abs(box.clientWidth - plot.getBoundingClientRect().width) <= 1;
          }),
        ),
      )
      .toEqual([true, true, true, true]);
    await page.emulateMedia({ colorScheme: 'light' });
    await page.setViewportSize({ width: 1366, height: 900 });
  });

  it('cuts a long reason and a long id, so that every row keeps its buttons in view', async () => {
    const { page } = admin;
    await go(page, '#/queues/wide/dead-letters');
    await page.locator('table tbody tr').nth(1).waitFor();
    const layout = await page.evaluate(() => {
      const box = (document.querySelector('.table-scroll') as HTMLElement).getBoundingClientRect();
      return {
        overflow: document.documentElement.scrollWidth - document.documentElement.clientWidth,
        buttonsInView: Array.from(document.querySelectorAll('td.row-actions button')).every(
          (button) => button.getBoundingClientRect().right <= Math.min(innerWidth, box.right),
        ),
        select: (document.querySelector('select') as HTMLElement).getBoundingClientRect().width,
      };
    });
    expect(layout.overflow).toBeLessThanOrEqual(0);
    expect(layout.buttonsInView).toBe(true);
    expect(layout.select).toBeLessThan(480);
    // The whole of each in a title.
    const reason = page.getByRole('cell').locator('.badge.reason').filter({ hasText: 'Error:' });
    await expect(reason.getAttribute('title')).resolves.toBe(LONG_REASON);
    await expect(
      page.getByRole('link', { name: LONG_ID, exact: true }).getAttribute('title'),
    ).resolves.toBe(LONG_ID);
    await page.screenshot({ path: artifactPath('limits-wide.png') });
  });

  it('goes back to all reasons when the one filtered by has no dead letter left', async () => {
    const { page } = admin;
    await go(page, '#/queues/mixed/dead-letters');
    const rows = page.locator('table tbody tr');
    await expect.poll(() => rows.count()).toBe(6);
    await page.getByLabel('Reason').selectOption('beta');
    await expect.poll(() => rows.count()).toBe(1);
    await page.getByRole('button', { name: 'Purge all shown' }).click();
    await page.getByRole('alertdialog').getByRole('button', { name: 'Purge 1 job' }).click();
    await page.getByRole('status').filter({ hasText: 'Purged: 1 job.' }).waitFor();
    await expect.poll(() => rows.count()).toBe(5);
    await expect(page.getByLabel('Reason').inputValue()).resolves.toBe('');
    // A nack's default reason is said once, not as "rejected rejected".
    const b2 = page.getByRole('row').filter({ has: page.getByRole('link', { name: 'b2' }) });
    await expect(b2.locator('td').nth(4).textContent()).resolves.toBe('rejected');
    await expect(
      page.getByRole('button', { name: 'Purge all', exact: true }).count(),
    ).resolves.toBe(1);
  });

  it('purges all listed: the very jobs the dialog counted, not those that died after', async () => {
    const { page } = admin;
    const rows = page.locator('table tbody tr');
    await expect.poll(() => rows.count()).toBe(5);
    await page.getByRole('button', { name: 'Purge all', exact: true }).click();
    const dialog = page.getByRole('alertdialog');
    await expect(dialog.getByRole('heading').textContent()).resolves.toBe('Purge all 5 jobs?');
    // Three more die while the dialog is open; the list behind it shows them.
    await kill('mixed', ['c1', 'c2', 'c3'], () => 'gamma');
    await expect
      .poll(
        afterPoll(page, () => rows.count()),
        POLLED,
      )
      .toBe(8);
    await dialog.getByRole('button', { name: 'Purge 5 jobs' }).click();
    const said = page.getByRole('status').filter({ hasText: /^Purged: / });
    await said.waitFor();
    await expect(said.textContent()).resolves.toBe('Purged: 5 jobs.');
    const dead = (await api('GET', '/v1/queues/mixed/dead-letters')).body.deadLetters;
    expect(dead.map((letter: { id: string }) => letter.id)).toEqual(['c1', 'c2', 'c3']);
    await expect
      .poll(
        afterPoll(page, () => rows.count()),
        POLLED,
      )
      .toBe(3);
  });

  it('takes no other action while one is on its way, and says it is', async () => {
    const { page } = admin;
    await kill('mixed', ['e1'], () => 'epsilon');
    const redriveOne = page.getByRole('button', { name: 'Redrive e1', exact: true });
    await shownAfterPolls(page, redriveOne);
    const held: Route[] = [];
    await page.route('**/dead-letters/redrive', (route) => {
      held.push(route);
    });
    await redriveOne.click();
    await expect.poll(() => held.length).toBe(1);
    await page
      .getByRole('status')
      .filter({ hasText: 'Redriving 1 job…' })
      .waitFor({ timeout: 5_000 });
    for (const name of ['Redrive e1', 'Purge e1', 'Redrive all', 'Purge all']) {
      await expect(
        page.getByRole('button', { name, exact: true }).isDisabled(),
        name,
      ).resolves.toBe(true);
    }
    await held[0]?.continue();
    await page.unroute('**/dead-letters/redrive');
    await page.getByRole('status').filter({ hasText: 'Redriven: 1 job.' }).waitFor();
    await expect(
      page.getByRole('button', { name: 'Purge all', exact: true }).isDisabled(),
    ).resolves.toBe(false);
  });

  it('on a job page: a failed action is an alert, one on its way holds the buttons', async () => {
    const { page } = admin;
    await kill('gone', ['d1', 'd2'], () => 'bad input');
    await go(page, '#/queues/gone/jobs/d1');
    const redrive = page.getByRole('button', { name: 'Redrive', exact: true });
    const purge = page.getByRole('button', { name: 'Purge', exact: true });
    await redrive.waitFor();
    const held: Route[] = [];
    await page.route('**/dead-letters/redrive', (route) => {
      held.push(route);
    });
    const refuse = (route: Route | undefined) =>
      route?.fulfill({
        status: 503,
        contentType: 'application/json',
        body: JSON.stringify({ error: { code: 'UNAVAILABLE', message: 'shutting down' } }),
      });
    await redrive.click();
    await expect.poll(() => held.length).toBe(1);
    await refuse(held[0]);
    // A failure is said as one: an alert, never in the colour of success.
    const alert = page.getByRole('alert').filter({ hasText: 'Redrive failed' });
    await alert.waitFor({ timeout: 5_000 });
    await expect(alert.textContent()).resolves.toBe('Redrive failed: shutting down');
    await expect(alert.getAttribute('class')).resolves.toBe('notice error');
    await expect(
      page.getByRole('status').filter({ hasText: 'Redrive failed' }).count(),
    ).resolves.toBe(0);

    // While an action is on its way it says so, and no button can start another.
    await redrive.click();
    await page.getByRole('status').filter({ hasText: 'Redriving…' }).waitFor({ timeout: 5_000 });
    await expect(redrive.isDisabled()).resolves.toBe(true);
    await expect(purge.isDisabled()).resolves.toBe(true);
    await expect.poll(() => held.length).toBe(2);
    await refuse(held[1]);
    await alert.waitFor();
    await expect(redrive.isDisabled()).resolves.toBe(false);
    await page.unroute('**/dead-letters/redrive');

    // The server out of reach: said in words, and forgotten once it answers again.
    await page.route('**/v1/**', (route) => route.abort());
    await redrive.click();
    const unreachable = page.getByRole('alert').filter({ hasText: 'Redrive failed' });
    await expect(unreachable.textContent()).resolves.toBe(
      'Redrive failed: the server could not be reached (it may be down or restarting, or the network is out)',
    );
    await expect(page.locator('main').textContent()).resolves.not.toContain('Failed to fetch');
    await page.unroute('**/v1/**');
    await expect
      .poll(
        afterPoll(page, () => unreachable.count()),
        POLLED,
      )
      .toBe(0);
  });

  it('shows a purged job gone, and a deleted queue without its dead letters', async () => {
    const { page } = admin;
    await go(page, '#/queues/gone/jobs/d1');
    const redrive = page.getByRole('button', { name: 'Redrive', exact: true });
    const purge = page.getByRole('button', { name: 'Purge', exact: true });
    await purge.click();
    await page.getByRole('alertdialog').getByRole('button', { name: 'Purge 1 job' }).click();
    await page.getByRole('status').filter({ hasText: 'Purged.' }).waitFor();
    // No old state, no button left to press.
    await shownAfterPolls(page, page.getByText('No job d1 in gone now'));
    await expect(redrive.count()).resolves.toBe(0);
    await expect(purge.count()).resolves.toBe(0);
    await expect(page.locator('.facts').count()).resolves.toBe(0);

    await go(page, '#/queues/gone/dead-letters');
    const rows = page.locator('table tbody tr');
    await expect
      .poll(
        afterPoll(page, () => rows.count()),
        POLLED,
      )
      .toBe(1);
    await api('DELETE', '/v1/queues/gone');
    await expect
      .poll(
        afterPoll(page, () => rows.count()),
        POLLED,
      )
      .toBe(0);
    await expect(page.getByRole('button', { name: /Purge|Redrive/ }).count()).resolves.toBe(0);
    await page.getByText('No queue named gone that this key can see.').waitFor();
  });

  it('says when the figures are not updating, and keeps the time of the last answer', async () => {
    const { page } = admin;
    await go(page, '#/');
    const live = page.locator('.live-text');
    await expect.poll(() => live.textContent()).toMatch(/^Live · /);
    await page.route('**/v1/**', (route) => route.abort());
    await expect
      .poll(
        afterPoll(page, () => live.textContent()),
        POLLED,
      )
      .toMatch(/^Not updating/);
    const stopped = await live.textContent();
    // One more poll, 2.2 s on, fails too: the time of the last answer stays.
    const failed = page.waitForEvent('requestfailed');
    await nextPoll(page, 2_200);
    await failed;
    await expect(live.textContent()).resolves.toBe(stopped);
    await page.unroute('**/v1/**');
    await expect
      .poll(
        afterPoll(page, () => live.textContent()),
        POLLED,
      )
      .toMatch(/^Live · /);
    // A stopped server (SIGSTOP) takes each request and never answers: not updating either.
    const held: Route[] = [];
    await page.route('**/v1/**', (route) => {
      held.push(route);
    });
    await expect
      .poll(
        afterPoll(page, () => live.textContent()),
        POLLED,
      )
      .toMatch(/^Not updating/);
    await expect(live.getAttribute('title')).resolves.toMatch(
      /^The latest read failed: the server has (not answered for \d+ s|not answered within 6 s)$/,
    );
    await page.unroute('**/v1/**');
    // What is still held was given up by the page: answering it changes nothing.
    await Promise.all(held.map((route) => route.abort().catch(() => {})));
    await expect
      .poll(
        afterPoll(page, () => live.textContent()),
        POLLED,
      )
      .toMatch(/^Live · /);
    await admin.context.close();
  });

  it('tells a key refused a job (403) that it may not read it, not that it is gone', async () => {
    const { context, page } = await open(PUBLISHER);
    await go(page, '#/queues/mixed/jobs/a1');
    await page.getByText('This key may not read this job.', { exact: true }).waitFor();
    await context.close();
  });
});
