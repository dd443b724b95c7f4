import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../src/core/index.js';
import { expectRefusedUnchanged, view } from './assertions.js';
import { useConformanceEngines } from './engines.js';
import { describeEngines } from './suite.js';

const engines = await useConformanceEngines();

describeEngines(engines, (h) => {
  describe('R23 priorities', () => {
    it('R23 higher priorities are handed out first; within one, publish order; none means 0', async () => {
      const q = await h.queue({ visibility: 50 });
      await q.publishBatch(0, [
        { id: 'a' },
        { id: 'b', priority: 5 },
        { id: 'c', priority: 0 },
        { id: 'd', priority: 9 },
        { id: 'e', priority: 5 },
      ]);
      expect((await q.inspect()).ready).toEqual(['d', 'b', 'e', 'a', 'c']);
      expect(await q.job('b')).toMatchObject({ id: 'b', state: 'ready', priority: 5 });
      expect(await q.job('a')).not.toHaveProperty('priority');
      expect((await q.reserve(0, { max: 2 })).map((d) => [d.id, d.token])).toEqual([
        ['d', 1],
        ['b', 2],
      ]);
      await q.publish(1, { id: 'f', priority: 7 });
      expect((await q.reserve(1, { max: 5 })).map((d) => [d.id, d.token])).toEqual([
        ['f', 3],
        ['e', 4],
        ['a', 5],
        ['c', 6],
      ]);
    });

    it('R23 a requeued or expired job goes to the front of its own priority, not of the queue', async () => {
      const q = await h.queue({ visibility: 5 });
      await q.publishBatch(0, [
        { id: 'low' },
        { id: 'mid', priority: 3 },
        { id: 'high', priority: 8 },
        { id: 'mid2', priority: 3 },
      ]);
      const [high, mid] = await q.reserve(0, { max: 2 });
      expect([high?.id, mid?.id]).toEqual(['high', 'mid']);
      const [low] = await q.reserve(0, { max: 1 });
      expect(low?.id).toBe('mid2');
      await q.nack(1, mid?.token as number);
      expect((await q.inspect()).ready).toEqual(['mid', 'low']);
      // R12: expired deliveries return to the front of their priority, in token order.
      expect((await q.stats(5)).ready).toBe(4);
      expect((await q.inspect()).ready).toEqual(['high', 'mid2', 'mid', 'low']);
    });

    it('R23 delayed and redriven jobs join the back of their priority', async () => {
      const q = await h.queue({ visibility: 5, maxDeliveries: 1 });
      await q.publishBatch(0, [
        { id: 'a', priority: 2 },
        { id: 'late', priority: 2, delay: 3 },
        { id: 'b', priority: 2 },
        { id: 'dead', priority: 4 },
      ]);
      const [first] = await q.reserve(0);
      expect(first?.id).toBe('dead');
      await q.nack(0, first?.token as number, { requeue: false });
      await q.stats(3);
      expect((await q.inspect()).ready).toEqual(['a', 'b', 'late']);
      await q.publish(3, { id: 'c', priority: 2 });
      expect(await q.redrive(3)).toBe(1);
      expect(await q.inspect()).toEqual(view(3, { ready: ['dead', 'a', 'b', 'late', 'c'] }));
      expect((await q.reserve(3, { max: 9, ack: 'auto' })).map((d) => d.id)).toEqual([
        'dead',
        'a',
        'b',
        'late',
        'c',
      ]);
    });

    it('R23 purgeQueue empties every priority, and publishing afterwards starts afresh', async () => {
      const q = await h.queue();
      await q.publishBatch(0, [{ id: 'a', priority: 1 }, { id: 'b' }, { id: 'c', priority: 9 }]);
      expect(await q.purgeQueue(0)).toEqual({ ready: 3, delayed: 0, active: 0, dead: 0 });
      await q.publishBatch(1, [{ id: 'd' }, { id: 'e', priority: 1 }]);
      expect((await q.reserve(1, { max: 3 })).map((d) => d.id)).toEqual(['e', 'd']);
    });

    it('R23 a priority outside 0–9, or not an integer, is refused and changes nothing', async () => {
      const q = await h.queue();
      await q.publish(0, { id: 'a' });
      for (const priority of [-1, 10, 1.5, '3' as unknown as number]) {
        const error = await expectRefusedUnchanged(
          q,
          () => q.publishBatch(0, [{ id: 'b' }, { id: 'c', priority }]),
          ValidationError,
          'INVALID_ARGUMENT',
        );
        expect(error.issues).toEqual([
          `jobs[1].priority must be an integer from 0 to 9, got ${typeof priority === 'string' ? `"${priority}"` : priority}`,
        ]);
      }
    });
  });
});
