import { describe, expect, it, vi } from 'vitest';
import { type Clock, EngineBroker } from '../../src/broker/index.js';
import { MemoryEngine } from '../../src/engine/memory/memory-engine.js';

// R25: a schedule that fails in the scheduler's loop is held back for intervalMs, then tried
// again. A clock set back must not stretch that hold by as much as it went back: as a quiet
// schedule's times are computed again when the clock goes back, a hold taken at a time now
// ahead of the clock ends.

const T0 = Date.UTC(2026, 11, 7, 12);
const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

/**
 * A wall clock that can be set back, as a machine's is, while its sleeps last what they say:
 * they count the time that passed (`advance`), not where the wall clock reads.
 */
class SteppingClock implements Clock {
  private passed = 0;
  private sleepers: { until: number; resolve: () => void }[] = [];

  constructor(private time: number) {}

  now(): number {
    return this.time;
  }

  /** Time passes: the wall clock moves on with it, and the sleeps it ends wake. */
  advance(ms: number): void {
    this.time += ms;
    this.passed += ms;
    const due = this.sleepers.filter((sleeper) => sleeper.until <= this.passed);
    this.sleepers = this.sleepers.filter((sleeper) => sleeper.until > this.passed);
    for (const sleeper of due) sleeper.resolve();
  }

  /** The wall clock is set back; no time passes. */
  setBack(ms: number): void {
    this.time -= ms;
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      if (signal?.aborted || ms <= 0) return resolve();
      const sleeper = { until: this.passed + ms, resolve };
      this.sleepers.push(sleeper);
      signal?.addEventListener(
        'abort',
        () => {
          this.sleepers = this.sleepers.filter((other) => other !== sleeper);
          resolve();
        },
        { once: true },
      );
    });
  }

  get waiting(): number {
    return this.sleepers.length;
  }
}

describe('R25 a failing schedule held back by the loop, and a clock set back', () => {
  it('R25 is tried again an interval after the clock went back, not once the clock is back where it failed', async () => {
    const clock = new SteppingClock(T0);
    const engine = new MemoryEngine();
    const broker = new EngineBroker(engine, { clock });
    const scheduler = broker.scheduler({ intervalMs: 10_000 });
    try {
      const queue = await broker.queue('odd');
      // As a process whose time zone data knows the zone (or another version) stored it.
      await engine.putSchedule({
        queue: 'odd',
        name: 'a-zone',
        cron: '* * * * * *',
        every: undefined,
        timezone: 'Nowhere/Land',
        payload: undefined,
        createdAt: T0,
        lastAt: null,
      });
      const onError = vi.fn();
      scheduler.start(onError);
      await vi.waitFor(() => expect(onError).toHaveBeenCalledTimes(1));
      await vi.waitFor(() => expect(clock.waiting).toBe(1));
      // An hour on, it fails again: held for 10 s, until 13:00:10.
      clock.advance(HOUR);
      await vi.waitFor(() => expect(onError).toHaveBeenCalledTimes(2));
      await vi.waitFor(() => expect(clock.waiting).toBe(1));
      // The clock goes back half an hour, and the schedule is set right there.
      clock.setBack(30 * MINUTE);
      await queue.schedule('a-zone', '* * * * * *', { timezone: 'Europe/Paris' });
      // The interval passes: 12:30:10, half an hour before the hold taken at 13:00 would end.
      clock.advance(10_000);
      await vi.waitFor(async () =>
        expect((await queue.inspect()).ready).toEqual(['a-zone@2026-12-07T12:30:10.000Z']),
      );
      expect(onError).toHaveBeenCalledTimes(2);
    } finally {
      await scheduler.stop();
      await broker.close();
    }
  });
});
