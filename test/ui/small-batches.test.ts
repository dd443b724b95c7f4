/// <reference lib="dom" />
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningServer } from '../../src/server/index.js';
import {
  artifactPath,
  callApi,
  launchChromium,
  skipBrowser,
  startDashboardServer,
} from './browser.js';

const ADMIN = 'admin-key-0123456789';
/** Below the 100 ids a request may name by default, and below every action's count here. */
const MAX_BATCH = 10;

let server: RunningServer;
let browser: Browser;

const api = (method: string, path: string, body?: unknown) =>
  callApi(server.url, ADMIN, method, path, body);

/** `count` dead jobs of `reason`, ids `prefix-00`…, published and rejected MAX_BATCH at a time. */
async function kill(prefix: string, count: number, reason: string): Promise<void> {
  for (let at = 0; at < count; at += MAX_BATCH) {
    const jobs = Array.from({ length: Math.min(MAX_BATCH, count - at) }, (_, n) => ({
      id: `${prefix}-${String(at + n).padStart(2, '0')}`,
    }));
    await api('POST', '/v1/queues/bulk/jobs/batch', { jobs });
    const taken = (await api('POST', '/v1/queues/bulk/receive', { max: MAX_BATCH })).body;
    for (const delivery of taken.deliveries) {
      await api('POST', '/v1/queues/bulk/nack', {
        receipt: delivery.receipt,
        requeue: false,
        reason,
      });
    }
  }
}

beforeAll(async () => {
  if (skipBrowser) return;
  server = await startDashboardServer({
    name: 'batch',
    keys: [{ name: 'ops', key: ADMIN, allow: [{ queues: '*', actions: ['admin'] }] }],
    flags: { maxBatch: String(MAX_BATCH) },
  });
  await api('PUT', '/v1/queues/bulk', {});
  await kill('declined', 30, 'card declined');
  await kill('address', 15, 'address not found');
  await kill('timeout', 12, 'timeout');
  browser = await launchChromium();
});

afterAll(async () => {
  await browser?.close();
  await server?.close();
});

/** The page's report of an action, whichever way it went (a failure is an alert). */
async function outcome(page: Page, done: RegExp): Promise<string | null> {
  const status = page
    .getByRole('status')
    .or(page.getByRole('alert'))
    .filter({ hasText: new RegExp(`${done.source}|failed`) });
  await status.waitFor();
  return status.textContent();
}

describe.skipIf(skipBrowser)(
  `bulk actions against a server with maxBatch ${MAX_BATCH} (skipped without /usr/bin/chromium unless CI=true)`,
  () => {
    it('redrives 30 selected, purges 15 selected and 12 "all shown", in requests the server takes', async () => {
      const context = await browser.newContext({ viewport: { width: 1366, height: 900 } });
      const page = await context.newPage();
      const asked: string[] = [];
      const refused: string[] = [];
      page.on('request', (request) => asked.push(new URL(request.url()).pathname));
      page.on('response', (response) => {
        if (response.status() >= 400) refused.push(`${response.status()} ${response.url()}`);
      });
      await page.goto(`${server.url}/ui/#/queues/bulk/dead-letters`);
      await page.getByLabel('API key').fill(ADMIN);
      await page.getByRole('button', { name: 'Sign in' }).click();
      const rows = page.locator('table tbody tr');
      await expect.poll(() => rows.count()).toBe(57);

      const selectAll = async (reason: string, count: number) => {
        await page.getByLabel('Reason').selectOption(reason);
        await expect.poll(() => rows.count()).toBe(count);
        await page.getByLabel('Select all shown').check();
      };
      await selectAll('card declined', 30);
      await page.getByRole('button', { name: 'Redrive selected (30)' }).click();
      await page.getByRole('alertdialog').getByRole('button', { name: 'Redrive 30 jobs' }).click();
      await expect(outcome(page, /Redriven/)).resolves.toBe('Redriven: 30 jobs.');
      expect((await api('GET', '/v1/queues/bulk/stats')).body).toMatchObject({
        ready: 30,
        dead: 27,
      });

      await selectAll('address not found', 15);
      await page.getByRole('button', { name: 'Purge selected (15)' }).click();
      await page.getByRole('alertdialog').getByRole('button', { name: 'Purge 15 jobs' }).click();
      await expect(outcome(page, /Purged: 15/)).resolves.toBe('Purged: 15 jobs.');

      await page.getByLabel('Reason').selectOption('timeout');
      await expect.poll(() => rows.count()).toBe(12);
      await page.getByRole('button', { name: 'Purge all shown' }).click();
      await page.getByRole('alertdialog').getByRole('button', { name: 'Purge 12 jobs' }).click();
      await expect(outcome(page, /Purged: 12/)).resolves.toBe('Purged: 12 jobs.');
      await page.screenshot({ path: artifactPath('small-batches.png'), fullPage: true });

      expect((await api('GET', '/v1/queues/bulk/dead-letters')).body).toEqual({
        deadLetters: [],
      });
      expect(refused.filter((line) => !line.startsWith('401 '))).toEqual([]);
      // The server's maxBatch is asked once, however many actions follow.
      expect(asked.filter((path) => path === '/v1/limits')).toHaveLength(1);
      await context.close();
    });
  },
);
