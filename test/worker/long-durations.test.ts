import { afterEach, expect, it, vi } from 'vitest';
import { MAX_TIMER_MS } from '../../src/broker/clock.js';
import { open } from '../../src/index.js';
import { type JobContext, silentLogger, work } from '../../src/worker/index.js';

/**
 * A worker's durations past the longest Node timer (2^31 − 1 ms, about 24.8 days: a longer
 * timer fires at once) on its default clock, whose sleeps end at that timer and whose callers
 * look at the time and sleep again: a lease, a wait and a close's grace last what they say.
 */
afterEach(() => {
  vi.useRealTimers();
});

const LONG = 3_000_000_000;

it('keeps a lease, a wait and a close grace longer than the longest timer for their whole length', async () => {
  vi.useFakeTimers({ now: 1_000_000 });
  const broker = await open('memory:');
  try {
    const queue = await broker.queue('long', { visibility: 4_000_000_000 });
    await queue.publish({ id: 'a' });
    let context: JobContext | undefined;
    let release: () => void = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const worker = await work(
      queue,
      async (_job, ctx) => {
        context = ctx;
        await Promise.race([
          held,
          new Promise((resolve) => ctx.signal.addEventListener('abort', resolve)),
        ]);
      },
      { wait: LONG, logger: silentLogger },
    );
    await vi.advanceTimersByTimeAsync(0);
    expect(context?.signal.aborted).toBe(false);
    // Past the longest timer: the lease is kept, not renewed early nor lost.
    await vi.advanceTimersByTimeAsync(MAX_TIMER_MS + 1000);
    expect(context?.signal.aborted).toBe(false);
    expect(await queue.stats()).toMatchObject({ active: 1, deliveries: 1, extensions: 0 });
    // Renewed once two thirds of it passed (2.67e9 ms).
    await vi.advanceTimersByTimeAsync(2_700_000_000 - MAX_TIMER_MS - 1000);
    expect(await queue.stats()).toMatchObject({ active: 1, deliveries: 1, extensions: 1 });
    // A close whose grace is longer than a timer: the job is still its own past the timer.
    const closing = worker.close({ timeout: LONG });
    await vi.advanceTimersByTimeAsync(MAX_TIMER_MS + 1000);
    expect(worker.state).toBe('closing');
    expect(context?.signal.aborted).toBe(false);
    await vi.advanceTimersByTimeAsync(LONG - MAX_TIMER_MS);
    await closing;
    expect(worker.state).toBe('closed');
    expect(context?.signal.aborted).toBe(true);
    expect(await queue.stats()).toMatchObject({ ready: 1, active: 0, deliveries: 1 });
    release();
  } finally {
    await broker.close();
  }
});
