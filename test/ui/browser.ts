import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  type Browser,
  type BrowserContextOptions,
  chromium,
  type Locator,
  type Page,
} from 'playwright-core';
import { afterAll, beforeAll, expect } from 'vitest';
import type { Clock } from '../../src/broker/index.js';
import {
  type ApiKeyConfig,
  loadConfig,
  type RunningServer,
  startServer,
} from '../../src/server/index.js';

/** Debian's Chromium (apt-get install chromium); never a downloaded browser. */
export const CHROMIUM = '/usr/bin/chromium';

export const hasChromium = existsSync(CHROMIUM);

/** Under CI the browser tests must run: a missing Chromium fails them instead of skipping. */
export const skipBrowser = !hasChromium && process.env.CI !== 'true';

export function launchChromium(): Promise<Browser> {
  if (!hasChromium) {
    throw new Error(`${CHROMIUM} is missing: apt-get install -y chromium (.ci/run does)`);
  }
  return chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}

/** Screenshots land here (gitignored); LEASEQ_DOC_IMAGES=1 also refreshes docs/images. */
export const ARTIFACTS = new URL('../../test-artifacts/dashboard/', import.meta.url);
export const DOC_IMAGES =
  process.env.LEASEQ_DOC_IMAGES === '1'
    ? new URL('../../docs/images/', import.meta.url)
    : undefined;

export function artifactPath(name: string): string {
  mkdirSync(ARTIFACTS, { recursive: true });
  return new URL(name, ARTIFACTS).pathname;
}

/**
 * A server on 127.0.0.1 at a free port with the API `keys`, storing in SQLite in a directory of
 * its own (`leaseq-ui-<name>-…`); `flags` adds settings or overrides these, and `clock` is the
 * broker's (the queues' times the dashboard charts). Its `close()` also removes that directory.
 */
export async function startDashboardServer(options: {
  name: string;
  keys: ApiKeyConfig[];
  flags?: Record<string, string>;
  clock?: Clock;
}): Promise<RunningServer> {
  const dir = mkdtempSync(join(tmpdir(), `leaseq-ui-${options.name}-`));
  const removeDir = () => rmSync(dir, { recursive: true, force: true });
  let server: RunningServer;
  try {
    server = await startServer(
      loadConfig({
        flags: {
          port: '0',
          host: '127.0.0.1',
          storage: `sqlite:${join(dir, 'leaseq.db')}`,
          durability: 'os',
          logLevel: 'silent',
          receiptSecret: 'a-receipt-secret-of-32-characters-or-more',
          keys: JSON.stringify(options.keys),
          ...options.flags,
        },
      }),
      options.clock === undefined ? {} : { clock: options.clock },
    );
  } catch (error) {
    removeDir();
    throw error;
  }
  const stop = server.close;
  return {
    ...server,
    async close() {
      try {
        await stop();
      } finally {
        removeDir();
      }
    },
  };
}

/** A call of the API under a server's URL with `key`; the answer's body read loosely. */
export async function callApi(
  url: string,
  key: string,
  method: string,
  path: string,
  body?: unknown,
  // biome-ignore lint/suspicious/noExplicitAny: tests read answers loosely
): Promise<{ status: number; body: any }> {
  const response = await fetch(`${url}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${key}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: response.status, body: await response.json() };
}

/** The API key of the server `useAdminDashboard` starts: it may do everything to every queue. */
export const ADMIN_KEY = 'admin-key-0123456789';

/** The server, browser and key of `useAdminDashboard`, once its `beforeAll` has run. */
export interface AdminDashboard {
  readonly server: RunningServer;
  readonly browser: Browser;
  readonly key: string;
  /** A call of the server's API with the admin key (`callApi`). */
  api(method: string, path: string, body?: unknown): ReturnType<typeof callApi>;
}

/**
 * Registers, in the suite it is called in, a `beforeAll` that starts a server with one admin
 * key (`startDashboardServer` with `name` and `flags`), creates `queues` in their order (names,
 * made with the defaults; or names to the settings they are made with), then launches Chromium;
 * and an `afterAll` that closes the browser and the server, both even if one of them fails to.
 * Under `skipBrowser` it starts nothing. Read the server and browser from the answer's getters
 * once the `beforeAll` has run.
 */
export function useAdminDashboard(options: {
  name: string;
  queues?: readonly string[] | Readonly<Record<string, object>>;
  flags?: Record<string, string>;
}): AdminDashboard {
  let server: RunningServer | undefined;
  let browser: Browser | undefined;
  const started = <T>(value: T | undefined, what: string): T => {
    if (value === undefined) {
      throw new Error(
        `the ${what} of the dashboard ${options.name} is not started: read it in a test, after beforeAll (and not under skipBrowser)`,
      );
    }
    return value;
  };
  const dashboard: AdminDashboard = {
    get server() {
      return started(server, 'server');
    },
    get browser() {
      return started(browser, 'browser');
    },
    key: ADMIN_KEY,
    api: (method, path, body) =>
      callApi(started(server, 'server').url, ADMIN_KEY, method, path, body),
  };

  beforeAll(async () => {
    if (skipBrowser) return;
    server = await startDashboardServer({
      name: options.name,
      keys: [{ name: 'ops', key: ADMIN_KEY, allow: [{ queues: '*', actions: ['admin'] }] }],
      ...(options.flags === undefined ? {} : { flags: options.flags }),
    });
    const queues: [string, object][] = Array.isArray(options.queues)
      ? options.queues.map((name) => [name, {}])
      : Object.entries(options.queues ?? {});
    for (const [name, settings] of queues) {
      const made = await dashboard.api('PUT', `/v1/queues/${encodeURIComponent(name)}`, settings);
      if (made.status >= 300) {
        throw new Error(
          `making the queue ${name} answered ${made.status}: ${JSON.stringify(made.body)}`,
        );
      }
    }
    browser = await launchChromium();
  }, 60_000);

  afterAll(async () => {
    const failures: unknown[] = [];
    for (const close of [() => browser?.close(), () => server?.close()]) {
      try {
        await close();
      } catch (error) {
        failures.push(error);
      }
    }
    browser = undefined;
    server = undefined;
    if (failures.length === 1) throw failures[0];
    if (failures.length > 1) {
      throw new AggregateError(failures, `closing the dashboard ${options.name} failed`);
    }
  });

  return dashboard;
}

/**
 * Opens the dashboard of the server at `url` in a new context (1366×900 unless `context` says
 * otherwise) at `hash`, and signs in with `key`. Resolves once signed in: at the overview
 * (the default) its heading is shown; elsewhere the page is the test's to wait for.
 */
export async function signIn(
  browser: Browser,
  url: string,
  key: string,
  options: { hash?: string; context?: BrowserContextOptions } = {},
): Promise<Page> {
  const context = await browser.newContext({
    viewport: { width: 1366, height: 900 },
    ...options.context,
  });
  // The page's timers and Date, faked: they run as the wall clock does until a test runs them
  // ahead (`nextPoll`).
  await context.clock.install();
  const page = await context.newPage();
  await page.goto(`${url}/ui/${options.hash ?? '#/'}`);
  await page.getByLabel('API key').fill(key);
  await page.getByRole('button', { name: 'Sign in' }).click();
  if (options.hash === undefined) await page.getByRole('heading', { name: 'Queues' }).waitFor();
  return page;
}

/** Opens `hash` in a page already signed in, as following a link to it would. */
export const go = (page: Page, hash: string) =>
  page.evaluate((to) => {
    window.location.hash = to;
  }, hash);

/** Opens `queue`'s page in a page already signed in, and waits for its heading. */
export async function openQueuePage(page: Page, queue: string): Promise<void> {
  await go(page, `#/queues/${encodeURIComponent(queue)}`);
  await page.getByRole('heading', { name: `Queue ${queue}`, exact: true }).waitFor();
}

/** How often the dashboard reads what a page shows (INTERVAL_MS in src/server/ui/web/main.tsx). */
export const POLL_MS = 2000;

/**
 * Runs the clock of a page `signIn` opened one interval ahead at once: the page polls now, as it
 * would have 2 s later, reading every topic that has no read on its way (the page's countdowns
 * and times move on by as much).
 */
export const nextPoll = (page: Page, ms = POLL_MS) => page.clock.runFor(ms);

/**
 * `read` run after a poll brought forward (`nextPoll`): for `expect.poll`, so that each check
 * comes after a reading of its own rather than waiting out the interval.
 */
export const afterPoll =
  <T>(page: Page, read: () => T | Promise<T>) =>
  async (): Promise<T> => {
    await nextPoll(page);
    return read();
  };

/** How long `expect.poll(afterPoll(…))` looks, and how often: a poll each time. */
export const POLLED = { timeout: 10_000, interval: 100 } as const;

/** Waits for `locator` to be shown, polling (`nextPoll`) before each look. */
export async function shownAfterPolls(
  page: Page,
  locator: Locator,
  options: { timeout?: number } = {},
): Promise<void> {
  await expect
    .poll(
      afterPoll(page, () => locator.isVisible()),
      { ...POLLED, ...options },
    )
    .toBe(true);
}

/**
 * The element that has the focus, as its tag and its name (its label, else its text): `button
 * Redrive all`; `body` when no element has it.
 */
export const focused = (page: Page) =>
  page.evaluate(() => {
    const element = document.activeElement;
    if (element === null || element === document.body) return 'body';
    const name = element.getAttribute('aria-label') ?? element.textContent?.trim();
    return `${element.tagName.toLowerCase()} ${name}`;
  });

/**
 * Publishes `ids` to `queue` and rejects each (the queue's maxDeliveries set to 1), so that they
 * die in that order, through `api` (an AdminDashboard's).
 */
export async function killJobs(
  api: AdminDashboard['api'],
  queue: string,
  ids: readonly string[],
): Promise<void> {
  await api('PUT', `/v1/queues/${queue}`, { maxDeliveries: 1 });
  await api('POST', `/v1/queues/${queue}/jobs/batch`, { jobs: ids.map((id) => ({ id })) });
  const taken = (await api('POST', `/v1/queues/${queue}/receive`, { max: ids.length })).body;
  for (const delivery of taken.deliveries) {
    await api('POST', `/v1/queues/${queue}/nack`, { receipt: delivery.receipt, requeue: false });
  }
}
