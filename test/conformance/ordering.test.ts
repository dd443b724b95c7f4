import { describe, expect, it } from 'vitest';
import { view } from './assertions.js';
import { useConformanceEngines } from './engines.js';
import { describeEngines } from './suite.js';

const engines = await useConformanceEngines();

describeEngines(engines, (h) => {
  describe('R12 expiry: returns at different steps', () => {
    it('R12 deliveries reclaimed at different steps each go to the front at their own step', async () => {
      const q = await h.queue();
      await q.publishBatch(
        0,
        ['a', 'b', 'c', 'd', 'e'].map((id) => ({ id })),
      );
      await q.reserve(0, { visibility: 10 }); // 1 a
      await q.reserve(0, { visibility: 3 }); // 2 b
      await q.reserve(0, { visibility: 6 }); // 3 c
      await q.stats(4);
      expect((await q.inspect()).ready).toEqual(['b', 'd', 'e']);
      await q.stats(10);
      expect(await q.inspect()).toEqual(view(10, { ready: ['a', 'c', 'b', 'd', 'e'] }));
    });
  });

  describe('R13 maxDeliveries: several at once', () => {
    it('R13 with maxDeliveries 1 the first failure is final; several dying in one step die in token order', async () => {
      const q = await h.queue({ maxDeliveries: 1 });
      await q.publishBatch(0, [{ id: 'a' }, { id: 'b' }, { id: 'c' }]);
      await q.reserve(0, { visibility: 8 }); // 1 a, deadline 8
      await q.reserve(0, { visibility: 2 }); // 2 b, deadline 2: due first, later token
      await q.stats(8);
      expect(await q.inspect()).toEqual(
        view(8, {
          ready: ['c'],
          dead: [
            { id: 'a', reason: 'max-deliveries', deliveryCount: 1 },
            { id: 'b', reason: 'max-deliveries', deliveryCount: 1 },
          ],
        }),
      );
    });
  });

  describe('R14 redrive: order and history', () => {
    it('R14 redrive without ids moves every dead job to the back of ready, in dead order', async () => {
      const q = await h.queue();
      await q.publishBatch(
        0,
        ['a', 'b', 'c', 'x'].map((id) => ({ id })),
      );
      await q.reserve(0, { max: 3 }); // 1 a, 2 b, 3 c
      for (const token of [2, 3, 1]) await q.nack(1, token, { requeue: false });
      expect((await q.inspect()).dead.map((d) => d.id)).toEqual(['b', 'c', 'a']);
      expect(await q.redrive(2)).toBe(3);
      expect(await q.inspect()).toEqual(view(2, { ready: ['x', 'b', 'c', 'a'] }));
    });

    it('R14 a redriven job starts again from deliveryCount 0; a later death adds to the kept history', async () => {
      const q = await h.queue({ visibility: 5, maxDeliveries: 1 });
      await q.publishBatch(0, [
        { id: 'a', payload: 'A' },
        { id: 'x', payload: 'X' },
      ]);
      await q.reserve(0); // 1 a
      await q.stats(5);
      expect(await q.inspect()).toEqual(
        view(5, { ready: ['x'], dead: [{ id: 'a', reason: 'max-deliveries', deliveryCount: 1 }] }),
      );
      expect(await q.redrive(6)).toBe(1);
      expect(await q.inspect()).toEqual(view(6, { ready: ['x', 'a'] }));
      expect(await q.deadLetters()).toEqual([]);
      await q.reserve(6); // 2 x
      expect(await q.reserve(7)).toEqual([
        { token: 3, id: 'a', payload: 'A', deadline: 12, deliveryCount: 1, redelivered: false },
      ]);
      expect(await q.reject(8, 3, { requeue: false, reason: 'again' })).toBe(true);
      expect(await q.deadLetters()).toEqual([
        {
          id: 'a',
          payload: 'A',
          reason: 'again',
          deliveryCount: 1,
          deadAt: 8,
          history: [
            { token: 1, deliveredAt: 0, endedAt: 5, outcome: 'expired' },
            { token: 3, deliveredAt: 7, endedAt: 8, outcome: 'rejected', reason: 'again' },
          ],
        },
      ]);
      expect(await q.stats(8)).toMatchObject({ redriven: 1, dead: 1 });
    });
  });
});
