import { describe, expect, it } from 'vitest';
import { backoffDelay } from '../../src/core/index.js';
import { settleNeverIssued, view } from './assertions.js';
import { useConformanceEngines } from './engines.js';
import { describeEngines } from './suite.js';

const engines = await useConformanceEngines({ socket: true });

describeEngines(engines, (h) => {
  describe('R8 ack', () => {
    it('R8 ack of a live delivery returns true and removes the job', async () => {
      const q = await h.queue({ visibility: 5 });
      await q.publishBatch(0, [{ id: 'a' }, { id: 'b' }]);
      await q.reserve(0);
      expect(await q.ack(4, 1)).toBe(true);
      expect(await q.inspect()).toEqual(view(4, { ready: ['b'] }));
      expect(await q.job('a')).toBeUndefined();
      expect(await q.stats(4)).toMatchObject({
        acks: 1,
        staleAcks: 0,
        processingTime: { count: 1, sum: 4, max: 4 },
      });
    });

    it('R8 ack at the deadline is stale: the lease ended at deadline, not after it', async () => {
      const q = await h.queue({ visibility: 5 });
      await q.publish(0, { id: 'a' });
      await q.reserve(0);
      expect(await q.ack(5, 1)).toBe(false);
      expect(await q.inspect()).toEqual(view(5, { ready: ['a'] }));
    });

    it('R8 a stale token (acked, expired, never issued) returns false and changes nothing beyond R3', async () => {
      const q = await h.queue({ visibility: 5 });
      await q.publishBatch(0, [{ id: 'a' }, { id: 'b' }]);
      await q.reserve(0, { max: 2 });
      expect(await q.ack(1, 1)).toBe(true);
      const before = await q.inspect();
      expect(await q.ack(1, 1)).toBe(false); // acked already
      let neverIssued = await settleNeverIssued(h, () => q.ack(1, 3), false);
      neverIssued += await settleNeverIssued(h, () => q.ack(1, 999_999), false);
      expect(await q.ackMany(1, [1])).toEqual([false]);
      neverIssued += await settleNeverIssued(h, () => q.ackMany(1, [3]), [false]);
      expect(await q.inspect()).toEqual(before);
      expect(await q.stats(1)).toMatchObject({ acks: 1, staleAcks: 2 + neverIssued });
    });

    it('R8 a stale token never completes, extends or releases a newer delivery of the same job', async () => {
      const q = await h.queue({ visibility: 5 });
      await q.publish(0, { id: 'a' });
      await q.reserve(0); // 1, expires at 5
      await q.reserve(5); // 2: a again, deadline 10
      const live = view(5, { active: [{ token: 2, id: 'a', deadline: 10, deliveryCount: 2 }] });
      expect(await q.ack(5, 1)).toBe(false);
      expect(await q.nack(5, 1)).toBe(false);
      expect(await q.nack(5, 1, { requeue: false })).toBe(false);
      expect(await q.reject(5, 1)).toBe(false);
      expect(await q.extend(5, 1, 100)).toBeNull();
      expect(await q.ackMany(5, [1])).toEqual([false]);
      expect(await q.inspect()).toEqual(live);
      expect(await q.stats(5)).toMatchObject({ staleAcks: 2, staleNacks: 3, staleExtends: 1 });
      expect(await q.ack(6, 2)).toBe(true);
    });
  });

  describe('R9 nack and reject', () => {
    it('R9 nack puts the job back at the front of ready, keeping its deliveryCount', async () => {
      const q = await h.queue({ visibility: 5 });
      await q.publishBatch(0, [{ id: 'a' }, { id: 'b' }, { id: 'c' }]);
      await q.reserve(0, { max: 2 }); // 1 a, 2 b
      expect(await q.nack(1, 2)).toBe(true);
      expect(await q.nack(2, 1)).toBe(true);
      expect(await q.inspect()).toEqual(view(2, { ready: ['a', 'b', 'c'] }));
      expect(await q.job('a')).toMatchObject({
        state: 'ready',
        deliveryCount: 1,
        history: [{ token: 1, deliveredAt: 0, endedAt: 2, outcome: 'requeued' }],
      });
      expect((await q.reserve(2))[0]).toMatchObject({ token: 3, id: 'a', deliveryCount: 2 });
      expect(await q.stats(2)).toMatchObject({ nacks: 2, redeliveries: 1 });
    });

    it('R9 nack with delay puts the job in delayed until now + delay', async () => {
      const q = await h.queue({ visibility: 5 });
      await q.publishBatch(0, [{ id: 'a' }, { id: 'b' }]);
      await q.reserve(0);
      expect(await q.nack(2, 1, { delay: 4, reason: 'ignored when requeued' })).toBe(true);
      expect(await q.inspect()).toEqual(
        view(2, { ready: ['b'], delayed: [{ id: 'a', availableAt: 6 }] }),
      );
      expect(await q.job('a')).toMatchObject({
        state: 'delayed',
        availableAt: 6,
        history: [{ token: 1, deliveredAt: 0, endedAt: 2, outcome: 'requeued' }],
      });
      await q.stats(5);
      expect((await q.inspect()).delayed).toEqual([{ id: 'a', availableAt: 6 }]);
      await q.stats(6);
      expect(await q.inspect()).toEqual(view(6, { ready: ['b', 'a'] }));
    });

    it('R9 nack with requeue false dead-letters with reason "rejected", or the reason given', async () => {
      const q = await h.queue({ visibility: 5 });
      await q.publishBatch(0, [{ id: 'a', payload: 'A' }, { id: 'b' }]);
      await q.reserve(0, { max: 2 });
      expect(await q.nack(1, 1, { requeue: false })).toBe(true);
      expect(await q.reject(2, 2, { requeue: false, reason: 'poison' })).toBe(true);
      expect(await q.inspect()).toEqual(
        view(2, {
          dead: [
            { id: 'a', reason: 'rejected', deliveryCount: 1 },
            { id: 'b', reason: 'poison', deliveryCount: 1 },
          ],
        }),
      );
      expect((await q.deadLetters())[0]).toEqual({
        id: 'a',
        payload: 'A',
        reason: 'rejected',
        deliveryCount: 1,
        deadAt: 1,
        history: [
          { token: 1, deliveredAt: 0, endedAt: 1, outcome: 'rejected', reason: 'rejected' },
        ],
      });
      expect(await q.stats(2)).toMatchObject({
        nacks: 2,
        deadLetters: { rejected: 2 },
      });
    });

    it('R9 reject is nack: same defaults (requeue), same result, same stale false', async () => {
      const q = await h.queue({ visibility: 5 });
      await q.publishBatch(0, [{ id: 'a' }, { id: 'b' }]);
      await q.reserve(0);
      expect(await q.reject(1, 1)).toBe(true);
      expect(await q.inspect()).toEqual(view(1, { ready: ['a', 'b'] }));
      expect(await q.reject(1, 1)).toBe(false);
    });
  });

  describe('R10 extend', () => {
    it('R10 extend sets deadline = now + visibility and returns it; each success is counted', async () => {
      const q = await h.queue({ visibility: 5 });
      await q.publish(0, { id: 'a' });
      await q.reserve(0);
      expect(await q.extend(3, 1, 10)).toBe(13);
      expect(await q.extend(4, 1, 2)).toBe(6); // relative to now, as SQS does: may shorten
      expect(await q.inspect()).toEqual(
        view(4, { active: [{ token: 1, id: 'a', deadline: 6, deliveryCount: 1 }] }),
      );
      expect(await q.job('a')).toMatchObject({ state: 'active', token: 1, deadline: 6 });
      expect(await q.ack(5, 1)).toBe(true);
      expect(await q.stats(5)).toMatchObject({ extensions: 2, staleExtends: 0 });
    });

    it('R10 extend of a stale token returns null; an expired lease cannot be extended back', async () => {
      const q = await h.queue({ visibility: 5 });
      await q.publish(0, { id: 'a' });
      await q.reserve(0);
      expect(await q.extend(5, 1, 10)).toBeNull();
      const neverIssued = await settleNeverIssued(h, () => q.extend(5, 42, 10), null);
      expect(await q.inspect()).toEqual(view(5, { ready: ['a'] }));
      expect(await q.stats(5)).toMatchObject({ extensions: 0, staleExtends: 1 + neverIssued });
    });

    it('R10 the deadline never passes deliveredAt + maxLease, at reserve or extend', async () => {
      const q = await h.queue({ visibility: 5, maxLease: 8 });
      await q.publishBatch(0, [{ id: 'a' }, { id: 'b' }]);
      expect((await q.reserve(2, { visibility: 20 }))[0]?.deadline).toBe(10);
      expect((await q.reserve(3))[0]?.deadline).toBe(8);
      expect(await q.extend(4, 2, 10)).toBe(11);
      expect(await q.extend(9, 1, 1)).toBe(10);
      expect(await q.extend(9, 2, 1)).toBe(10);
      expect(await q.inspect()).toEqual(
        view(9, {
          active: [
            { token: 1, id: 'a', deadline: 10, deliveryCount: 1 },
            { token: 2, id: 'b', deadline: 10, deliveryCount: 1 },
          ],
        }),
      );
      expect(await q.ackMany(10, [1, 2])).toEqual([false, false]);
    });
  });

  describe('R10 extend past a maxLease lowered since the delivery', () => {
    it('R10 returns the bound, at or before now: the lease ends at that call, the job is ready again', async () => {
      const q = await h.queue({ visibility: 60 });
      await q.publish(0, { id: 'a' });
      expect((await q.reserve(0))[0]?.deadline).toBe(60);
      await h.engine().updateQueue(q.name, { maxLease: 10 });
      expect(await q.extend(15, 1, 60)).toBe(10);
      expect(await q.ack(15, 1)).toBe(false);
      expect(await q.inspect()).toEqual(view(15, { ready: ['a'] }));
      expect(await q.reserve(15)).toMatchObject([{ id: 'a', token: 2, deadline: 25 }]);
    });

    it('R10 the lease ended by that bound is over when the extend returns: ready at once, no live delivery left', async () => {
      const q = await h.queue({ visibility: 60 });
      await q.publishBatch(0, [{ id: 'a' }, { id: 'b' }]);
      await q.reserve(0, { max: 2 }); // 1 a, 2 b
      await h.engine().updateQueue(q.name, { maxLease: 10 });
      expect(await q.extend(15, 1, 60)).toBe(10);
      // Read without taking time: no later call has run R3.
      expect(await q.inspect()).toEqual(
        view(15, { ready: ['a'], active: [{ token: 2, id: 'b', deadline: 60, deliveryCount: 1 }] }),
      );
      expect((await q.deliveries()).map((delivery) => delivery.token)).toEqual([2]);
      expect(await q.job('a')).toMatchObject({
        state: 'ready',
        deliveryCount: 1,
        history: [{ token: 1, deliveredAt: 0, endedAt: 15, outcome: 'expired' }],
      });
      expect(await q.stats(15)).toMatchObject({ ready: 1, active: 1, expiries: 1, extensions: 1 });
    });

    it('R10 R13 a job out of deliveries whose lease that bound ended dies at that call', async () => {
      const q = await h.queue({ visibility: 60, maxDeliveries: 1 });
      await q.publish(0, { id: 'a' });
      await q.reserve(0);
      await h.engine().updateQueue(q.name, { maxLease: 10 });
      expect(await q.extend(15, 1, 60)).toBe(10);
      expect(await q.inspect()).toEqual(
        view(15, { dead: [{ id: 'a', reason: 'max-deliveries', deliveryCount: 1 }] }),
      );
    });
  });

  describe('R11 bulk', () => {
    it('R11 ackUpTo acks the session’s live deliveries with token ≤ the given one, and only those', async () => {
      const q = await h.queue({ visibility: 5 });
      await q.publishBatch(
        0,
        ['a', 'b', 'c', 'd', 'e', 'f'].map((id) => ({ id })),
      );
      const s = await q.openSession(0);
      const other = await q.openSession(0);
      await q.reserve(0, { session: s }); // 1 a
      await q.reserve(0, { session: other }); // 2 b
      await q.reserve(0); // 3 c
      await q.reserve(0, { session: s, max: 2 }); // 4 d, 5 e
      await q.reserve(0, { session: s, visibility: 1 }); // 6 f, expires at 1
      expect(await q.ackUpTo(1, s, 4)).toBe(2);
      expect(await q.inspect()).toEqual(
        view(1, {
          ready: ['f'],
          active: [
            { token: 2, id: 'b', deadline: 5, deliveryCount: 1, session: other },
            { token: 3, id: 'c', deadline: 5, deliveryCount: 1 },
            { token: 5, id: 'e', deadline: 5, deliveryCount: 1, session: s },
          ],
        }),
      );
      expect(await q.ackUpTo(1, s, 4)).toBe(0);
      expect(await q.ackUpTo(1, s, 100)).toBe(1);
      expect(await q.stats(1)).toMatchObject({ acks: 3, staleAcks: 0 });
    });

    it('R11 nackUpTo requeues (front, token order) or dead-letters the session’s deliveries ≤ token', async () => {
      const q = await h.queue({ visibility: 5 });
      await q.publishBatch(
        0,
        ['a', 'b', 'c', 'd', 'e'].map((id) => ({ id })),
      );
      const s = await q.openSession(0);
      await q.reserve(0, { session: s, max: 2 }); // 1 a, 2 b
      await q.reserve(0); // 3 c
      await q.reserve(0, { session: s }); // 4 d
      expect(await q.nackUpTo(1, s, 2)).toBe(2);
      expect(await q.inspect()).toEqual(
        view(1, {
          ready: ['a', 'b', 'e'],
          active: [
            { token: 3, id: 'c', deadline: 5, deliveryCount: 1 },
            { token: 4, id: 'd', deadline: 5, deliveryCount: 1, session: s },
          ],
        }),
      );
      expect(await q.nackUpTo(2, s, 9, { requeue: false, reason: 'bulk' })).toBe(1);
      expect(await q.nackUpTo(2, s, 9, { delay: 3 })).toBe(0);
      expect((await q.inspect()).dead).toEqual([{ id: 'd', reason: 'bulk', deliveryCount: 1 }]);
      await q.reserve(2, { session: s, max: 2 }); // 5 a, 6 b
      expect(await q.nackUpTo(3, s, 6, { delay: 3 })).toBe(2);
      expect((await q.inspect()).delayed).toEqual([
        { id: 'a', availableAt: 6 },
        { id: 'b', availableAt: 6 },
      ]);
      expect(await q.stats(3)).toMatchObject({ nacks: 5, deadLetters: { rejected: 1 } });
    });

    it('R11 ackMany acks each named token independently and returns one boolean each', async () => {
      const q = await h.queue({ visibility: 5 });
      await q.publishBatch(
        0,
        ['a', 'b', 'c'].map((id) => ({ id })),
      );
      await q.reserve(0, { max: 3 });
      if (h.viaClient) {
        // The client refuses a list naming a token it never received, whole.
        await settleNeverIssued(h, () => q.ackMany(1, [3, 9, 1, 3]), undefined);
        expect(await q.ackMany(1, [3, 1, 3])).toEqual([true, true, false]);
      } else {
        expect(await q.ackMany(1, [3, 9, 1, 3])).toEqual([true, false, true, false]);
      }
      expect(await q.ackMany(1, [])).toEqual([]);
      expect(await q.inspect()).toEqual(
        view(1, { active: [{ token: 2, id: 'b', deadline: 5, deliveryCount: 1 }] }),
      );
      expect(await q.stats(1)).toMatchObject({ acks: 2, staleAcks: h.viaClient ? 1 : 2 });
    });
  });

  describe('R15 retry policy', () => {
    it('R15 a retry nacks with delay = backoffDelay(id, attempt), which replays identically', async () => {
      const q = await h.queue({ visibility: 50 });
      await q.publish(0, { id: 'job-7' });
      const policy = { id: 'job-7', baseDelay: 100, maxDelay: 1000 };
      const delays = [1, 2, 3, 4, 5].map((attempt) => backoffDelay({ ...policy, attempt }));
      expect([1, 2, 3, 4, 5].map((attempt) => backoffDelay({ ...policy, attempt }))).toEqual(
        delays,
      );
      let now = 0;
      for (const [index, delay] of delays.entries()) {
        const [delivery] = await q.reserve(now);
        expect(delivery).toMatchObject({ id: 'job-7', deliveryCount: index + 1 });
        expect(await q.nack(now, delivery?.token as number, { delay })).toBe(true);
        expect(await q.job('job-7')).toMatchObject({ state: 'delayed', availableAt: now + delay });
        if (delay > 0) expect(await q.reserve(now + delay - 1)).toEqual([]);
        now += delay;
      }
      expect((await q.reserve(now))[0]).toMatchObject({ id: 'job-7', deliveryCount: 6 });
    });
  });
});
