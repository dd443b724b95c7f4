import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../src/core/index.js';
import { expectRefusedUnchanged, view } from './assertions.js';
import { useConformanceEngines } from './engines.js';
import { describeEngines } from './suite.js';

const engines = await useConformanceEngines();

describeEngines(engines, (h) => {
  describe('R22 at-most-once receive: ack auto', () => {
    it('R22 an auto-ack reserve removes each job as it is handed out, in ready order, with fresh tokens', async () => {
      const q = await h.queue({ visibility: 5 });
      await q.publishBatch(0, [{ id: 'a', payload: 1 }, { id: 'b' }, { id: 'c' }]);
      const [manual] = await q.reserve(0);
      expect(manual?.token).toBe(1);
      const handed = await q.reserve(1, { max: 5, ack: 'auto' });
      expect(handed).toEqual([
        {
          token: 2,
          id: 'b',
          payload: undefined,
          deadline: 1,
          deliveryCount: 1,
          redelivered: false,
        },
        {
          token: 3,
          id: 'c',
          payload: undefined,
          deadline: 1,
          deliveryCount: 1,
          redelivered: false,
        },
      ]);
      expect(await q.inspect()).toEqual(
        view(1, { active: [{ token: 1, id: 'a', deadline: 5, deliveryCount: 1 }] }),
      );
      expect(await q.job('b')).toBeUndefined();
      // Nothing is live: a later ack or nack of its token is stale (R8), and nothing returns.
      expect(await q.ack(2, 2)).toBe(false);
      expect(await q.nack(2, 3)).toBe(false);
      const stats = await q.stats(9);
      expect(stats).toMatchObject({
        ready: 1,
        active: 0,
        deliveries: 3,
        autoAcked: 2,
        acks: 0,
        staleAcks: 1,
        staleNacks: 1,
      });
      expect(await q.reserve(9, { ack: 'auto' })).toEqual([
        { token: 4, id: 'a', payload: 1, deadline: 9, deliveryCount: 2, redelivered: true },
      ]);
      expect((await q.stats(9)).redeliveries).toBe(1);
    });

    it('R22 auto-acked deliveries do not count against the queue prefetch nor the session prefetch', async () => {
      const q = await h.queue({ prefetch: 1 });
      await q.publishBatch(0, [{ id: 'a' }, { id: 'b' }, { id: 'c' }, { id: 'd' }]);
      const session = await q.openSession(0, { prefetch: 1 });
      expect((await q.reserve(0, { session })).map((d) => d.id)).toEqual(['a']);
      expect(await q.reserve(0)).toEqual([]);
      expect((await q.reserve(0, { max: 2, ack: 'auto', session })).map((d) => d.id)).toEqual([
        'b',
        'c',
      ]);
      expect((await q.reserve(0, { ack: 'auto' })).map((d) => d.id)).toEqual(['d']);
      expect((await q.inspect()).active.map((d) => d.id)).toEqual(['a']);
    });

    it('R22 an auto-acked id is remembered for the de-duplication window like an acked one (R4)', async () => {
      const q = await h.queue({ dedupWindow: 10 });
      await q.publish(0, { id: 'a' });
      await q.reserve(0, { ack: 'auto' });
      expect(await q.publish(9, { id: 'a' })).toEqual({ id: 'a', duplicate: true });
      expect(await q.publish(10, { id: 'a' })).toEqual({ id: 'a', duplicate: false });
    });

    it('R22 a dead-lettered job taken with ack auto leaves no origin behind: a new job of its id has none (R26)', async () => {
      const dlqName = h.queueName('dlq');
      const dlq = await h.engine().queue(dlqName);
      const source = await h.engine().queue(h.queueName('src'), { deadLetterQueue: dlqName });
      await source.publish(0, { id: 'a' });
      const [delivery] = await source.reserve(0);
      await source.reject(0, delivery?.token ?? 0, { requeue: false });
      expect((await dlq.job('a'))?.origin).toMatchObject({ reason: 'rejected' });
      expect(await dlq.reserve(1, { ack: 'auto' })).toHaveLength(1);
      await dlq.publish(2, { id: 'a', payload: 'new' });
      expect((await dlq.job('a'))?.origin).toBeUndefined();
      expect(await dlq.moveJobs(3)).toBe(0);
      expect(await dlq.inspect()).toEqual(view(3, { ready: ['a'] }));
    });

    it('R22 an ack mode other than manual or auto is refused and changes nothing', async () => {
      const q = await h.queue();
      await q.publish(0, { id: 'a' });
      await expectRefusedUnchanged(
        q,
        () => q.reserve(0, { ack: 'none' as 'auto' }),
        ValidationError,
        'INVALID_ARGUMENT',
      );
    });
  });
});
