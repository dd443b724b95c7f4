import { afterEach, describe, expect, it, vi } from 'vitest';
import { MAX_TIMER_MS } from '../../src/broker/clock.js';
import { RemoteBroker } from '../../src/client/index.js';
import { setLongTimeout } from '../../src/client/long-timeout.js';
import { Prefetch } from '../../src/client/prefetch.js';
import type { StreamLink } from '../../src/client/stream-link.js';
import { StorageUnavailableError, ValidationError } from '../../src/core/index.js';
import { open } from '../../src/index.js';
import type { ServerFrame } from '../../src/wire/index.js';
import { collectWarnings } from '../process-warnings.js';
import { startTestServer } from '../server/helpers.js';

/**
 * Durations past the longest Node timer (2^31 − 1 ms, about 24.8 days: a longer timer fires at
 * once): a wait or a timeout that may be that long is timed in parts, one that may not is
 * refused when the client is opened.
 */
const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  vi.useRealTimers();
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const LONG = 3_000_000_000;

/** Whether `promise` has settled, looked at after the pending callbacks ran. */
async function settled(promise: Promise<unknown>): Promise<boolean> {
  let done = false;
  promise.then(
    () => {
      done = true;
    },
    () => {
      done = true;
    },
  );
  await vi.advanceTimersByTimeAsync(0);
  return done;
}

describe('a timer of any length', () => {
  it('fires once its whole time has passed, not before', async () => {
    vi.useFakeTimers({ now: 1_000_000 });
    let fired = 0;
    setLongTimeout(() => {
      fired += 1;
    }, LONG);
    await vi.advanceTimersByTimeAsync(MAX_TIMER_MS + 1);
    expect(fired).toBe(0);
    await vi.advanceTimersByTimeAsync(LONG - MAX_TIMER_MS - 2);
    expect(fired).toBe(0);
    await vi.advanceTimersByTimeAsync(1);
    expect(fired).toBe(1);
    await vi.advanceTimersByTimeAsync(10 * MAX_TIMER_MS);
    expect(fired).toBe(1);
  });

  it('of Infinity never fires, and one cleared in a later part does not fire either', async () => {
    vi.useFakeTimers({ now: 1_000_000 });
    let fired = 0;
    setLongTimeout(() => {
      fired += 1;
    }, Number.POSITIVE_INFINITY);
    const cleared = setLongTimeout(() => {
      fired += 1;
    }, LONG);
    await vi.advanceTimersByTimeAsync(MAX_TIMER_MS + 1);
    cleared.clear();
    await vi.advanceTimersByTimeAsync(5 * MAX_TIMER_MS);
    expect(fired).toBe(0);
  });
});

describe('prefetchIdleMs past the longest timer', () => {
  it.each([LONG, Number.MAX_SAFE_INTEGER])(
    'is refused by open with a ValidationError naming the option and the limit (%d)',
    async (value) => {
      const refused = await open('http://127.0.0.1:9', { prefetchIdleMs: value }).then(
        () => undefined,
        (error: unknown) => error,
      );
      expect(refused).toBeInstanceOf(ValidationError);
      expect((refused as ValidationError).issues).toEqual([
        `prefetchIdleMs must be at most ${MAX_TIMER_MS} ms (the longest a timer waits, about 24.8 days), got ${value}`,
      ]);
      expect(() => new RemoteBroker('http://127.0.0.1:9', { prefetchIdleMs: value })).toThrow(
        ValidationError,
      );
    },
  );

  it('is taken up to the limit', async () => {
    const client = new RemoteBroker('http://127.0.0.1:9', { prefetchIdleMs: MAX_TIMER_MS });
    await client.close();
  });
});

describe('a timeoutMs past the longest timer over plain HTTP', () => {
  /** A fetch that answers `GET /v1/queues` after `ms`, or never; it ends at its signal. */
  function slowFetch(ms: number | undefined): typeof fetch {
    return ((_url: string, init: RequestInit) =>
      new Promise<Response>((resolve, reject) => {
        const timer =
          ms === undefined
            ? undefined
            : setTimeout(() => resolve(Response.json({ queues: [] })), ms);
        init.signal?.addEventListener('abort', () => {
          clearTimeout(timer);
          reject(new DOMException('aborted', 'AbortError'));
        });
      })) as typeof fetch;
  }

  it('lets a call wait for its answer rather than time it out at once', async () => {
    vi.useFakeTimers({ now: 1_000_000 });
    const client = new RemoteBroker('http://127.0.0.1:9', {
      fetch: slowFetch(5000),
      timeoutMs: LONG,
    });
    cleanups.push(() => client.close());
    const listed = client.listQueues();
    expect(await settled(listed)).toBe(false);
    await vi.advanceTimersByTimeAsync(5000);
    expect(await listed).toEqual([]);
  });

  it('times a call out when that long has passed, not at the longest timer', async () => {
    vi.useFakeTimers({ now: 1_000_000 });
    const client = new RemoteBroker('http://127.0.0.1:9', {
      fetch: slowFetch(undefined),
      timeoutMs: LONG,
    });
    cleanups.push(() => client.close());
    const listed = client.listQueues();
    listed.catch(() => {});
    await vi.advanceTimersByTimeAsync(MAX_TIMER_MS + 1000);
    expect(await settled(listed)).toBe(false);
    await vi.advanceTimersByTimeAsync(LONG - MAX_TIMER_MS - 1000);
    await expect(listed).rejects.toBeInstanceOf(StorageUnavailableError);
  });
});

describe('a timeoutMs past the longest timer over the stream', () => {
  it.each([LONG, Number.MAX_SAFE_INTEGER])(
    'connects and answers calls, with no timer overflowing (%d)',
    async (timeoutMs) => {
      const warnings = collectWarnings();
      const server = await startTestServer();
      cleanups.push(() => server.close());
      const client = new RemoteBroker(server.baseUrl, { transport: 'stream', timeoutMs });
      cleanups.push(() => client.close());
      const queue = client.handle('jobs');
      await server.broker.queue('jobs');
      await queue.publish({ id: 'a' });
      const [delivery] = await queue.receive({ wait: 2000 });
      expect(delivery?.id).toBe('a');
      expect(await queue.ack(delivery?.token ?? 0)).toBe(true);
      await client.close();
      await new Promise((resolve) => setImmediate(resolve));
      expect(warnings.stop().filter((line) => line.startsWith('TimeoutOverflowWarning'))).toEqual(
        [],
      );
    },
  );
});

describe('a stream receive waiting past the longest timer', () => {
  /** A link that answers every request at once; pushes come from the test. */
  function fakeLink(): StreamLink {
    return {
      knownLimits: async () => ({ maxPrefetch: 100 }),
      connected: true,
      forget: () => {},
      async request(frame: { type: string; prefetch?: number }): Promise<ServerFrame> {
        if (frame.type === 'unsubscribe') return { type: 'unsubscribed', id: 1, subscription: 1 };
        return { type: 'subscribed', id: 1, subscription: 1, prefetch: frame.prefetch ?? 1 };
      },
    } as unknown as StreamLink;
  }

  /** Under fake timers: a subscription whose last looks (reserves) are counted, finding none. */
  function countingPrefetch() {
    vi.useFakeTimers({ now: 1_000_000 });
    let looks = 0;
    const prefetch = new Prefetch(fakeLink(), {
      queue: 'jobs',
      visibility: undefined,
      session: undefined,
      idleMs: 2000,
      release: async () => {},
      reserve: async () => {
        looks += 1;
        return [];
      },
    });
    return { prefetch, looks: () => looks };
  }

  it.each([LONG, Number.MAX_SAFE_INTEGER])(
    'still waits after it, and takes what is pushed then (wait %d)',
    async (wait) => {
      const { prefetch, looks } = countingPrefetch();
      const taking = prefetch.take(1, wait, undefined);
      await vi.advanceTimersByTimeAsync(MAX_TIMER_MS + 1000);
      expect(await settled(taking)).toBe(false);
      expect(looks()).toBe(0);
      const now = Date.now();
      prefetch.push({
        type: 'deliveries',
        subscription: 1,
        now,
        deliveries: [
          {
            receipt: 'receipt-a',
            token: 1,
            id: 'a',
            payload: null,
            deadline: now + 30_000,
            deliveryCount: 1,
            redelivered: false,
          },
        ],
      });
      expect((await taking).map((delivery) => delivery.id)).toEqual(['a']);
    },
  );

  it('ends at its time with a last look', async () => {
    const { prefetch, looks } = countingPrefetch();
    const taking = prefetch.take(1, LONG, undefined);
    await vi.advanceTimersByTimeAsync(LONG - 1);
    expect(await settled(taking)).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(await taking).toEqual([]);
    expect(looks()).toBe(1);
  });
});
