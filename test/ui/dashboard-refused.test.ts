/// <reference lib="dom" />
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningServer } from '../../src/server/index.js';
import {
  artifactPath,
  callApi,
  go,
  launchChromium,
  openQueuePage,
  signIn,
  skipBrowser,
  startDashboardServer,
} from './browser.js';

/** R31: a queue at its max length refusing publishes (QUEUE_FULL), as the dashboard shows it. */

const ADMIN = 'admin-key-0123456789';

let server: RunningServer;
let browser: Browser;
/** Publishes to `capped` over and over, as a producer of a full queue keeps trying. */
let producer: ReturnType<typeof setInterval> | undefined;
/** Its publishes on their way. */
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
  browser = await launchChromium();
}, 60_000);

afterAll(async () => {
  await stopProducer();
  await browser?.close();
  await server?.close();
});

function startProducer(): void {
  let n = 0;
  producer = setInterval(() => {
    n += 1;
    const publish = api('POST', '/v1/queues/capped/jobs', { id: `more-${n}` });
    publishing.add(publish);
    void publish.finally(() => publishing.delete(publish));
  }, 250);
}

/** Stops the producer once its publishes on their way are answered. */
async function stopProducer(): Promise<void> {
  clearInterval(producer);
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

describe.skipIf(skipBrowser)('a queue refusing publishes at its max length (Chromium)', () => {
  it('marks the row of a queue refusing publishes on the overview, and no other', async () => {
    expect((await api('POST', '/v1/queues/capped/jobs', { id: 'd' })).body.error.code).toBe(
      'QUEUE_FULL',
    );
    startProducer();
    const page = await signIn(browser, server.url, ADMIN);
    const row = (name: string) =>
      page.getByRole('row').filter({ has: page.getByRole('link', { name, exact: true }) });
    await row('capped').getByText('refusing publishes').waitFor({ timeout: 10_000 });
    await expect(row('roomy').getByText('refusing publishes').count()).resolves.toBe(0);
    await expect(row('large').getByText('refusing publishes').count()).resolves.toBe(0);
    await page.screenshot({ path: artifactPath('refused-overview.png') });
    await page.context().close();
  });

  it('says on the queue page that it is full and refusing, and counts the jobs refused', async () => {
    const page = await signIn(browser, server.url, ADMIN);
    await openQueuePage(page, 'capped');
    const notice = page.locator('p.notice.full');
    await notice.waitFor({ timeout: 8_000 });
    await expect(notice.textContent()).resolves.toMatch(
      /^Full: capped holds its max length of 3 ready jobs: publishes that add a ready job are refused \(QUEUE_FULL\)/,
    );
    await expect
      .poll(() => notice.textContent(), { timeout: 10_000 })
      .toMatch(/Refused at the latest reading: [\d.]+ jobs\/s\.$/);
    const refused = (await api('GET', '/v1/queues/capped/stats')).body.refused;
    expect(refused).toBeGreaterThan(1);
    await expect
      .poll(async () => Number((await card(page, 'Refused'))?.value.replace(/,/g, '')), {
        timeout: 10_000,
      })
      .toBeGreaterThanOrEqual(refused);
    await expect(card(page, 'Refused')).resolves.toMatchObject({ alert: true });
    await page.screenshot({ path: artifactPath('refused-queue.png'), fullPage: true });

    // Consumers take a job and the producer stops: room again, the count stays.
    await stopProducer();
    const taken = (await api('POST', '/v1/queues/capped/receive', { max: 1 })).body.deliveries;
    await api('POST', '/v1/queues/capped/ack', { receipt: taken[0].receipt });
    await expect.poll(() => notice.count(), { timeout: 8_000 }).toBe(0);
    const total = (await api('GET', '/v1/queues/capped/stats')).body.refused;
    // Not red once a reading refused nothing more.
    await expect
      .poll(() => card(page, 'Refused'), { timeout: 8_000 })
      .toEqual({ value: String(total), alert: false });

    // A batch larger than the room left is refused whole: said, though the queue is not full.
    const batch = await api('POST', '/v1/queues/capped/jobs/batch', {
      jobs: [{ id: 'x1' }, { id: 'x2' }],
    });
    expect(batch.status).toBe(409);
    await page
      .locator('p.notice.full')
      .filter({ hasText: /^Refusing publishes: capped refused publishes/ })
      .waitFor({ timeout: 8_000 });
    await page.context().close();
  });

  it('shows a refused figure on a queue below its max length, and none on one that refuses no publish', async () => {
    const page = await signIn(browser, server.url, ADMIN);
    await openQueuePage(page, 'roomy');
    await expect.poll(() => card(page, 'Ready'), { timeout: 10_000 }).toMatchObject({ value: '3' });
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
      .poll(() => maxLength.textContent(), { timeout: 10_000 })
      .toBe('10000 ready (publish refused)');
    await expect(card(page, 'Refused')).resolves.toEqual({ value: '0', alert: false });
    await expect(page.locator('p.notice.full').count()).resolves.toBe(0);
    // At its max length, a queue whose oldest job dies to make room refuses nothing.
    await go(page, '#/queues/drops');
    await page
      .getByText(
        'At its max length of 1 ready job: each job published to drops makes its oldest ready job die (reason maxlen).',
      )
      .waitFor({ timeout: 8_000 });
    await expect(card(page, 'Refused')).resolves.toBeNull();
    await page.context().close();
  });
});
