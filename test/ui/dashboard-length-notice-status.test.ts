/// <reference lib="dom" />
import type { Browser, Page } from 'playwright-core';
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
 * The notice of a queue at its max length (R31) as a screen reader meets it: a status there
 * before the queue fills, whose text is the queue's state alone (the rate refused, new at every
 * reading, beside it); and what it says of a queue holding more ready jobs than its bound.
 */

const ADMIN = 'admin-key-0123456789';

let server: RunningServer;
let browser: Browser;
let producer: ReturnType<typeof setInterval> | undefined;
const publishing = new Set<Promise<unknown>>();

const api = (method: string, path: string, body?: unknown) =>
  callApi(server.url, ADMIN, method, path, body);

beforeAll(async () => {
  if (skipBrowser) return;
  server = await startDashboardServer({
    name: 'length-status',
    keys: [{ name: 'ops', key: ADMIN, allow: [{ queues: '*', actions: ['admin'] }] }],
  });
  await api('PUT', '/v1/queues/bounded', { maxLength: 3 });
  for (const id of ['a', 'b']) await api('POST', '/v1/queues/bounded/jobs', { id });
  await api('PUT', '/v1/queues/lowered', { maxLength: 5 });
  for (const id of ['a', 'b', 'c', 'd']) await api('POST', '/v1/queues/lowered/jobs', { id });
  browser = await launchChromium();
}, 60_000);

afterAll(async () => {
  clearInterval(producer);
  await Promise.all(publishing);
  await browser?.close();
  await server?.close();
});

/** The text of each status on the page, and whether it was marked before. */
const statuses = (page: Page) =>
  page.evaluate(() =>
    Array.from(document.querySelectorAll('[role="status"]')).map((element) => ({
      text: element.textContent ?? '',
      before: (element as HTMLElement).dataset.markedBefore === 'yes',
    })),
  );

describe.skipIf(skipBrowser)('the max length notice as a status (Chromium)', () => {
  it('says the queue is full in a status drawn before it filled, without the rate that changes at each reading', async () => {
    const page = await signIn(browser, server.url, ADMIN);
    await openQueuePage(page, 'bounded');
    await page.getByRole('term').filter({ hasText: 'Refused' }).waitFor({ timeout: 10_000 });
    // Every status on the page while the queue still has room.
    await page.evaluate(() => {
      for (const element of Array.from(document.querySelectorAll('[role="status"]'))) {
        (element as HTMLElement).dataset.markedBefore = 'yes';
      }
    });
    await api('POST', '/v1/queues/bounded/jobs', { id: 'c' });
    let n = 0;
    producer = setInterval(() => {
      n += 1;
      const publish = api('POST', '/v1/queues/bounded/jobs', { id: `more-${n}` });
      publishing.add(publish);
      void publish.finally(() => publishing.delete(publish));
    }, 200);
    await page
      .getByText(/Refused at the latest reading: [\d.]+ jobs\/s\./)
      .waitFor({ timeout: 10_000 });
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
    await page.getByRole('term').filter({ hasText: 'Refused' }).waitFor({ timeout: 10_000 });
    await api('PATCH', '/v1/queues/lowered', { maxLength: 2 });
    await page
      .getByRole('status')
      .filter({
        hasText:
          'Full: lowered holds 4 ready jobs, more than its max length of 2 ready jobs: publishes that add a ready job are refused (QUEUE_FULL) until consumers take jobs.',
      })
      .waitFor({ timeout: 10_000 });
    await api('PATCH', '/v1/queues/lowered', { overflow: 'dead-letter-oldest' });
    await page
      .getByRole('status')
      .filter({
        hasText:
          'Past its max length of 2 ready jobs (4 ready): the next job published to lowered makes its oldest ready jobs die until 2 are left (reason maxlen).',
      })
      .waitFor({ timeout: 10_000 });
    await page.context().close();
  });
});
