/// <reference lib="dom" />
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningServer } from '../../src/server/index.js';
import {
  afterPoll,
  artifactPath,
  callApi,
  launchChromium,
  openQueuePage,
  POLLED,
  signIn,
  skipBrowser,
  startDashboardServer,
} from './browser.js';

/** A queue page with more deliveries in flight than it lists: the oldest, and how many in all. */

const ADMIN = 'admin-key-0123456789';
/** More in flight than one page of the dashboard's (100). */
const IN_FLIGHT = 250;

let server: RunningServer;
let browser: Browser;

const api = (method: string, path: string, body?: unknown) =>
  callApi(server.url, ADMIN, method, path, body);

/** `count` jobs of `queue` received for an hour: tokens 1 … count, in id order. */
async function inFlight(queue: string, count: number): Promise<void> {
  await api('PUT', `/v1/queues/${queue}`, {});
  const ids = Array.from({ length: count }, (_, n) => `${queue}-${String(n).padStart(4, '0')}`);
  for (let at = 0; at < count; at += 100) {
    await api('POST', `/v1/queues/${queue}/jobs/batch`, {
      jobs: ids.slice(at, at + 100).map((id) => ({ id })),
    });
    await api('POST', `/v1/queues/${queue}/receive`, { max: 100, visibility: 3_600_000 });
  }
}

beforeAll(async () => {
  if (skipBrowser) return;
  server = await startDashboardServer({
    name: 'in-flight',
    keys: [{ name: 'ops', key: ADMIN, allow: [{ queues: '*', actions: ['admin'] }] }],
  });
  await inFlight('busy', IN_FLIGHT);
  await inFlight('few', 2);
  browser = await launchChromium();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await server?.close();
});

describe.skipIf(skipBrowser)('the deliveries in flight on a queue page (Chromium)', () => {
  it('R34 lists the 100 oldest of many in flight, says how many there are in all, and reads one page; a few are listed whole', async () => {
    const page = await signIn(browser, server.url, ADMIN);
    /** The query and answer size of every read of the in-flight list. */
    const reads: { search: string; bytes: number }[] = [];
    page.on('response', async (response) => {
      const url = new URL(response.url());
      if (url.pathname !== '/v1/queues/busy/deliveries') return;
      reads.push({ search: url.search, bytes: (await response.body()).length });
    });
    await openQueuePage(page, 'busy');
    const panel = page.locator('section[aria-labelledby="in-flight-title"]');
    await panel.getByText(`Listed: the 100 oldest of ${IN_FLIGHT} in flight.`).waitFor();
    const rows = panel.locator('tbody tr');
    await expect.poll(() => rows.count()).toBe(100);
    // The oldest first, by token: busy-0000 holds token 1, busy-0099 token 100.
    await expect(rows.first().locator('th').textContent()).resolves.toBe('busy-0000');
    await expect(rows.first().locator('td').first().textContent()).resolves.toBe('1');
    await expect(rows.last().locator('th').textContent()).resolves.toBe('busy-0099');
    await expect(rows.last().locator('td').first().textContent()).resolves.toBe('100');
    // The figure above counts every one of them.
    const card = page.locator('dl.cards > div').filter({ has: page.getByText('In flight') });
    await expect(card.locator('dd').textContent()).resolves.toBe(String(IN_FLIGHT));
    // Every read asked for one page: never the whole list, at every poll.
    await expect
      .poll(
        afterPoll(page, () => reads.length),
        POLLED,
      )
      .toBeGreaterThan(1);
    expect(new Set(reads.map((read) => read.search))).toEqual(new Set(['?limit=100']));
    const whole = (await api('GET', '/v1/queues/busy/deliveries?limit=1000')).body;
    expect(whole.deliveries).toHaveLength(IN_FLIGHT);
    for (const read of reads) {
      expect(read.bytes).toBeLessThan(JSON.stringify(whole).length / 2);
    }
    await page.screenshot({ path: artifactPath('in-flight-oldest.png'), fullPage: true });
    // A queue whose deliveries fit on the page lists them all, and says nothing more.
    await openQueuePage(page, 'few');
    await panel.getByRole('link', { name: 'few-0001', exact: true }).waitFor();
    await expect.poll(() => panel.locator('tbody tr').count()).toBe(2);
    await expect(panel.getByText(/^Listed:/).count()).resolves.toBe(0);
    await page.context().close();
  });
});
