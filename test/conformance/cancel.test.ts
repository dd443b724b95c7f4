import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../src/core/index.js';
import { expectRejection, view } from './assertions.js';
import { useConformanceEngines } from './engines.js';
import { describeEngines } from './suite.js';

const engines = await useConformanceEngines();

describeEngines(engines, (h) => {
  describe('R28 cancel', () => {
    it('R28 a ready or delayed job dies with reason "cancelled"; the ready ones left keep their order', async () => {
      const q = await h.queue();
      await q.publishBatch(0, [{ id: 'a' }, { id: 'b' }, { id: 'c' }, { id: 'd', delay: 10 }]);
      expect(await q.cancel(1, 'b')).toBe(true);
      expect(await q.cancel(1, 'd')).toBe(true);
      expect(await q.inspect()).toEqual(
        view(1, {
          ready: ['a', 'c'],
          dead: [
            { id: 'b', reason: 'cancelled', deliveryCount: 0 },
            { id: 'd', reason: 'cancelled', deliveryCount: 0 },
          ],
        }),
      );
      expect((await q.reserve(1, { max: 5 })).map((d) => d.id)).toEqual(['a', 'c']);
      expect(await q.stats(1)).toMatchObject({
        cancelled: 2,
        dead: 2,
        deadLetters: { cancelled: 2 },
      });
      // Dead already, or not there: nothing to cancel.
      expect(await q.cancel(2, 'b')).toBe(false);
      expect(await q.cancel(2, 'nope')).toBe(false);
      expect(await q.stats(2)).toMatchObject({ cancelled: 2 });
    });

    it('R28 R23 cancels at the front, the back and either side of the middle of a band keep the order of the rest', async () => {
      const q = await h.queue();
      const ids = Array.from({ length: 12 }, (_, n) => `j${n}`);
      await q.publishBatch(0, [
        ...ids.map((id) => ({ id })),
        { id: 'p1', priority: 3 },
        { id: 'p2', priority: 3 },
        { id: 'p3', priority: 3 },
      ]);
      for (const id of ['j0', 'j11', 'j2', 'j9', 'j5', 'j6', 'p2']) {
        expect(await q.cancel(1, id)).toBe(true);
      }
      const left = ['j1', 'j3', 'j4', 'j7', 'j8', 'j10'];
      expect((await q.inspect()).ready).toEqual(['p1', 'p3', ...left]);
      // Front and back insertions after the cancels land where they belong.
      await q.publish(2, { id: 'late' });
      await q.publish(2, { id: 'late3', priority: 3 });
      const [first] = await q.reserve(3, { max: 1 });
      expect(first?.id).toBe('p1');
      expect(await q.nack(4, first?.token ?? 0)).toBe(true);
      const taken = await q.reserve(5, { max: 20 });
      expect(taken.map((d) => d.id)).toEqual(['p1', 'p3', 'late3', ...left, 'late']);
      expect(taken.map((d) => d.token)).toEqual(Array.from({ length: 10 }, (_, n) => n + 2));
      expect(await q.stats(5)).toMatchObject({ ready: 0, active: 10, dead: 7, cancelled: 7 });
    });

    it('R28 with remove: true the job is gone, and its id free again', async () => {
      const q = await h.queue();
      await q.publishBatch(0, [{ id: 'a' }, { id: 'b' }]);
      expect(await q.cancel(0, 'a', { remove: true })).toBe(true);
      expect(await q.inspect()).toEqual(view(0, { ready: ['b'] }));
      expect(await q.job('a')).toBeUndefined();
      expect(await q.publish(1, { id: 'a' })).toEqual({ id: 'a', duplicate: false });
      expect(await q.stats(1)).toMatchObject({ cancelled: 1, dead: 0 });
    });

    it('R28 an active job: its delivery ends at once, its token is refused from then on', async () => {
      const q = await h.queue({ visibility: 100 });
      const session = await q.openSession(0, { prefetch: 1 });
      await q.publishBatch(0, [{ id: 'a' }, { id: 'b' }]);
      const [delivery] = await q.reserve(0, { session });
      const token = delivery?.token as number;
      expect(await q.cancel(3, 'a')).toBe(true);
      expect(await q.extend(4, token, 100)).toBeNull();
      expect(await q.ack(4, token)).toBe(false);
      expect(await q.nack(4, token)).toBe(false);
      expect(await q.job('a')).toMatchObject({
        state: 'dead',
        reason: 'cancelled',
        deliveryCount: 1,
        history: [{ token, deliveredAt: 0, endedAt: 3, outcome: 'cancelled' }],
      });
      // The session's prefetch room is free again.
      expect((await q.reserve(4, { session })).map((d) => d.id)).toEqual(['b']);
      expect(await q.stats(4)).toMatchObject({ staleAcks: 1, staleExtends: 1, active: 1 });
    });

    it('R28 R26 a cancelled job stays in its own dead set even with a dead-letter queue', async () => {
      const dlqName = h.queueName('dlq');
      const dlq = await h.engine().queue(dlqName);
      const q = await h.queue({ deadLetterQueue: dlqName });
      await q.publish(0, { id: 'a' });
      expect(await q.cancel(0, 'a')).toBe(true);
      expect((await q.inspect()).dead).toEqual([
        { id: 'a', reason: 'cancelled', deliveryCount: 0 },
      ]);
      expect(await dlq.inspect()).toEqual(view(0));
    });

    it('R28 R24 cancelling the active member of a group lets the next one become ready', async () => {
      const q = await h.queue({ visibility: 100 });
      await q.publishBatch(0, [
        { id: 'a1', group: 'a' },
        { id: 'a2', group: 'a' },
        { id: 'a3', group: 'a' },
        { id: 'x' },
      ]);
      const [a1] = await q.reserve(0);
      expect(a1).toMatchObject({ id: 'a1', group: 'a' });
      expect(await q.inspect()).toMatchObject({ ready: ['x'], waiting: ['a2', 'a3'] });
      expect(await q.cancel(1, 'a1')).toBe(true);
      expect(await q.inspect()).toMatchObject({ ready: ['x', 'a2'], waiting: ['a3'] });
      expect(await q.job('a2')).toMatchObject({ state: 'ready', group: 'a' });
      expect(await q.stats(1)).toMatchObject({ ready: 2, waiting: 1, active: 0, dead: 1 });
      // a2 is handed out, and a3 still waits for it.
      expect((await q.reserve(1, { max: 5 })).map((d) => d.id)).toEqual(['x', 'a2']);
      expect(await q.inspect()).toMatchObject({ ready: [], waiting: ['a3'] });
    });

    it('R28 R24 a ready first member removed lets the next go on; a waiting one just leaves its group', async () => {
      const q = await h.queue();
      await q.publishBatch(0, [
        { id: 'a1', group: 'a' },
        { id: 'a2', group: 'a' },
        { id: 'a3', group: 'a' },
      ]);
      expect(await q.cancel(0, 'a2')).toBe(true);
      expect(await q.inspect()).toMatchObject({
        ready: ['a1'],
        waiting: ['a3'],
        dead: [{ id: 'a2', reason: 'cancelled', deliveryCount: 0 }],
      });
      expect(await q.cancel(0, 'a1', { remove: true })).toBe(true);
      expect(await q.inspect()).toMatchObject({ ready: ['a3'] });
      expect(await q.stats(0)).toMatchObject({ ready: 1, waiting: 0, cancelled: 2 });
      // The group is free: a new member is ready behind a3 only once a3 is done.
      await q.publish(0, { id: 'a4', group: 'a' });
      expect(await q.inspect()).toMatchObject({ ready: ['a3'], waiting: ['a4'] });
    });

    it('R28 R18 a bad id or option is refused before anything changes', async () => {
      const q = await h.queue();
      await q.publish(0, { id: 'a' });
      await expectRejection(() => q.cancel(0, ''), ValidationError, 'INVALID_ARGUMENT');
      await expectRejection(() => q.cancel(0, '\ud800'), ValidationError, 'INVALID_ARGUMENT');
      await expectRejection(
        // biome-ignore lint/suspicious/noExplicitAny: bad input on purpose
        () => q.cancel(0, 'a', { remove: 'yes' as any }),
        ValidationError,
        'INVALID_ARGUMENT',
      );
      expect(await q.inspect()).toEqual(view(0, { ready: ['a'] }));
    });
  });
});
