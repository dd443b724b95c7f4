import { describe, expect, it } from 'vitest';
import { useConformanceEngines } from './engines.js';
import { describeEngines } from './suite.js';

const engines = await useConformanceEngines();

describeEngines(engines, (h) => {
  describe('live deliveries and publish times', () => {
    it('deliveries() lists live deliveries in token order with delivery time, deadline, session', async () => {
      const q = await h.queue({ visibility: 10 });
      await q.publishBatch(1, [{ id: 'a' }, { id: 'b' }, { id: 'c' }]);
      const session = await q.openSession(2);
      await q.reserve(3, { session });
      await q.reserve(5, { visibility: 4 });
      expect(await q.extend(6, 1, 20)).toBe(26);
      expect(await q.deliveries()).toEqual([
        { token: 1, id: 'a', deliveredAt: 3, deadline: 26, deliveryCount: 1, session },
        { token: 2, id: 'b', deliveredAt: 5, deadline: 9, deliveryCount: 1 },
      ]);
      // At 9 b expires; its next delivery is a new one, delivered later.
      await q.reserve(9, { max: 2 });
      expect(await q.deliveries()).toEqual([
        { token: 1, id: 'a', deliveredAt: 3, deadline: 26, deliveryCount: 1, session },
        { token: 3, id: 'b', deliveredAt: 9, deadline: 19, deliveryCount: 2 },
        { token: 4, id: 'c', deliveredAt: 9, deadline: 19, deliveryCount: 1 },
      ]);
      expect(await q.ack(10, 3)).toBe(true);
      expect((await q.deliveries()).map((d) => d.token)).toEqual([1, 4]);
    });

    it('a job keeps its publish time through delay, delivery, death and redrive', async () => {
      const q = await h.queue({ visibility: 5, maxDeliveries: 1 });
      await q.publish(2, { id: 'late', delay: 10 });
      await q.publishBatch(4, [{ id: 'a' }, { id: 'b' }]);
      expect(await q.job('late')).toMatchObject({
        state: 'delayed',
        publishedAt: 2,
        availableAt: 12,
      });
      await q.reserve(6);
      expect(await q.job('a')).toMatchObject({ state: 'active', publishedAt: 4 });
      await q.nack(7, 1, { requeue: false, reason: 'bad' });
      expect(await q.job('a')).toMatchObject({ state: 'dead', publishedAt: 4 });
      await q.redrive(8, ['a']);
      expect(await q.job('a')).toMatchObject({ state: 'ready', publishedAt: 4 });
      // A duplicate publish changes nothing, the publish time included.
      await q.publish(9, { id: 'b' });
      expect((await q.job('b'))?.publishedAt).toBe(4);
    });
  });
});
