import { describe, expect, it, vi } from 'vitest';
import { EngineBroker, ManualClock } from '../../src/broker/index.js';
import { ConflictError, ValidationError } from '../../src/core/index.js';
import { openEngine } from '../../src/engine/index.js';

describe('R25 a schedule removed by another caller as it is set', () => {
  it('R25 answers a typed conflict naming the schedule, and leaves no schedule behind', async () => {
    const engine = await openEngine('memory:');
    const broker = new EngineBroker(engine, { clock: new ManualClock(Date.UTC(2026, 11, 4)) });
    try {
      const queue = await broker.queue('reports');
      // Another caller removes it between this call's write and its read of what was stored.
      const put = engine.putSchedule.bind(engine);
      vi.spyOn(engine, 'putSchedule').mockImplementationOnce(async (schedule) => {
        await put(schedule);
        await engine.removeSchedule(schedule.queue, schedule.name);
      });
      const error = await queue.schedule('nightly', '0 2 * * *').catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(ConflictError);
      expect(error).toMatchObject({ code: 'CONFLICT' });
      expect((error as Error).message).toMatch(/schedule nightly of queue reports was removed/);
      expect(await queue.schedules()).toEqual([]);
      // Set again, it is stored as usual.
      expect(await queue.schedule('nightly', '0 2 * * *')).toMatchObject({ name: 'nightly' });
    } finally {
      await broker.close();
    }
  });
});

describe('R25 a queue deleted while a scheduler pass publishes its occurrence', () => {
  it.each(['memory:', 'sqlite::memory:'])(
    'R25 on %s the queue stays deleted and the pass reports nothing',
    async (url) => {
      const clock = new ManualClock(Date.UTC(2026, 11, 4));
      const engine = await openEngine(url, { clockMode: 'follow' });
      const broker = new EngineBroker(engine, { clock });
      try {
        const queue = await broker.queue('pulses');
        await queue.schedule('pulse', 1_000);
        clock.advance(1_000);
        // The queue is deleted after the pass read the schedule, before it published.
        const advance = engine.advanceSchedule.bind(engine);
        vi.spyOn(engine, 'advanceSchedule').mockImplementationOnce(async (...args) => {
          const moved = await advance(...args);
          await broker.deleteQueue('pulses');
          return moved;
        });
        const transaction = engine.transaction?.bind(engine);
        if (transaction !== undefined) {
          vi.spyOn(engine, 'transaction').mockImplementationOnce(async (work) => {
            await broker.deleteQueue('pulses');
            return transaction(work);
          });
        }
        expect(await broker.scheduler().runOnce()).toEqual([]);
        expect(await broker.listQueues()).toEqual([]);
      } finally {
        await broker.close();
      }
    },
  );
});

describe('scheduler options', () => {
  it('an interval that is not a whole number of ms ≥ 1 is a ValidationError', async () => {
    const broker = new EngineBroker(await openEngine('memory:'));
    try {
      for (const intervalMs of [0, -5, Number.NaN, 0.5, Number.POSITIVE_INFINITY]) {
        expect(() => broker.scheduler({ intervalMs })).toThrow(ValidationError);
      }
      expect(() => broker.scheduler('fast' as never)).toThrow(ValidationError);
      expect(broker.scheduler({ intervalMs: 1 })).toBeDefined();
    } finally {
      await broker.close();
    }
  });
});
