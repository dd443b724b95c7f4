import { describe, expect, it, vi } from 'vitest';
import { EngineBroker, ManualClock } from '../../src/broker/index.js';
import { ConflictError } from '../../src/core/index.js';
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
