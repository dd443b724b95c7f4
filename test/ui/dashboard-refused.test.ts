/// <reference lib="dom" />
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningServer } from '../../src/server/index.js';
import {
  afterPoll,
  artifactPath,
  callApi,
  go,
  launchChromium,
  openQueuePage,
  POLLED,
  shownAfterPolls,
  signIn,
  skipBrowser,
  startDashboardServer,
} from './browser.js';

/**
 * R31: a queue at its max length refusing publishes (QUEUE_FULL), as the dashboard shows it; and
 * its notice as a screen reader meets it: a status there before the queue fills, whose text is
 * the queue's state alone (the rate refused, new at every reading, beside it); and what it says
 * of a queue holding more ready jobs than its bound.
 */

const ADMIN = 'admin-key-0123456789';

let server: RunningServer;
let browser: Browser;
type Producer = ReturnType<typeof setInterval>;
/** Producers publishing to a full queue over and over, as the producers of a full queue keep trying. */
const producers = new Set<Producer>();
/** Their publishes on their way. */
const publishing = new Set<Promise<unknown>>();

const api = (method: string, path: string, body?: unknown) =>
  callApi(server.url, ADMIN, method, path, body);

beforeAll(async () => {
  if (skipBrowser) return;
  server = await startDashboardServer({
    name: 'refused',
    keys: [{ name: 'ops', key: ADMIN, allow: [{ queues: '*', actions: ['admin'] }] }],
  });
  await api('PUT', '/v1/queues/capped', { maxLength: 3 });
  await api('PUT', '/v1/queues/roomy', {});
  await api('PUT', '/v1/queues/large', { maxLength: 10_000 });
  await api('PUT', '/v1/queues/drops', { maxLength: 1, overflow: 'dead-letter-oldest' });
  await api('POST', '/v1/queues/drops/jobs', { id: 'a' });
  for (const id of ['a', 'b', 'c']) {
    await api('POST', '/v1/queues/capped/jobs', { id });
    await api('POST', '/v1/queues/roomy/jobs', { id });
  }
  await api('PUT', '/v1/queues/bounded', { maxLength: 3 });
  for (const id of ['a', 'b']) await api('POST', '/v1/queues/bounded/jobs', { id });
  await api('PUT', '/v1/queues/lowered', { maxLength: 5 });
  for (const id of ['a', 'b', 'c', 'd']) await api('POST', '/v1/queues/lowered/jobs', { id });
  browser = await launchChromium();
}, 60_000);

afterAll(async () => {
  await stopProducers();
  await browser?.close();
  await server?.close();
});

/** Publishes to `queue` every `every` ms (ids more-1, more-2 …) until stopped. */
function startProducer(queue: string, every: number): Producer {
  let n = 0;
  const producer = setInterval(() => {
    n += 1;
    const publish = api('POST', `/v1/queues/${queue}/jobs`, { id: `more-${n}` });
    publishing.add(publish);
    void publish.finally(() => publishing.delete(publish));
  }, every);
  producers.add(producer);
  return producer;
}

/** Stops every producer once their publishes on their way are answered. */
async function stopProducers(): Promise<void> {
  for (const producer of producers) clearInterval(producer);
  producers.clear();
  await Promise.all(publishing);
}

/** The value of the card labelled `label` on a queue page, or null when there is none. */
const card = (page: Page, label: string) =>
  page.evaluate((wanted) => {
    for (const item of Array.from(document.querySelectorAll('dl.cards > div'))) {
      if (item.querySelector('dt')?.textContent === wanted) {
        return {
          value: item.querySelector('dd')?.textContent ?? '',
          alert: item.classList.contains('dead-alert'),
        };
      }
    }
    return null;
  }, label);

/**
 * From now on, keeps in `page` the text of every red length notice (`p.notice.full`) as it is
 * drawn, for `noticesDrawn`: a notice that one reading draws and the next takes away is kept,
 * however soon the next reading comes.
 */
const keepNoticesDrawn = (page: Page) =>
  page.evaluate(() => {
    const drawn: string[] = [];
    (window as unknown as { noticesDrawn: string[] }).noticesDrawn = drawn;
    new MutationObserver(() => {
      for (const notice of Array.from(document.querySelectorAll('p.notice.full'))) {
        drawn.push(notice.textContent ?? '');
      }
    }).observe(document.body, {
      subtree: true,
      childList: true,
      characterData: true,
      attributes: true,
    });
  });

/** The text of each red length notice drawn since `keepNoticesDrawn`, oldest first. */
const noticesDrawn = (page: Page) =>
  page.evaluate(() => (window as unknown as { noticesDrawn: string[] }).noticesDrawn);

/** The text of each status on the page, and whether it was marked before. */
const statuses = (page: Page) =>
  page.evaluate(() =>
    Array.from(document.querySelectorAll('[role="status"]')).map((element) => ({
      text: element.textContent ?? '',
      before: (element as HTMLElement).dataset.markedBefore === 'yes',
    })),
  );

describe.skipIf(skipBrowser)('a queue refusing publishes at its max length (Chromium)', () => {
  it('marks the row of a queue refusing publishes on the overview, and no other', async () => {
    expect((await api('POST', '/v1/queues/capped/jobs', { id: 'd' })).body.error.code).toBe(
      'QUEUE_FULL',
    );
    startProducer('capped', 250);
    const page = await signIn(browser, server.url, ADMIN);
    const row = (name: string) =>
      page.getByRole('row').filter({ has: page.getByRole('link', { name, exact: true }) });
    await shownAfterPolls(page, row('capped').getByText('refusing publishes'));
    await expect(row('roomy').getByText('refusing publishes').count()).resolves.toBe(0);
    await expect(row('large').getByText('refusing publishes').count()).resolves.toBe(0);
    await page.screenshot({ path: artifactPath('refused-overview.png') });
    await page.context().close();
  });

  it('says on the queue page that it is full and refusing, and counts the jobs refused', async () => {
    const page = await signIn(browser, server.url, ADMIN);
    await openQueuePage(page, 'capped');
    const notice = page.locator('p.notice.full');
    await shownAfterPolls(page, notice);
    await expect(notice.textContent()).resolves.toMatch(
      /^Full: capped holds its max length of 3 ready jobs: publishes that add a ready job are refused \(QUEUE_FULL\)/,
    );
    await expect
      .poll(
        afterPoll(page, () => notice.textContent()),
        POLLED,
      )
      .toMatch(/Refused at the latest reading: [\d.]+ jobs\/s\.$/);
    const refused = (await api('GET', '/v1/queues/capped/stats')).body.refused;
    expect(refused).toBeGreaterThan(1);
    await expect
      .poll(
        afterPoll(page, async () => Number((await card(page, 'Refused'))?.value.replace(/,/g, ''))),
        POLLED,
      )
      .toBeGreaterThanOrEqual(refused);
    await expect(card(page, 'Refused')).resolves.toMatchObject({ alert: true });
    await page.screenshot({ path: artifactPath('refused-queue.png'), fullPage: true });

    // Consumers take a job and the producer stops: room again, the count stays.
    await stopProducers();
    const taken = (await api('POST', '/v1/queues/capped/receive', { max: 1 })).body.deliveries;
    await api('POST', '/v1/queues/capped/ack', { receipt: taken[0].receipt });
    await expect
      .poll(
        afterPoll(page, () => notice.count()),
        POLLED,
      )
      .toBe(0);
    const total = (await api('GET', '/v1/queues/capped/stats')).body.refused;
    // Not red once a reading refused nothing more.
    await expect
      .poll(
        afterPoll(page, () => card(page, 'Refused')),
        POLLED,
      )
      .toEqual({ value: String(total), alert: false });

    // A batch larger than the room left is refused whole: said, though the queue is not full.
    // Said by the one reading that counts it refused (the next refuses nothing more), however
    // soon the next reading follows it: every notice drawn is kept from here on.
    await keepNoticesDrawn(page);
    const batch = await api('POST', '/v1/queues/capped/jobs/batch', {
      jobs: [{ id: 'x1' }, { id: 'x2' }],
    });
    expect(batch.status).toBe(409);
    await expect
      .poll(
        afterPoll(page, () => noticesDrawn(page)),
        POLLED,
      )
      .toContainEqual(expect.stringMatching(/^Refusing publishes: capped refused publishes/));
    await page.context().close();
  });

  it('shows a refused figure on a queue below its max length, and none on one that refuses no publish', async () => {
    const page = await signIn(browser, server.url, ADMIN);
    await openQueuePage(page, 'roomy');
    await expect
      .poll(
        afterPoll(page, () => card(page, 'Ready')),
        POLLED,
      )
      .toMatchObject({ value: '3' });
    await expect(card(page, 'Refused')).resolves.toBeNull();
    await expect(page.locator('p.notice.full').count()).resolves.toBe(0);
    await go(page, '#/queues/large');
    await page.getByRole('heading', { name: 'Queue large', exact: true }).waitFor();
    const maxLength = page
      .getByRole('region', { name: 'Options' })
      .locator('div')
      .filter({ has: page.getByText('Max length', { exact: true }) })
      .locator('dd');
    await expect
      .poll(
        afterPoll(page, () => maxLength.textContent()),
        POLLED,
      )
      .toBe('10000 ready (publish refused)');
    // The options and the figures are two readings: the card comes with the queue's figures.
    await expect
      .poll(
        afterPoll(page, () => card(page, 'Refused')),
        POLLED,
      )
      .toEqual({ value: '0', alert: false });
    await expect(page.locator('p.notice.full').count()).resolves.toBe(0);
    // At its max length, a queue whose oldest job dies to make room refuses nothing.
    await go(page, '#/queues/drops');
    await shownAfterPolls(
      page,
      page.getByText(
        'At its max length of 1 ready job: each job published to drops makes its oldest ready job die (reason maxlen).',
      ),
    );
    await expect(card(page, 'Refused')).resolves.toBeNull();
    await page.context().close();
  });
});

describe.skipIf(skipBrowser)('the max length notice as a status (Chromium)', () => {
  it('says the queue is full in a status drawn before it filled, without the rate that changes at each reading', async () => {
    const page = await signIn(browser, server.url, ADMIN);
    await openQueuePage(page, 'bounded');
    await shownAfterPolls(page, page.getByRole('term').filter({ hasText: 'Refused' }));
    // Every status on the page while the queue still has room.
    await page.evaluate(() => {
      for (const element of Array.from(document.querySelectorAll('[role="status"]'))) {
        (element as HTMLElement).dataset.markedBefore = 'yes';
      }
    });
    await api('POST', '/v1/queues/bounded/jobs', { id: 'c' });
    const producer = startProducer('bounded', 200);
    await shownAfterPolls(page, page.getByText(/Refused at the latest reading: [\d.]+ jobs\/s\./));
    clearInterval(producer);
    const full = (await statuses(page)).filter((status) => status.text.startsWith('Full:'));
    expect(full).toEqual([
      {
        text: 'Full: bounded holds its max length of 3 ready jobs: publishes that add a ready job are refused (QUEUE_FULL) until consumers take jobs.',
        before: true,
      },
    ]);
    await page.context().close();
  });

  it('says how many ready jobs a queue holds past a max length lowered below them', async () => {
    const page = await signIn(browser, server.url, ADMIN);
    await openQueuePage(page, 'lowered');
    await shownAfterPolls(page, page.getByRole('term').filter({ hasText: 'Refused' }));
    await api('PATCH', '/v1/queues/lowered', { maxLength: 2 });
    await shownAfterPolls(
      page,
      page.getByRole('status').filter({
        hasText:
          'Full: lowered holds 4 ready jobs, more than its max length of 2 ready jobs: publishes that add a ready job are refused (QUEUE_FULL) until consumers take jobs.',
      }),
    );
    await api('PATCH', '/v1/queues/lowered', { overflow: 'dead-letter-oldest' });
    await shownAfterPolls(
      page,
      page.getByRole('status').filter({
        hasText:
          'Past its max length of 2 ready jobs (4 ready): the next job published to lowered makes its oldest ready jobs die until 2 are left (reason maxlen).',
      }),
    );
    await page.context().close();
  });
});
