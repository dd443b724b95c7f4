/// <reference lib="dom" />
import type { Locator, Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { go, signIn, skipBrowser, useAdminDashboard } from './browser.js';

/**
 * Ids that would look like others, or like nothing: a line break, a zero-width space, spaces at
 * their ends, a space alone. Each is shown quoted (as a JSON string), so that no two read alike;
 * links and actions still name the id itself.
 */

/** Each id, then how the dashboard shows it; an id that looks like no other is shown as it is. */
const SHOWN: [string, string][] = [
  ['job-1\n', '"job-1\\n"'],
  ['job-1', 'job-1'],
  ['zw\u200Bx', '"zw\\u200Bx"'],
  ['zwx', 'zwx'],
  ['  spaced  ', '"  spaced  "'],
  ['spaced', 'spaced'],
  [' ', '" "'],
  ['"quoted"', '"\\"quoted\\""'],
  ['tab\there', '"tab\\there"'],
  ['nb\u00A0sp', '"nb\\u00A0sp"'],
  ['nb sp', 'nb sp'],
  // A bidirectional control alone is escaped, unquoted, as before.
  ['rtl-\u202Eevil', 'rtl-\\u202Eevil'],
];
const IDS = SHOWN.map(([id]) => id);

const dashboard = useAdminDashboard({ name: 'ids', queues: ['ids', 'grouped'] });
const { api } = dashboard;

/** Publishes `ids` to `queue` and rejects each, so that they die in that order. */
async function kill(queue: string, ids: string[]): Promise<void> {
  await api('PUT', `/v1/queues/${queue}`, { maxDeliveries: 1 });
  const published = await api('POST', `/v1/queues/${queue}/jobs/batch`, {
    jobs: ids.map((id) => ({ id })),
  });
  expect(published.status).toBeLessThan(300);
  const taken = (await api('POST', `/v1/queues/${queue}/receive`, { max: ids.length })).body;
  expect(taken.deliveries.map((delivery: { id: string }) => delivery.id)).toEqual(ids);
  for (const delivery of taken.deliveries) {
    await api('POST', `/v1/queues/${queue}/nack`, {
      receipt: delivery.receipt,
      requeue: false,
      reason: 'bad input',
    });
  }
}

const path = (queue: string, id: string) => `/v1/queues/${queue}/jobs/${encodeURIComponent(id)}`;

/** The text as drawn (innerText follows white-space: collapsed spaces are not there). */
const drawn = (locator: Locator) =>
  // biome-ignore lint/performance/useDomNodeTextContent: the drawn text is what is checked
  locator.evaluate((element: HTMLElement) => element.innerText);

async function openDeadLetters(page: Page, queue: string, rows: number): Promise<void> {
  await go(page, `#/queues/${queue}/dead-letters`);
  await expect.poll(() => page.locator('table tbody tr').count()).toBe(rows);
}

describe.skipIf(skipBrowser)('ids that would look alike, or like nothing (Chromium)', () => {
  it('shows each id of the dead letters apart, quoted where it would look like another', async () => {
    await kill('ids', IDS);
    const page = await signIn(dashboard.browser, dashboard.server.url, dashboard.key);
    await openDeadLetters(page, 'ids', IDS.length);
    const links = page.locator('table tbody tr th a.job-id');
    await expect(links.allTextContents()).resolves.toEqual(SHOWN.map(([, shown]) => shown));
    // As drawn, too: the spaces of "  spaced  " are all there, and " " is no empty link.
    const texts = await links.evaluateAll((elements) =>
      // biome-ignore lint/performance/useDomNodeTextContent: the drawn text is what is checked
      elements.map((element) => (element as HTMLElement).innerText),
    );
    expect(texts).toEqual(SHOWN.map(([, shown]) => shown));
    expect(new Set(texts).size).toBe(IDS.length);
    const blank = links.nth(IDS.indexOf(' '));
    expect((await blank.boundingBox())?.width ?? 0).toBeGreaterThan(8);
    // The tooltip says the same; the link opens the id itself.
    for (const [index, [id, shown]] of SHOWN.entries()) {
      await expect(links.nth(index).getAttribute('title')).resolves.toBe(shown);
      await expect(links.nth(index).getAttribute('href')).resolves.toBe(
        `#/queues/ids/jobs/${encodeURIComponent(id)}`,
      );
    }
    // The row buttons and the checkbox are named with it.
    const labels = await page
      .locator('table tbody tr')
      .nth(0)
      .locator('[aria-label]')
      .evaluateAll((elements) => elements.map((element) => element.getAttribute('aria-label')));
    expect(labels).toEqual(['Select "job-1\\n"', 'Redrive "job-1\\n"', 'Purge "job-1\\n"']);
    await page.context().close();
  });

  it('redrives and purges the id itself from its row, not the one it looks like', async () => {
    const page = await signIn(dashboard.browser, dashboard.server.url, dashboard.key);
    await openDeadLetters(page, 'ids', IDS.length);
    await page.getByRole('button', { name: 'Redrive "job-1\\n"', exact: true }).click();
    await page.getByRole('status').filter({ hasText: 'Redriven: 1 job.' }).waitFor();
    expect((await api('GET', path('ids', 'job-1\n'))).body.state).toBe('ready');
    expect((await api('GET', path('ids', 'job-1'))).body.state).toBe('dead');

    await page.getByRole('button', { name: 'Purge "zw\\u200Bx"', exact: true }).click();
    await page.getByRole('alertdialog').getByRole('button', { name: 'Purge 1 job' }).click();
    await page.getByRole('status').filter({ hasText: 'Purged: 1 job.' }).waitFor();
    expect((await api('GET', path('ids', 'zw\u200Bx'))).status).toBe(404);
    expect((await api('GET', path('ids', 'zwx'))).body.state).toBe('dead');
    await expect.poll(() => page.locator('table tbody tr').count()).toBe(IDS.length - 2);
    await page.context().close();
  });

  it('shows the id quoted on its job page, in its title, its dialog and once it is gone', async () => {
    const page = await signIn(dashboard.browser, dashboard.server.url, dashboard.key);
    await openDeadLetters(page, 'ids', IDS.length - 2);
    await page.getByRole('link', { name: '"  spaced  "', exact: true }).click();
    const title = page.locator('#job-title');
    await page.getByRole('heading', { name: 'Attempts (1)' }).waitFor();
    await expect(drawn(title)).resolves.toBe('Job "  spaced  "');
    await expect(page.evaluate(() => location.hash)).resolves.toBe(
      `#/queues/ids/jobs/${encodeURIComponent('  spaced  ')}`,
    );
    await page.getByRole('button', { name: 'Purge', exact: true }).click();
    const dialog = page.getByRole('alertdialog');
    await expect(drawn(dialog.getByRole('heading'))).resolves.toBe('Purge "  spaced  "?');
    await dialog.getByRole('button', { name: 'Purge 1 job' }).click();
    const gone = page.locator('.gone-text');
    await gone.waitFor();
    await expect(drawn(gone)).resolves.toMatch(/^No job " {2}spaced {2}" in ids now: /);
    expect((await api('GET', path('ids', '  spaced  '))).status).toBe(404);
    expect((await api('GET', path('ids', 'spaced'))).body.state).toBe('dead');

    // The id that is a space alone: its page reads it, and its title is not blank.
    await go(page, `#/queues/ids/jobs/${encodeURIComponent(' ')}`);
    await page.getByRole('heading', { name: 'Attempts (1)' }).waitFor();
    await expect(drawn(title)).resolves.toBe('Job " "');
    await page.context().close();
  });

  it('shows a group key quoted where it would look like another', async () => {
    const groups: [string, string, string][] = [
      ['g-zw', 'tenant\u200B7', '"tenant\\u200B7"'],
      ['g-plain', 'tenant7', 'tenant7'],
      ['g-end', 'tenant7 ', '"tenant7 "'],
    ];
    await api('POST', '/v1/queues/grouped/jobs/batch', {
      jobs: groups.map(([id, group]) => ({ id, group })),
    });
    const page = await signIn(dashboard.browser, dashboard.server.url, dashboard.key);
    const fact = page
      .locator('dl.facts > div')
      .filter({ has: page.getByText('Group', { exact: true }) })
      .locator('dd');
    for (const [id, , shown] of groups) {
      await go(page, `#/queues/grouped/jobs/${id}`);
      await page.getByRole('heading', { name: `Job ${id}`, exact: true }).waitFor();
      await expect.poll(() => drawn(fact)).toBe(shown);
    }
    await page.context().close();
  });

  it('shows the characters of a payload that would show as nothing escaped, as JSON does', async () => {
    const payload = { user: 'admin\u200B', lines: 'a\u2028b', bidi: 'rtl-\u202Eevil' };
    await api('POST', '/v1/queues/grouped/jobs', { id: 'unseen-payload', payload });
    const page = await signIn(dashboard.browser, dashboard.server.url, dashboard.key);
    await go(page, '#/queues/grouped/jobs/unseen-payload');
    const text = page.locator('pre.payload');
    await text.waitFor();
    const shown = await text.textContent();
    expect(shown).toBe(
      '{\n  "user": "admin\\u200B",\n  "lines": "a\\u2028b",\n  "bidi": "rtl-\\u202Eevil"\n}',
    );
    expect(JSON.parse(shown ?? '')).toEqual(payload);
    await page.context().close();
  });
});
