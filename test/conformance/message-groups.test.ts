import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../src/core/index.js';
import type { QueueHandle } from '../../src/engine/index.js';
import { expectRefusedUnchanged, view } from './assertions.js';
import { useConformanceEngines } from './engines.js';
import { describeEngines } from './suite.js';

const engines = await useConformanceEngines();

const ids = async (q: QueueHandle, now: number, max = 10) =>
  (await q.reserve(now, { max })).map((d) => d.id);

describeEngines(engines, (h) => {
  describe('R24 message groups', () => {
    it('R24 a grouped job waits while an earlier job of its group is ready or active; ungrouped jobs are unaffected', async () => {
      const q = await h.queue({ visibility: 10 });
      await q.publishBatch(0, [
        { id: 'a1', group: 'a' },
        { id: 'a2', group: 'a' },
        { id: 'b1', group: 'b' },
        { id: 'free' },
        { id: 'a3', group: 'a' },
      ]);
      expect(await q.inspect()).toEqual(
        view(0, { ready: ['a1', 'b1', 'free'], waiting: ['a2', 'a3'] }),
      );
      expect(await q.job('a2')).toMatchObject({ state: 'waiting', group: 'a' });
      expect(await q.stats(0)).toMatchObject({ ready: 3, waiting: 2 });
      const delivered = await q.reserve(0, { max: 10 });
      expect(delivered.map((d) => [d.id, d.group])).toEqual([
        ['a1', 'a'],
        ['b1', 'b'],
        ['free', undefined],
      ]);
      expect(await q.reserve(0)).toEqual([]);
      // Acking a1 lets a2 go on, at the back of ready; a3 still waits for it.
      await q.publish(1, { id: 'free2' });
      expect(await q.ack(1, delivered[0]?.token as number)).toBe(true);
      expect(await q.inspect()).toMatchObject({ ready: ['free2', 'a2'], waiting: ['a3'] });
      expect(await ids(q, 1)).toEqual(['free2', 'a2']);
    });

    it('R24 a requeued or expired job goes back to the front of its group: the group keeps its order', async () => {
      const q = await h.queue({ visibility: 5 });
      await q.publishBatch(0, [{ id: 'a1', group: 'a' }, { id: 'a2', group: 'a' }, { id: 'x' }]);
      const [a1] = await q.reserve(0);
      expect(await q.nack(1, a1?.token as number)).toBe(true);
      expect(await q.inspect()).toMatchObject({ ready: ['a1', 'x'], waiting: ['a2'] });
      expect(await ids(q, 1)).toEqual(['a1', 'x']);
      // a1's lease runs out: it returns to the front, and a2 still waits.
      expect(await q.inspect()).toMatchObject({ waiting: ['a2'] });
      await q.stats(6);
      expect(await q.inspect()).toMatchObject({ ready: ['a1', 'x'], waiting: ['a2'] });
      const [again] = await q.reserve(6);
      expect(again).toMatchObject({ id: 'a1', deliveryCount: 3 });
      // With a delay it stays the group's first: a2 waits through the delay too.
      await q.nack(6, again?.token as number, { delay: 3 });
      expect(await q.inspect()).toMatchObject({
        ready: ['x'],
        delayed: [{ id: 'a1', availableAt: 9 }],
        waiting: ['a2'],
      });
      expect(await ids(q, 9)).toEqual(['x', 'a1']);
    });

    it('R24 a delayed job keeps its place in its group; the next one after it keeps its own delay', async () => {
      const q = await h.queue({ visibility: 5 });
      await q.publishBatch(0, [
        { id: 'a1', group: 'a', delay: 4 },
        { id: 'a2', group: 'a' },
        { id: 'a3', group: 'a', delay: 20 },
      ]);
      expect(await q.inspect()).toEqual(
        view(0, { delayed: [{ id: 'a1', availableAt: 4 }], waiting: ['a2', 'a3'] }),
      );
      expect(await ids(q, 3)).toEqual([]);
      const [a1] = await q.reserve(4);
      expect(a1?.id).toBe('a1');
      await q.ack(5, a1?.token as number);
      const [a2] = await q.reserve(5);
      expect(a2?.id).toBe('a2');
      await q.ack(6, a2?.token as number);
      expect(await q.inspect()).toEqual(view(6, { delayed: [{ id: 'a3', availableAt: 20 }] }));
    });

    it('R24 a dead job leaves its group, which goes on; a redriven one joins the back of its group', async () => {
      const q = await h.queue({ visibility: 5, maxDeliveries: 1 });
      await q.publishBatch(0, [
        { id: 'a1', group: 'a' },
        { id: 'a2', group: 'a' },
        { id: 'a3', group: 'a' },
      ]);
      const [a1] = await q.reserve(0);
      await q.nack(0, a1?.token as number, { requeue: false });
      expect(await q.inspect()).toMatchObject({ ready: ['a2'], waiting: ['a3'] });
      const [a2] = await q.reserve(0);
      // Expiry at maxDeliveries dead-letters a2 (R13); a3 goes on.
      await q.stats(5);
      expect(await q.inspect()).toMatchObject({
        ready: ['a3'],
        dead: [{ id: 'a1' }, { id: a2?.id }],
      });
      expect(await q.redrive(5, ['a1'])).toBe(1);
      expect(await q.inspect()).toMatchObject({ ready: ['a3'], waiting: ['a1'] });
      const [a3] = await q.reserve(5, { ack: 'auto' });
      expect(a3?.id).toBe('a3');
      // Auto-acked (R22), a3 left at once: a1 is ready.
      expect(await q.inspect()).toMatchObject({ ready: ['a1'] });
      expect(await q.redrive(5)).toBe(1);
      expect(await q.inspect()).toMatchObject({ ready: ['a1'], waiting: ['a2'] });
    });

    it('R24 a group orders by publish order across priorities; its first job stands in its own priority', async () => {
      const q = await h.queue();
      await q.publishBatch(0, [
        { id: 'a1', group: 'a' },
        { id: 'a2', group: 'a', priority: 9 },
        { id: 'mid', priority: 5 },
      ]);
      expect(await ids(q, 0, 1)).toEqual(['mid']);
      const [a1] = await q.reserve(0);
      expect(a1?.id).toBe('a1');
      await q.publish(0, { id: 'low' });
      await q.ack(0, a1?.token as number);
      expect((await q.inspect()).ready).toEqual(['a2', 'low']);
    });

    it('R24 purgeQueue removes waiting jobs too, counted as ready; the group is free again', async () => {
      const q = await h.queue();
      await q.publishBatch(0, [
        { id: 'a1', group: 'a' },
        { id: 'a2', group: 'a' },
      ]);
      expect(await q.purgeQueue(0)).toEqual({ ready: 2, delayed: 0, active: 0, dead: 0 });
      await q.publish(0, { id: 'a3', group: 'a' });
      expect(await q.inspect()).toEqual(view(0, { ready: ['a3'] }));
      expect(await q.stats(0)).toMatchObject({ ready: 1, waiting: 0 });
    });

    it('R24 a group key that is not 1–256 characters of well-formed text is refused and changes nothing', async () => {
      const q = await h.queue();
      await q.publish(0, { id: 'a', group: 'g' });
      for (const group of ['', 'x'.repeat(257), '\ud800', 7 as unknown as string]) {
        await expectRefusedUnchanged(
          q,
          () =>
            q.publishBatch(0, [
              { id: 'b', group: 'g' },
              { id: 'c', group },
            ]),
          ValidationError,
          'INVALID_ARGUMENT',
        );
      }
    });
  });
});
