/// <reference lib="dom" />
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/broker/index.js';
import type { RunningServer } from '../../src/server/index.js';
import {
  ADMIN_KEY,
  artifactPath,
  callApi,
  launchChromium,
  nextPoll,
  openQueuePage,
  signIn,
  skipBrowser,
  startDashboardServer,
} from './browser.js';

/**
 * The charts' labels at the canvas's edges: a time label centred under a tick at the plot's left
 * or right side must still fit, at the widest time of day and date, on a desktop and on phones.
 */

const QUEUE = 'edges';
/** 00:58 on 27 December 2026 in the page's time zone (UTC): wide figures in a date and a time. */
const START = Date.UTC(2026, 11, 27, 0, 58, 0);
/**
 * The readings' times (s after START): a first tick on the plot's left side (a whole minute),
 * and spans from one reading apart (2 s) to the charts' whole window (10 minutes), the last
 * reading on a tick too.
 */
const READINGS_AT = [2, 4, 6, 10, 20, 30, 60, 120, 240, 600];
const SCREENS = [
  { name: 'desktop', viewport: { width: 1366, height: 900 } },
  { name: 'phone 390', viewport: { width: 390, height: 844 } },
  { name: 'phone 360', viewport: { width: 360, height: 740 } },
];

describe.skipIf(skipBrowser)('dashboard chart edges', () => {
  let clock: ManualClock;
  let server: RunningServer;
  let browser: Browser;
  const api = (method: string, path: string, body?: unknown) =>
    callApi(server.url, ADMIN_KEY, method, path, body);

  beforeAll(async () => {
    clock = new ManualClock(START);
    server = await startDashboardServer({
      name: 'chart-edges',
      keys: [{ name: 'ops', key: ADMIN_KEY, allow: [{ queues: '*', actions: ['admin'] }] }],
      clock,
    });
    browser = await launchChromium();
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await server?.close();
  });

  /** Ink in the 2 leftmost and 2 rightmost columns of each chart's canvas, top to bottom. */
  const inkAtEdges = (page: Page) =>
    page.evaluate(async () => {
      // The chart drawn after the reading: an effect after a frame, then uPlot's own commit.
      for (let frame = 0; frame < 3; frame += 1) {
        await new Promise((resolve) => requestAnimationFrame(() => setTimeout(resolve)));
      }
      return Array.from(document.querySelectorAll<HTMLCanvasElement>('.chart canvas')).map(
        (canvas) => {
          const context = canvas.getContext('2d') as CanvasRenderingContext2D;
          const ink = (x: number) => {
            const { data } = context.getImageData(x, 0, 2, canvas.height);
            let count = 0;
            for (let at = 3; at < data.length; at += 4) if ((data[at] ?? 0) > 0) count += 1;
            return count;
          };
          return { left: ink(0), right: ink(canvas.width - 2) };
        },
      );
    });

  it('keeps every axis label within the chart canvases at the widest times, on a desktop and on phones', async () => {
    const cut: string[] = [];
    for (const [index, screen] of SCREENS.entries()) {
      // Each screen its own queue, at 00:58 again a day after the one before (the queues' clock
      // never goes back).
      const start = START + index * 86_400_000;
      clock.set(start);
      const queue = `${QUEUE}-${index}`;
      await api('PUT', `/v1/queues/${queue}`, {});
      const page = await signIn(browser, server.url, ADMIN_KEY, {
        context: { viewport: screen.viewport, timezoneId: 'UTC' },
      });
      await page.clock.setSystemTime(start);
      await openQueuePage(page, queue);
      for (const [n, seconds] of READINGS_AT.entries()) {
        clock.set(start + seconds * 1000);
        // A job more at each reading: the Depth chart says when the page has drawn it.
        await api('POST', `/v1/queues/${queue}/jobs`, { id: `job-${n}` });
        await nextPoll(page);
        await page
          .locator(`.chart [aria-label^="Depth: latest Ready ${n + 1},"]`)
          .waitFor({ timeout: 10_000 });
        const charts = await inkAtEdges(page);
        expect(charts).toHaveLength(4);
        charts.forEach(({ left, right }, chart) => {
          if (left > 0 || right > 0) {
            cut.push(
              `${screen.name}, ${seconds} s, chart ${chart + 1}: ${left} left, ${right} right`,
            );
          }
        });
      }
      await page
        .locator('.charts-section')
        .screenshot({ path: artifactPath(`chart-edges-${index}.png`) });
      await page.context().close();
    }
    expect(cut).toEqual([]);
  }, 120_000);
});
