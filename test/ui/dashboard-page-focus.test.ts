/// <reference lib="dom" />
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import {
  focused,
  go,
  nextPoll,
  openQueuePage,
  POLLED,
  shownAfterPolls,
  signIn,
  skipBrowser,
  useAdminDashboard,
} from './browser.js';

/**
 * The dashboard as a screen reader or a keyboard follows it from page to page: every page has
 * a heading of level 1, and another page opened (a link followed, Back) gives the focus to its
 * heading, so that it is read out and the next Tab goes on from there, rather than leaving it on
 * the body (or on a link no longer there). The first page shown, and the live readings of a
 * page, leave the focus where it is.
 */

const dashboard = useAdminDashboard({ name: 'page-focus', queues: ['walk', 'kept'] });
const { api } = dashboard;

/** The text of every heading of level 1 the page shows. */
const headings = (page: Page) =>
  page
    .getByRole('heading', { level: 1 })
    .evaluateAll((all) => all.map((heading) => heading.textContent?.trim()));

/** Follows the link named `name` (exactly) from the keyboard: focused, then Enter. */
async function follow(page: Page, name: string): Promise<void> {
  await page.getByRole('link', { name, exact: true }).first().focus();
  await page.keyboard.press('Enter');
}

describe.skipIf(skipBrowser)('the focus from page to page (Chromium)', () => {
  it('gives a heading of level 1 to the page of no such address and to that of no such queue', async () => {
    const page = await signIn(dashboard.browser, dashboard.server.url, dashboard.key);
    await go(page, '#/no/such/page');
    await page.getByRole('link', { name: 'Back to the queues' }).waitFor();
    await expect(headings(page)).resolves.toEqual(['No such page']);

    await go(page, '#/queues/absent');
    await shownAfterPolls(page, page.getByText('No queue named absent that this key can see.'));
    await expect(headings(page)).resolves.toEqual(['No such queue']);
    await page.context().close();
  });

  it('gives the focus to the heading of each page a link or Back opens', async () => {
    await api('POST', '/v1/queues/walk/jobs', { id: 'w1' });
    const page = await signIn(dashboard.browser, dashboard.server.url, dashboard.key);
    await follow(page, 'walk');
    await expect.poll(() => focused(page)).toBe('h1 Queue walk');
    // The next Tab goes on from the heading, to the queue's first button.
    await page.getByRole('button', { name: 'Pause queue' }).waitFor();
    await page.keyboard.press('Tab');
    await expect(focused(page)).resolves.toBe('button Pause queue');

    await shownAfterPolls(page, page.getByRole('link', { name: 'w1', exact: true }));
    await follow(page, 'w1');
    await expect.poll(() => focused(page)).toBe('h1 Job w1');
    // The breadcrumb back to the queue.
    await follow(page, 'walk');
    await expect.poll(() => focused(page)).toBe('h1 Queue walk');
    await follow(page, 'Dead letters');
    await expect.poll(() => focused(page)).toBe('h1 Dead letters of walk');

    await page.goBack();
    await expect.poll(() => page.evaluate(() => location.hash)).toBe('#/queues/walk');
    await expect.poll(() => focused(page)).toBe('h1 Queue walk');

    // A link that stays where it is (the header's) gives the focus away too.
    await follow(page, 'Queues');
    await expect.poll(() => focused(page)).toBe('h1 Queues');

    await go(page, '#/no/such/page');
    await expect.poll(() => focused(page)).toBe('h1 No such page');
    // A queue page found to have no queue: the heading said so takes over the focus.
    await go(page, '#/queues/absent');
    await shownAfterPolls(page, page.getByText('No queue named absent that this key can see.'));
    await expect.poll(() => focused(page)).toBe('h1 No such queue');
    await page.context().close();
  });

  it('leaves the focus where it is on the first page shown and as a page reads anew', async () => {
    const page = await signIn(dashboard.browser, dashboard.server.url, dashboard.key, {
      hash: '#/queues/kept',
    });
    await page.getByRole('heading', { name: 'Queue kept', exact: true }).waitFor();
    await page.getByRole('button', { name: 'Pause queue' }).waitFor();
    await expect(focused(page)).resolves.toBe('body');

    await openQueuePage(page, 'walk');
    await expect.poll(() => focused(page)).toBe('h1 Queue walk');
    await page.getByRole('link', { name: 'Overview', exact: true }).focus();
    for (let reading = 0; reading < 3; reading += 1) await nextPoll(page);
    await expect
      .poll(() => page.getByRole('button', { name: 'Pause queue' }).count(), POLLED)
      .toBe(1);
    await expect(focused(page)).resolves.toBe('a Overview');
    await page.context().close();
  });
});
