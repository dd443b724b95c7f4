/// <reference lib="dom" />
import { copyFileSync } from 'node:fs';
import type { Browser, BrowserContext, ConsoleMessage, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningServer } from '../../src/server/index.js';
import {
  afterPoll,
  artifactPath,
  callApi,
  DOC_IMAGES,
  launchChromium,
  nextPoll,
  POLLED,
  shownAfterPolls,
  skipBrowser,
  startDashboardServer,
} from './browser.js';

const ADMIN = 'admin-key-0123456789';
const VIEWER = 'viewer-key-0123456789';
/** An id with a right-to-left override: obeyed, it would read "rtl-live". */
const BIDI_ID = 'rtl-\u202Eevil';
/** The longest id there can be. */
const LONG_READY_ID = `long-${'y'.repeat(251)}`;
/** Members of one group (R24): the first is ready, the others wait behind it. */
const GROUPED = Array.from({ length: 25 }, (_, n) => `g-${String(n).padStart(2, '0')}`);

let server: RunningServer;
let browser: Browser;
const requests: string[] = [];
const problems: string[] = [];
/** Every answer of 400 or more the pages received, with its URL (the console's line has none). */
const refusals: { status: number; path: string }[] = [];

const api = (method: string, path: string, body?: unknown, key = ADMIN) =>
  callApi(server.url, key, method, path, body);

/** Queues with ready, delayed, in-flight and dead jobs, every dead one with a history. */
async function seed(): Promise<void> {
  await api('PUT', '/v1/queues/orders', {
    visibility: 120_000,
    maxDeliveries: 3,
    retention: 7 * 86_400_000,
    maxLength: 10_000,
    overflow: 'dead-letter-oldest',
  });
  await api('PUT', '/v1/queues/reports', {});
  // A mail that dies moves to reports, with its origin (R26).
  await api('PUT', '/v1/queues/emails', { visibility: 30_000, deadLetterQueue: 'reports' });
  await api('POST', '/v1/queues/reports/jobs/batch', {
    jobs: [
      ...GROUPED.map((id) => ({ id, group: 'tenant-7' })),
      { id: BIDI_ID },
      { id: LONG_READY_ID },
    ],
  });
  const jobs = Array.from({ length: 12 }, (_, n) => ({
    id: `order-${n + 1}`,
    payload: {
      order: n + 1,
      total: 19.5 + n,
      items: [{ sku: `SKU-${100 + n}`, quantity: 1 + (n % 3) }],
    },
  }));
  await api('POST', '/v1/queues/orders/jobs/batch', { jobs });
  await api('POST', '/v1/queues/orders/jobs', { id: 'order-later', delay: 3_600_000 });
  // order-1: requeued once, then rejected; order-2 and order-3 rejected at once.
  const first = (await api('POST', '/v1/queues/orders/receive', {})).body.deliveries[0];
  await api('POST', '/v1/queues/orders/nack', {
    receipt: first.receipt,
    error: 'payment gateway timed out',
  });
  const three = (await api('POST', '/v1/queues/orders/receive', { max: 3 })).body.deliveries;
  const reasons = ['card declined', 'card declined', 'address not found'];
  for (const [index, delivery] of three.entries()) {
    await api('POST', '/v1/queues/orders/nack', {
      receipt: delivery.receipt,
      requeue: false,
      reason: reasons[index],
    });
  }
  // Two in flight, one of them under a session.
  const session = (await api('POST', '/v1/queues/orders/sessions', {})).body.session;
  await api('POST', '/v1/queues/orders/receive', { session });
  await api('POST', '/v1/queues/orders/receive', { visibility: 45_000 });
  await api('POST', '/v1/queues/emails/jobs/batch', {
    jobs: [{ id: 'welcome-1' }, { id: 'welcome-2' }, { id: 'digest-1' }],
  });
  const mail = (await api('POST', '/v1/queues/emails/receive', {})).body.deliveries[0];
  await api('POST', '/v1/queues/emails/ack', { receipt: mail.receipt });
  await api('POST', '/v1/queues/emails/jobs', { id: 'bounce-1', priority: 9 });
  const bounce = (await api('POST', '/v1/queues/emails/receive', {})).body.deliveries[0];
  await api('POST', '/v1/queues/emails/nack', {
    receipt: bounce.receipt,
    requeue: false,
    reason: 'mailbox full',
  });
}

const go = (page: Page, hash: string) =>
  page.evaluate((to) => {
    window.location.hash = to;
  }, hash);

async function openAs(key: string, options: Parameters<Browser['newContext']>[0] = {}) {
  const context = await browser.newContext({ viewport: { width: 1366, height: 900 }, ...options });
  // The page's timers and Date, faked: a test may bring its polls forward (`nextPoll`).
  await context.clock.install();
  const page = await context.newPage();
  page.on('request', (request) => requests.push(request.url()));
  page.on('response', (response) => {
    if (response.status() >= 400) {
      refusals.push({ status: response.status(), path: new URL(response.url()).pathname });
    }
  });
  page.on('console', (message) => {
    if (message.type() === 'error') problems.push(message.text());
  });
  page.on('pageerror', (error) => problems.push(error.message));
  await page.goto(`${server.url}/`);
  await page.getByLabel('API key').fill(key);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'Queues' }).waitFor();
  return { context, page };
}

async function shoot(page: Page, name: string, forDocs = false): Promise<void> {
  const path = artifactPath(`${name}.png`);
  await page.screenshot({ path, fullPage: true });
  if (forDocs && DOC_IMAGES !== undefined) copyFileSync(path, new URL(`${name}.png`, DOC_IMAGES));
}

/** The text of each cell of the row whose header is `name`, by column header. */
async function rowFigures(page: Page, name: string): Promise<Record<string, string>> {
  const headers = await page.locator('table thead th').allInnerTexts();
  const row = page
    .getByRole('row')
    .filter({ has: page.getByRole('rowheader', { name, exact: true }) });
  const cells = await row.locator('th, td').allInnerTexts();
  return Object.fromEntries(
    headers.map((header, index) => [header.trim(), (cells[index] ?? '').trim()]),
  );
}

beforeAll(async () => {
  if (skipBrowser) return;
  server = await startDashboardServer({
    name: 'dashboard',
    keys: [
      { name: 'ops', key: ADMIN, allow: [{ queues: '*', actions: ['admin'] }] },
      { name: 'viewer', key: VIEWER, allow: [{ queues: '*', actions: ['consume'] }] },
    ],
  });
  await seed();
  browser = await launchChromium();
});

afterAll(async () => {
  await browser?.close();
  await server?.close();
});

describe.skipIf(skipBrowser)(
  'the dashboard in Chromium (skipped without /usr/bin/chromium unless CI=true)',
  () => {
    let admin: { context: BrowserContext; page: Page };

    it('shows every queue with the figures /v1/stats answers', async () => {
      admin = await openAs(ADMIN);
      const { page } = admin;
      expect(new URL(page.url()).pathname).toBe('/ui/');
      // Two readings, so that rates and sparklines are drawn.
      await expect
        .poll(
          afterPoll(page, () => page.locator('svg.sparkline').count()),
          POLLED,
        )
        .toBeGreaterThanOrEqual(3);
      const stats = (await api('GET', '/v1/stats')).body.queues;
      expect(stats.map((q: { name: string }) => q.name)).toEqual(['emails', 'orders', 'reports']);
      // Grouped jobs behind the first of their group are counted, not left out.
      expect(stats[2].stats).toMatchObject({ ready: 4, waiting: 24 });
      for (const { name, stats: figures } of stats) {
        const shown = await rowFigures(page, name);
        expect(shown, name).toMatchObject({
          Ready: String(figures.ready),
          Waiting: String(figures.waiting),
          Delayed: String(figures.delayed),
          'In flight': String(figures.active),
          Dead: String(figures.dead),
        });
      }
      // Each rate is named for the counter it plots: leases that ran out, not jobs that expired.
      expect(Object.keys(await rowFigures(page, 'orders'))).toEqual([
        'Queue',
        'Ready',
        'Waiting',
        'Delayed',
        'In flight',
        'Dead',
        'Oldest ready',
        'Published/s',
        'Acked/s',
        'Redelivered/s',
        'Lease expiries/s',
        'Stale acks/s',
        'Depth',
      ]);
      await shoot(page, 'overview', true);
    });

    it('asks for the first page of 50 queues, and shows a small install without filter or pages', async () => {
      const { page } = admin;
      const reads = requests
        .map((url) => new URL(url))
        .filter((url) => url.pathname === '/v1/stats');
      expect(reads.length).toBeGreaterThan(1);
      expect(new Set(reads.map((url) => url.search))).toEqual(new Set(['?offset=0&limit=50']));
      await expect(page.getByLabel('Filter by name').count()).resolves.toBe(0);
      await expect(page.getByRole('navigation', { name: 'Pages of queues' }).count()).resolves.toBe(
        0,
      );
      await expect(page.locator('table.figures tbody tr').count()).resolves.toBe(3);
    });

    it('a queue page shows options, charts and the deliveries in flight as the API lists them', async () => {
      const { page } = admin;
      await page.getByRole('link', { name: 'orders', exact: true }).click();
      await page.getByRole('heading', { name: /Queue\s+orders/ }).waitFor();
      const live = (await api('GET', '/v1/queues/orders/deliveries')).body.deliveries;
      expect(live).toHaveLength(2);
      const table = page
        .getByRole('table')
        .filter({ has: page.getByRole('columnheader', { name: 'Token' }) });
      for (const delivery of live) {
        const row = table
          .getByRole('row')
          .filter({ has: page.getByRole('link', { name: delivery.id }) });
        await expect(row.getByRole('cell').first().textContent()).resolves.toBe(
          String(delivery.token),
        );
      }
      await page.getByText('Max deliveries').waitFor();
      const option = (label: string) =>
        page.locator('dl.options > div').filter({ has: page.getByText(label, { exact: true }) });
      await expect(option('Retention').locator('dd').textContent()).resolves.toBe('7 d');
      await expect(option('Max length').locator('dd').textContent()).resolves.toBe(
        '10000 ready (oldest dies)',
      );
      await page.waitForFunction(() => document.querySelectorAll('.chart canvas').length === 4);
      // One more reading for the charts.
      const read = page.waitForResponse(
        (response) => new URL(response.url()).pathname === '/v1/queues/orders/stats',
      );
      await nextPoll(page, 2_200);
      await read;
      // Deliveries given back unworked (R33) beside the deliveries and acks.
      const deliveriesChart = page.getByRole('img', {
        name: /^Deliveries and acks per second: latest Deliveries .*, Acks .*, Given back unworked /,
      });
      await expect(deliveriesChart.count()).resolves.toBe(1);
      await shoot(page, 'queue', true);
    });

    it('on a queue made after sign-in, lists a job whose id cannot be in a URL (. or ..) unlinked', async () => {
      await api('PUT', '/v1/queues/dots', {});
      await api('POST', '/v1/queues/dots/jobs/batch', { jobs: [{ id: '.' }, { id: 'fine' }] });
      const { page } = admin;
      await page.evaluate(() => {
        window.location.hash = '#/queues/dots';
      });
      await page.getByRole('heading', { name: /Queue\s+dots/ }).waitFor();
      const ready = page.locator('section').filter({ has: page.locator('#ready-title') });
      await ready.getByRole('link', { name: 'fine', exact: true }).waitFor();
      await expect(ready.getByRole('link', { name: '.', exact: true }).count()).resolves.toBe(0);
      await expect(
        ready.getByTitle('a job with this id cannot be opened by its URL').textContent(),
      ).resolves.toBe('.');
      // Back where the next case starts: the orders queue's page, left before the queue goes.
      await page.evaluate(() => {
        window.location.hash = '#/queues/orders';
      });
      await page.getByRole('heading', { name: /Queue\s+orders/ }).waitFor();
      await api('DELETE', '/v1/queues/dots');
    });

    it('a queue page reads only the first 20 ready and delayed jobs, and counts the rest from the stats', async () => {
      await api('PUT', '/v1/queues/backlog', {});
      const ids = (prefix: string, count: number) =>
        Array.from({ length: count }, (_, n) => `${prefix}-${String(n).padStart(2, '0')}`);
      await api('POST', '/v1/queues/backlog/jobs/batch', {
        jobs: ids('r', 25).map((id) => ({ id })),
      });
      await api('POST', '/v1/queues/backlog/jobs/batch', {
        jobs: ids('d', 22).map((id, n) => ({ id, delay: 3_600_000 + n })),
      });
      const { page } = admin;
      const reads: string[] = [];
      const listen = (request: { url(): string }) => {
        const url = new URL(request.url());
        if (url.pathname === '/v1/queues/backlog/inspect') reads.push(url.search);
      };
      page.on('request', listen);
      await page.evaluate(() => {
        window.location.hash = '#/queues/backlog';
      });
      const ready = page.locator('section[aria-labelledby="ready-title"]');
      const delayed = page.locator('section[aria-labelledby="delayed-title"]');
      await delayed.getByRole('link', { name: 'd-00', exact: true }).waitFor();
      // Never the whole state: a queue of 200,000 jobs would be megabytes at every poll.
      expect(reads.length).toBeGreaterThan(0);
      expect(reads.filter((search) => search !== '?limit=20')).toEqual([]);
      await shownAfterPolls(page, ready.getByText('and 5 more'));
      await shownAfterPolls(page, delayed.getByText('and 2 more'));
      await expect(ready.getByRole('listitem').allTextContents()).resolves.toEqual(ids('r', 20));
      await expect(delayed.getByRole('link').allTextContents()).resolves.toEqual(ids('d', 20));
      page.off('request', listen);
      await page.evaluate(() => {
        window.location.hash = '#/queues/orders';
      });
      await page.getByRole('heading', { name: /Queue\s+orders/ }).waitFor();
      await api('DELETE', '/v1/queues/backlog');
    });

    it('shows the jobs waiting behind their group: a figure, in the depth, listed, and on the job page', async () => {
      const { page } = admin;
      await go(page, '#/queues/reports');
      await page.getByRole('heading', { name: /Queue\s+reports/ }).waitFor();
      const card = (label: string) =>
        page
          .locator('dl.cards > div')
          .filter({ has: page.getByText(label, { exact: true }) })
          .locator('dd');
      await expect.poll(() => card('Waiting').textContent()).toBe('24');
      await expect(card('Ready').textContent()).resolves.toBe('4');
      const waiting = page.locator('section[aria-labelledby="waiting-title"]');
      await waiting.getByRole('link', { name: 'g-01', exact: true }).waitFor();
      // In group order, the first 20, and how many more.
      await expect(waiting.getByRole('link').allTextContents()).resolves.toEqual(
        GROUPED.slice(1, 21),
      );
      await waiting.getByText('and 4 more').waitFor();
      await expect
        .poll(() => page.getByRole('img', { name: /^Depth: latest Ready 4, Waiting 24, / }).count())
        .toBe(1);

      // An id with a bidirectional control shows it escaped, never obeyed.
      const ready = page.locator('section[aria-labelledby="ready-title"]');
      await expect(ready.locator('a.job-id').allTextContents()).resolves.toContain(
        'rtl-\\u202Eevil',
      );
      await expect(ready.textContent()).resolves.not.toContain('\u202E');
      // The longest id stays on one line of one column, cut with an ellipsis.
      const long = await ready.locator('a.job-id').evaluateAll((links) => {
        const link = links.find((element) => element.textContent?.startsWith('long-'));
        const list = link?.closest('ol')?.getBoundingClientRect();
        const box = link?.getBoundingClientRect();
        return {
          boxes: link?.getClientRects().length,
          inside: box !== undefined && list !== undefined && box.right <= list.right + 1,
          cut: link !== undefined && link.scrollWidth > link.clientWidth,
        };
      });
      expect(long).toEqual({ boxes: 1, inside: true, cut: true });
      await shoot(page, 'queue-waiting');

      // A waiting job's page shows its group and its number in the group order.
      const member = (await api('GET', '/v1/queues/reports/jobs/g-05')).body;
      expect(member).toMatchObject({ state: 'waiting', group: 'tenant-7' });
      await go(page, '#/queues/reports/jobs/g-05');
      const fact = (label: string) =>
        page
          .locator('dl.facts > div')
          .filter({ has: page.getByText(label, { exact: true }) })
          .locator('dd');
      await expect(fact('State').textContent()).resolves.toBe('waiting');
      await expect(fact('Group').textContent()).resolves.toBe('tenant-7');
      await expect(fact('Group sequence').textContent()).resolves.toBe(String(member.groupSeq));
      // A job moved here when it died in another queue (R26) says where it came from.
      await go(page, '#/queues/reports/jobs/bounce-1');
      await expect
        .poll(() => fact('Came from').textContent())
        .toMatch(/^emails, where it died: mailbox full · /);
      await expect(fact('Came from').getByRole('link', { name: 'emails' }).count()).resolves.toBe(
        1,
      );
      await expect(fact('Priority').textContent()).resolves.toBe('9');
      await shoot(page, 'job-moved');
      await go(page, '#/queues/orders');
      await page.getByRole('heading', { name: /Queue\s+orders/ }).waitFor();
    });

    it('dead letters filter by reason, and a dead job’s page shows its attempt timeline', async () => {
      const { page } = admin;
      await page.getByRole('link', { name: /^Dead letters/ }).click();
      const rows = page.locator('table tbody tr');
      await expect.poll(() => rows.count()).toBe(3);
      await page.getByLabel('Reason').selectOption('card declined');
      await expect.poll(() => rows.count()).toBe(2);
      await page.getByLabel('Reason').selectOption('');
      // The list never shows payloads, so it never reads them: a job's page reads its own.
      const listReads = requests
        .map((url) => new URL(url))
        .filter((url) => url.pathname === '/v1/queues/orders/dead-letters');
      expect(listReads.length).toBeGreaterThan(0);
      expect(new Set(listReads.map((url) => url.search))).toEqual(
        new Set(['?limit=1000&payload=false']),
      );
      await shoot(page, 'dead-letters', true);
      await page.getByRole('link', { name: 'order-1', exact: true }).click();
      await page.getByRole('heading', { name: 'Attempts (2)' }).waitFor();
      const job = (await api('GET', '/v1/queues/orders/jobs/order-1')).body;
      expect(job.history.map((a: { outcome: string }) => a.outcome)).toEqual([
        'requeued',
        'rejected',
      ]);
      const items = page.locator('ol.timeline > li');
      for (const [index, attempt] of job.history.entries()) {
        const text = await items.nth(index).textContent();
        expect(text).toContain(`token ${attempt.token}`);
        expect(text).toContain(attempt.outcome);
      }
      await expect(items.nth(1).textContent()).resolves.toContain('card declined');
      // What went wrong in an attempt is shown with it (R9, R14).
      expect(job.history[0].error).toBe('payment gateway timed out');
      await expect(items.nth(0).textContent()).resolves.toContain('payment gateway timed out');
      await page.getByText('"total": 19.5').waitFor();
      await shoot(page, 'job', true);
      await page.goBack();
    });

    it('redrives one and purges one from the page, and the API agrees', async () => {
      const { page } = admin;
      const row = (id: string) =>
        page.getByRole('row').filter({ has: page.getByRole('link', { name: id, exact: true }) });
      await row('order-2')
        .getByRole('button', { name: /Redrive/ })
        .click();
      await page.getByRole('status').filter({ hasText: 'Redriven: 1 job.' }).waitFor();
      expect((await api('GET', '/v1/queues/orders/jobs/order-2')).body.state).toBe('ready');
      await row('order-3').getByRole('button', { name: /Purge/ }).click();
      const dialog = page.getByRole('alertdialog');
      await dialog.waitFor();
      await shoot(page, 'purge-dialog');
      await dialog.getByRole('button', { name: 'Purge 1 job' }).click();
      await page.getByRole('status').filter({ hasText: 'Purged: 1 job.' }).waitFor();
      expect((await api('GET', '/v1/queues/orders/jobs/order-3')).status).toBe(404);
      const dead = (await api('GET', '/v1/queues/orders/dead-letters')).body.deadLetters;
      expect(dead.map((d: { id: string }) => d.id)).toEqual(['order-1']);
      await expect.poll(() => page.locator('table tbody tr').count()).toBe(1);
    });

    it('R34 lists the oldest page of a long dead set and says how many there are in all', async () => {
      const { page } = admin;
      // A queue of one ready job that dead-letters the oldest at each publish beyond it.
      await api('PUT', '/v1/queues/floods', { maxLength: 1, overflow: 'dead-letter-oldest' });
      for (let at = 0; at < 1002; at += 100) {
        const jobs = Array.from({ length: Math.min(100, 1002 - at) }, (_, n) => ({
          id: `f-${String(at + n).padStart(4, '0')}`,
        }));
        await api('POST', '/v1/queues/floods/jobs/batch', { jobs });
      }
      await page.evaluate(() => {
        window.location.hash = '#/queues/floods/dead-letters';
      });
      await page.getByText('Listed: the 1,000 oldest of 1,001 dead letters.').waitFor();
      await expect.poll(() => page.locator('table tbody tr').count()).toBe(1000);
      await expect(page.locator('table tbody tr').first().textContent()).resolves.toContain(
        'f-0000',
      );
      await expect(
        page.getByRole('link', { name: /^Dead letters/ }).textContent(),
      ).resolves.toContain('1,001');
      await page.getByRole('button', { name: 'Purge all' }).click();
      // Not all listed: it acts on the dead set as it is when confirmed, and says so.
      const dialog = page.getByRole('alertdialog');
      await expect(dialog.getByRole('heading').textContent()).resolves.toBe(
        'Purge every dead job now (at least 1,001)?',
      );
      await dialog.getByRole('button', { name: 'Purge every dead job' }).click();
      await page.getByRole('status').filter({ hasText: 'Purged: 1,001 jobs.' }).waitFor();
      expect((await api('GET', '/v1/queues/floods/dead-letters')).body).toEqual({
        deadLetters: [],
      });
      await page.evaluate(() => {
        window.location.hash = '#/queues/orders';
      });
      await page.getByRole('heading', { name: /Queue\s+orders/ }).waitFor();
      await api('DELETE', '/v1/queues/floods');
    });

    it('R34 counts each reason among the dead letters listed when more died than are listed', async () => {
      const { page } = admin;
      await api('PUT', '/v1/queues/overflows', { maxLength: 1, overflow: 'dead-letter-oldest' });
      for (let at = 0; at < 1002; at += 100) {
        const jobs = Array.from({ length: Math.min(100, 1002 - at) }, (_, n) => ({
          id: `o-${String(at + n).padStart(4, '0')}`,
        }));
        await api('POST', '/v1/queues/overflows/jobs/batch', { jobs });
      }
      await go(page, '#/queues/overflows/dead-letters');
      await page.getByText('Listed: the 1,000 oldest of 1,001 dead letters.').waitFor();
      // 1,001 died of maxlen: the 1,000 are those listed, not every one of that reason.
      await expect(page.getByLabel('Reason').locator('option').allTextContents()).resolves.toEqual([
        'All reasons (1,001)',
        'maxlen (1,000 listed)',
      ]);
      await go(page, '#/queues/orders');
      await page.getByRole('heading', { name: /Queue\s+orders/ }).waitFor();
      await api('DELETE', '/v1/queues/overflows');
    });

    it('refuses a key no header can carry at sign-in, and forgets one kept in the tab', async () => {
      const context = await browser.newContext({ viewport: { width: 1366, height: 900 } });
      const page = await context.newPage();
      const onConsole = (message: ConsoleMessage) => {
        if (message.type() === 'error') problems.push(message.text());
      };
      page.on('console', onConsole);
      page.on('pageerror', (error) => problems.push(error.message));
      const kept = () => page.evaluate(() => sessionStorage.getItem('leaseq.apiKey'));
      await page.goto(`${server.url}/`);
      await page.getByLabel('API key').fill('clé-🔑');
      await page.getByRole('button', { name: 'Sign in' }).click();
      await expect(page.getByRole('alert').textContent()).resolves.toBe(
        'That is not an API key: an API key is ASCII text (letters, digits and punctuation) without spaces or accents.',
      );
      await expect(kept()).resolves.toBeNull();
      // One kept by an earlier version of the page (or typed in by hand): dropped at load.
      await page.evaluate(() => sessionStorage.setItem('leaseq.apiKey', 'clé-🔑'));
      await page.reload();
      await page
        .getByText('The API key kept in this tab cannot be sent, so it was forgotten')
        .waitFor({ timeout: 10_000 });
      await expect(kept()).resolves.toBeNull();
      await page.getByLabel('API key').fill(ADMIN);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByRole('heading', { name: 'Queues' }).waitFor();
      // A server that does not answer (its failed loads logged, as expected here): the key can
      // still be given up for another.
      page.off('console', onConsole);
      await page.route('**/v1/me', (route) => route.abort());
      await page.reload();
      await page.getByText('The server did not answer').waitFor();
      await page.getByRole('button', { name: 'Sign out' }).click();
      await page.getByLabel('API key').waitFor();
      await expect(kept()).resolves.toBeNull();
      await context.close();
    });

    it('a viewer key sees the figures but no admin action, and the server refuses one anyway', async () => {
      const { context, page } = await openAs(VIEWER);
      await page.getByRole('link', { name: 'orders', exact: true }).click();
      await page
        .getByText('In-flight deliveries and waiting jobs are shown to keys with the admin right.')
        .waitFor();
      expect(await page.getByRole('link', { name: /^Dead letters/ }).count()).toBe(0);
      expect(await page.getByRole('columnheader', { name: 'Token' }).count()).toBe(0);
      await page.goto(`${server.url}/ui/#/queues/orders/dead-letters`);
      await page.getByText('This key may not read the dead letters.').waitFor();
      expect(await page.getByRole('button', { name: /Redrive|Purge/ }).count()).toBe(0);
      const refused = await api('POST', '/v1/queues/orders/dead-letters/purge', {}, VIEWER);
      expect(refused.status).toBe(403);
      await context.close();
    });

    it('works on a phone and in dark mode', async () => {
      const phone = await openAs(ADMIN, {
        viewport: { width: 390, height: 844 },
        deviceScaleFactor: 2,
        isMobile: true,
        hasTouch: true,
      });
      await phone.page.getByRole('link', { name: 'orders', exact: true }).waitFor();
      const overflow = await phone.page.evaluate(
        () => document.documentElement.scrollWidth - document.documentElement.clientWidth,
      );
      expect(overflow).toBeLessThanOrEqual(0);
      await shoot(phone.page, 'overview-phone', true);
      await phone.context.close();
      const dark = await openAs(ADMIN, { colorScheme: 'dark' });
      await dark.page.getByRole('link', { name: 'orders', exact: true }).click();
      await dark.page.waitForFunction(
        () => document.querySelectorAll('.chart canvas').length === 4,
      );
      await shoot(dark.page, 'queue-dark', true);
      await dark.context.close();
    });

    it('asked nothing of any other origin and met no script error or CSP refusal', () => {
      expect(requests.length).toBeGreaterThan(10);
      expect(requests.filter((url) => !url.startsWith(server.url))).toEqual([]);
      // Chromium logs every answer of 400 or more as a console error, without its URL; those
      // are judged by the answers themselves, below.
      const unexpected = problems.filter(
        (text) => !/^Failed to load resource: the server responded with a status of \d+/.test(text),
      );
      expect(unexpected).toEqual([]);
      // The page learns that a key is needed from a 401, and a viewer's 403 is shown as such.
      // A read of a queue the cases deleted may still have been on its way when it went.
      const deletedQueue = /^\/v1\/queues\/(dots|floods|backlog)(\/|$)/;
      const unexplained = refusals.filter(
        ({ status, path }) =>
          status !== 401 && status !== 403 && !(status === 404 && deletedQueue.test(path)),
      );
      expect(unexplained).toEqual([]);
    });
  },
);
