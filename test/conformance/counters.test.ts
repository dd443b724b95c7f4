import { describe, expect, it } from 'vitest';
import { settleNeverIssued } from './assertions.js';
import { useConformanceEngines } from './engines.js';
import { describeEngines } from './suite.js';

const engines = await useConformanceEngines();

describeEngines(engines, (h) => {
  describe('R17 counters: more histories', () => {
    it('R17 every counter and gauge after a scripted run with rejections, redrive and purge', async () => {
      const q = await h.queue({ visibility: 10, maxDeliveries: 2 });
      await q.publishBatch(0, [{ id: 'a' }, { id: 'b' }, { id: 'c' }]);
      expect((await q.publish(0, { id: 'a' })).duplicate).toBe(true);
      await q.publish(0, { id: 'd', delay: 50 });
      expect((await q.reserve(0, { max: 2 })).map((d) => d.token)).toEqual([1, 2]);
      expect(await q.ack(4, 1)).toBe(true); // processing 4
      expect(await q.ack(4, 1)).toBe(false);
      expect(await q.nack(5, 2)).toBe(true);
      expect((await q.reserve(5, { max: 2 })).map((d) => [d.token, d.id, d.redelivered])).toEqual([
        [3, 'b', true],
        [4, 'c', false],
      ]);
      expect(await q.extend(6, 4, 20)).toBe(26);
      // A never-issued token is stale to an engine; the HTTP client refuses it unsent.
      const staleExtends = await settleNeverIssued(h, () => q.extend(7, 999, 5), null);
      const staleNacks = await settleNeverIssued(h, () => q.nack(7, 999), false);
      await q.stats(15); // token 3 expires; b (deliveryCount 2) is dead
      expect(await q.ack(16, 4)).toBe(true); // processing 11
      await q.publish(16, { id: 'e' });
      await q.reserve(16); // 5 e
      expect(await q.nack(16, 5, { requeue: false })).toBe(true);
      expect(await q.stats(20)).toEqual({
        queueTime: 20,
        ready: 0,
        delayed: 1,
        active: 0,
        dead: 2,
        waiting: 0,
        sessions: 0,
        paused: false,
        oldestReadyAge: 0,
        published: 5,
        duplicates: 1,
        refused: 0,
        deliveries: 5,
        redeliveries: 1,
        acks: 2,
        nacks: 2,
        unworked: 0,
        expiries: 1,
        sessionReleases: 0,
        extensions: 1,
        staleAcks: 1,
        staleNacks,
        staleExtends,
        redriven: 0,
        purged: 0,
        autoAcked: 0,
        cancelled: 0,
        expired: 0,
        deadLetters: { 'max-deliveries': 1, rejected: 1 },
        processingTime: { count: 2, sum: 15, max: 11 },
      });
      expect(await q.redrive(21, ['b'])).toBe(1);
      expect(await q.purge(22)).toBe(1);
      expect(await q.stats(25)).toMatchObject({
        ready: 1,
        dead: 0,
        oldestReadyAge: 4,
        redriven: 1,
        purged: 1,
        deadLetters: { 'max-deliveries': 1, rejected: 1 },
      });
    });

    it('R17 processingTime sums delivery-to-ack times and keeps the maximum', async () => {
      const q = await h.queue();
      await q.publishBatch(0, [{ id: 'a' }, { id: 'b' }, { id: 'c' }]);
      await q.reserve(1, { max: 3 });
      await q.ack(4, 2);
      await q.ack(10, 1);
      await q.ack(12, 3);
      expect((await q.stats(12)).processingTime).toEqual({ count: 3, sum: 3 + 9 + 11, max: 11 });
    });

    it('R11 R16 R17 ackUpTo and session releases are counted per delivery', async () => {
      const q = await h.queue();
      await q.publishBatch(
        0,
        ['a', 'b', 'c', 'd'].map((id) => ({ id })),
      );
      const s = await q.openSession(0);
      await q.reserve(0, { max: 4, session: s });
      expect(await q.ackUpTo(2, s, 2)).toBe(2);
      expect(await q.closeSession(3, s)).toBe(2);
      expect(await q.stats(3)).toMatchObject({
        acks: 2,
        sessionReleases: 2,
        ready: 2,
        processingTime: { count: 2, sum: 4, max: 2 },
      });
      await q.reserve(3, { max: 2 });
      expect(await q.stats(3)).toMatchObject({ deliveries: 6, redeliveries: 2 });
    });
  });
});
