import { describe, expect, it } from 'vitest';
import { ClockError } from '../../src/core/index.js';
import type { QueueHandle } from '../../src/engine/index.js';
import { expectRejection, view } from './assertions.js';
import { useConformanceEngines } from './engines.js';
import { describeEngines } from './suite.js';

const engines = await useConformanceEngines();

/** Everything a queue shows without taking time, plus its counters at its own clock. */
async function everything(q: QueueHandle) {
  const clock = await q.queueTime();
  return {
    clock,
    options: await q.options(),
    view: await q.inspect(),
    deadLetters: await q.deadLetters(),
    jobs: await Promise.all(['a', 'b', 'c', 'd'].map((id) => q.job(id))),
    nextEventAt: await q.nextEventAt(),
    stats: await q.stats(clock),
  };
}

describeEngines(engines, (h) => {
  const durable = h.capabilities?.durable !== false;
  const title = durable
    ? 'durable engines: close and reopen'
    : `durable engines: close and reopen — skipped: ${h.name} is not durable (capabilities.durable is false)`;
  (durable ? describe : describe.skip)(title, () => {
    it('R5 R6 state, clock, options and the token counter survive a restart; tokens are never reused', async () => {
      const name = h.queueName('restart');
      const options = { visibility: 5, maxDeliveries: 3, dedupWindow: 50 };
      const q = await h.engine().queue(name, options);
      await q.publishBatch(0, [
        { id: 'a', payload: { n: 1 } },
        { id: 'b', payload: 'B' },
        { id: 'c' },
        { id: 'd', delay: 100 },
      ]);
      await q.reserve(1, { max: 2 }); // 1 a, 2 b: deadline 6
      await q.reserve(2); // 3 c
      expect(await q.ack(2, 3)).toBe(true); // the largest token issued is now on no job
      expect(await q.nack(2, 2, { requeue: false, reason: 'broken' })).toBe(true);
      const before = await everything(q);
      expect(before.view).toEqual(
        view(2, {
          delayed: [{ id: 'd', availableAt: 100 }],
          active: [{ token: 1, id: 'a', deadline: 6, deliveryCount: 1 }],
          dead: [{ id: 'b', reason: 'broken', deliveryCount: 1 }],
        }),
      );

      await h.reopen();
      const again = await h.engine().queue(name);
      expect(await everything(again)).toEqual(before);
      expect((await h.engine().listQueues()).filter((info) => info.name === name)).toEqual([
        { name, options: before.options },
      ]);
      await h.engine().queue(name, options);

      const error = await expectRejection(() => again.ack(1, 1), ClockError, 'INVALID_CLOCK');
      expect(error.queueTime).toBe(2);
      expect(await again.publish(3, { id: 'c' })).toEqual({ id: 'c', duplicate: true });
      await again.publish(3, { id: 'e' });
      expect(await again.reserve(3)).toEqual([
        {
          token: 4,
          id: 'e',
          payload: undefined,
          deadline: 8,
          deliveryCount: 1,
          redelivered: false,
        },
      ]);
      expect(await again.ack(4, 1)).toBe(true);

      await h.reopen();
      const third = await h.engine().queue(name);
      expect(await third.redrive(5)).toBe(1);
      expect(await third.reserve(5)).toEqual([
        { token: 5, id: 'b', payload: 'B', deadline: 10, deliveryCount: 1, redelivered: false },
      ]);
    });

    it('R3 R12 a lease that ran out while the engine was closed is reclaimed by the next operation', async () => {
      const name = h.queueName('expired');
      const q = await h.engine().queue(name, { visibility: 5 });
      await q.publishBatch(0, [{ id: 'a' }, { id: 'b' }]);
      await q.reserve(0);
      await h.reopen();
      const again = await h.engine().queue(name);
      expect(await again.ack(10, 1)).toBe(false);
      expect(await again.inspect()).toEqual(view(10, { ready: ['a', 'b'] }));
      expect(await again.reserve(10)).toEqual([
        {
          token: 2,
          id: 'a',
          payload: undefined,
          deadline: 15,
          deliveryCount: 2,
          redelivered: true,
        },
      ]);
    });

    it('R6 every queue keeps its own token counter across a restart', async () => {
      const names = [h.queueName('tokens'), h.queueName('tokens')];
      for (const [index, name] of names.entries()) {
        const q = await h.engine().queue(name);
        await q.publishBatch(0, [{ id: 'x' }, { id: 'y' }, { id: 'z' }]);
        await q.reserve(0, { max: index + 1 });
      }
      await h.reopen();
      for (const [index, name] of names.entries()) {
        const q = await h.engine().queue(name);
        expect((await q.reserve(0))[0]?.token).toBe(index + 2);
      }
    });
  });
});
