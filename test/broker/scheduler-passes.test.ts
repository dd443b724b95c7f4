import { describe, expect, it, vi } from 'vitest';
import { EngineBroker, ManualClock } from '../../src/broker/index.js';
import { MemoryEngine } from '../../src/engine/memory/memory-engine.js';

const T0 = Date.UTC(2026, 10, 30, 8, 30);

/**
 * Waits for the loop asleep on the clock: its pass, if the clock woke it, done and its next sleep
 * computed. Moved before that, the clock would be at or past the time the loop computes its sleep
 * from, and the loop would sleep from there, later than the test means.
 */
const parked = (clock: ManualClock) => vi.waitFor(() => expect(clock.waiting).toBe(1));

describe('the scheduler loop', () => {
  it('R25 schedules at many phases do not each bring a pass: passes are 100 ms apart at least, and none is missed', async () => {
    const engine = new MemoryEngine();
    const clock = new ManualClock(T0);
    const broker = new EngineBroker(engine, { clock });
    const queue = await broker.queue('phases');
    // Three schedules of every second, 10 ms apart in phase.
    for (let index = 0; index < 3; index++) {
      clock.set(T0 + index * 10);
      await queue.schedule(`s${index}`, 1000);
    }
    const list = vi.spyOn(engine, 'listSchedules');
    const scheduler = broker.scheduler({ intervalMs: 1000 });
    scheduler.start();
    try {
      await parked(clock);
      const passes = () => list.mock.calls.length;
      const start = passes();
      // Their occurrences at +1000, +1010 and +1020: one pass at the first, then 100 ms on.
      for (let at = 1000; at <= 1090; at += 10) {
        clock.set(T0 + at);
        await parked(clock);
      }
      expect(passes() - start).toBe(1);
      clock.set(T0 + 1100);
      await vi.waitFor(async () => expect((await queue.stats()).ready).toBe(3));
      expect(passes() - start).toBe(2);
    } finally {
      await scheduler.stop();
      await broker.close();
    }
  });
});
