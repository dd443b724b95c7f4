import { afterAll, describe, expect, it, vi } from 'vitest';
import { EngineBroker, ManualClock } from '../../src/broker/index.js';
import { ValidationError } from '../../src/core/index.js';
import { engineFactories } from '../conformance/engines.js';
import { inOwnPostgresDatabase } from '../engine/postgres-scratch.js';
import { gathering } from '../process-failures.js';

// On every engine; on PostgreSQL in a database of the file's own (a pass lists every schedule of
// the storage: in the shared one, another file's passes would publish these schedules).
const factories = engineFactories().map((factory) => inOwnPostgresDatabase(factory, 'sched_loop'));
afterAll(async () => {
  await Promise.all(factories.map((factory) => factory.cleanup()));
});

const T0 = Date.UTC(2026, 10, 30, 8, 30);

/** Waits for the loop asleep on the clock, its pass done. */
const parked = (clock: ManualClock) => vi.waitFor(() => expect(clock.waiting).toBe(1));

describe.each(factories)('R25 the scheduler loop, on $name', (factory) => {
  it('R25 ends when its broker is closed: no pass after it, nothing reported, and stop() resolves', async () => {
    const clock = new ManualClock(T0);
    const broker = new EngineBroker(await factory.open(), { clock });
    const queue = await broker.queue('closing');
    await queue.schedule('tick', 1000);
    const scheduler = broker.scheduler({ intervalMs: 1000 });
    const onError = vi.fn();
    scheduler.start(onError);
    await parked(clock);
    clock.advance(1000);
    await parked(clock);
    expect((await queue.stats()).ready).toBe(1);
    await broker.close();
    // Asleep on the clock no more: a sleep that kept the process alive, then a pass that failed
    // with CLOSED at every interval, for ever.
    await vi.waitFor(() => expect(clock.waiting).toBe(0));
    for (let step = 0; step < 3; step++) {
      clock.advance(1000);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(clock.waiting).toBe(0);
    expect(onError).not.toHaveBeenCalled();
    await expect(scheduler.stop()).resolves.toBeUndefined();
  });

  it('R25 does not start over a closed broker', async () => {
    const clock = new ManualClock(T0);
    const broker = new EngineBroker(await factory.open(), { clock });
    const scheduler = broker.scheduler();
    await broker.close();
    const onError = vi.fn();
    scheduler.start(onError);
    await scheduler.stop();
    expect(clock.waiting).toBe(0);
    expect(onError).not.toHaveBeenCalled();
  });

  it('R25 goes on when onError throws: the other schedules still publish at each occurrence', async () => {
    await gathering(async (seen) => {
      const clock = new ManualClock(T0);
      const broker = new EngineBroker(await factory.open(), { clock });
      const full = await broker.queue('full', { maxLength: 1 });
      const other = await broker.queue('other');
      await full.publish({ id: 'filler' });
      await full.schedule('tick', 1000);
      await other.schedule('tick', 1000);
      const scheduler = broker.scheduler({ intervalMs: 1000 });
      const onError = vi.fn(() => {
        throw new Error('the logger broke');
      });
      scheduler.start(onError);
      try {
        await parked(clock);
        for (let second = 1; second <= 3; second++) {
          clock.set(T0 + second * 1000);
          await vi.waitFor(async () => expect((await other.stats()).ready).toBe(second));
          await parked(clock);
        }
        expect(onError).toHaveBeenCalledTimes(3);
        expect(onError.mock.calls[0]).toEqual([
          expect.objectContaining({ code: 'QUEUE_FULL' }),
          { queue: 'full', name: 'tick' },
        ]);
      } finally {
        await scheduler.stop();
        await broker.deleteQueue('full');
        await broker.deleteQueue('other');
        await broker.close();
      }
      expect(seen.unhandled).toEqual([]);
      expect(seen.uncaught).toEqual([]);
    });
  });

  it('R25 refuses an onError that is not a function with a ValidationError, and runs no loop', async () => {
    const clock = new ManualClock(T0);
    const broker = new EngineBroker(await factory.open(), { clock });
    const scheduler = broker.scheduler();
    try {
      expect(() => scheduler.start('log' as never)).toThrow(ValidationError);
      expect(() => scheduler.start(null as never)).toThrow(/onError must be a function/);
      await new Promise((resolve) => setTimeout(resolve, 20));
      expect(clock.waiting).toBe(0);
    } finally {
      await scheduler.stop();
      await broker.close();
    }
  });
});
