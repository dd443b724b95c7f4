import { describe, expect, it } from 'vitest';
import { signIn, skipBrowser, useAdminDashboard } from './browser.js';

// A job's history keeps its first attempt and its latest 99 (R14). Past that, the job page names
// an attempt by its number only where it is known: the first, then the latest ones counted back
// from the latest, with the attempts not kept said between them.

const dashboard = useAdminDashboard({
  name: 'attempts',
  queues: { retried: { maxDeliveries: null } },
});

/** Delivers the job `id` of `queue` and gives it back, `times` times over. */
async function retry(queue: string, id: string, times: number): Promise<void> {
  const handle = await dashboard.server.broker.queue(queue);
  for (let n = 0; n < times; n += 1) {
    const [delivery] = await handle.receive();
    expect(delivery?.id).toBe(id);
    expect(await handle.nack(delivery?.token ?? 0)).toBe(true);
  }
}

describe.skipIf(skipBrowser)('the attempts of a job page (Chromium)', () => {
  it('labels the kept attempts past the cap by their place, not as attempts 2 to 100', async () => {
    await dashboard.api('POST', '/v1/queues/retried/jobs', { id: 'often' });
    await retry('retried', 'often', 102);
    const job = (await dashboard.api('GET', '/v1/queues/retried/jobs/often')).body;
    expect(job.deliveryCount).toBe(102);
    // Attempts 2 and 3 are not kept.
    expect(job.history).toHaveLength(100);
    const page = await signIn(dashboard.browser, dashboard.server.url, dashboard.key, {
      hash: '#/queues/retried/jobs/often',
    });
    const items = page.locator('ol.timeline > li');
    await items.nth(99).waitFor();
    const head = (index: number) => items.nth(index).locator('.timeline-head strong').textContent();
    // The second attempt kept is the fourth: 98 before the latest, the 102nd.
    const second = items.filter({ hasText: new RegExp(`token ${job.history[1].token}(?!\\d)`) });
    await expect(second.locator('.timeline-head strong').textContent()).resolves.toBe(
      '98 before the latest',
    );
    await expect(head(0)).resolves.toBe('Attempt 1');
    await expect(items.nth(1).textContent()).resolves.toMatch(
      /^At least 2 attempts between the first and the latest 99 not kept/,
    );
    await expect(head(100)).resolves.toBe('Latest attempt');
    await expect(items.count()).resolves.toBe(101);
    await expect(page.locator('#attempts-title').textContent()).resolves.toBe(
      'Attempts (100 kept)',
    );
    await page.context().close();
  });
});
