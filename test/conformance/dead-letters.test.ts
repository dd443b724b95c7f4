import { describe, expect, it } from 'vitest';
import { view } from './assertions.js';
import { useConformanceEngines } from './engines.js';
import { describeEngines } from './suite.js';

const engines = await useConformanceEngines();

describeEngines(engines, (h) => {
  describe('R12 expiry', () => {
    it('R12 deliveries expiring in one step return together, in token order, before the ready jobs', async () => {
      const q = await h.queue({ visibility: 5 });
      await q.publishBatch(
        0,
        ['a', 'b', 'c', 'd'].map((id) => ({ id })),
      );
      await q.reserve(0); // 1 a, deadline 5
      await q.reserve(0, { visibility: 3 }); // 2 b, deadline 3: earlier deadline, later token
      await q.publish(1, { id: 'e', delay: 2 }); // due at 3
      expect(await q.inspect()).toEqual(
        view(1, {
          ready: ['c', 'd'],
          delayed: [{ id: 'e', availableAt: 3 }],
          active: [
            { token: 1, id: 'a', deadline: 5, deliveryCount: 1 },
            { token: 2, id: 'b', deadline: 3, deliveryCount: 1 },
          ],
        }),
      );
      await q.stats(5);
      expect(await q.inspect()).toEqual(view(5, { ready: ['a', 'b', 'c', 'd', 'e'] }));
      expect(await q.ackMany(5, [1, 2])).toEqual([false, false]);
      expect(await q.reserve(5, { max: 2 })).toEqual([
        {
          token: 3,
          id: 'a',
          payload: undefined,
          deadline: 10,
          deliveryCount: 2,
          redelivered: true,
        },
        {
          token: 4,
          id: 'b',
          payload: undefined,
          deadline: 10,
          deliveryCount: 2,
          redelivered: true,
        },
      ]);
      expect(await q.job('b')).toMatchObject({
        history: [{ token: 2, deliveredAt: 0, endedAt: 5, outcome: 'expired' }],
      });
      expect(await q.stats(5)).toMatchObject({ expiries: 2, redeliveries: 2 });
    });

    it('R12 expired deliveries and those of an ended session return together in token order', async () => {
      const q = await h.queue({ visibility: 10 });
      await q.publishBatch(
        0,
        ['a', 'b', 'c', 'd'].map((id) => ({ id })),
      );
      const s = await q.openSession(0, { timeout: 4 });
      await q.reserve(0, { visibility: 5 }); // 1 a, deadline 5
      await q.reserve(0, { session: s }); // 2 b, deadline 10, session ends at 4
      await q.reserve(0); // 3 c, deadline 10
      expect(await q.ack(6, 3)).toBe(true);
      expect(await q.inspect()).toEqual(view(6, { ready: ['a', 'b', 'd'] }));
      expect(await q.job('a')).toMatchObject({
        history: [{ token: 1, deliveredAt: 0, endedAt: 6, outcome: 'expired' }],
      });
      expect(await q.job('b')).toMatchObject({
        history: [{ token: 2, deliveredAt: 0, endedAt: 6, outcome: 'session-ended' }],
      });
      expect(await q.stats(6)).toMatchObject({ expiries: 1, sessionReleases: 1, sessions: 0 });
    });
  });

  describe('R13 maxDeliveries', () => {
    it('R13 the default is 10: the tenth expiry dead-letters with reason "max-deliveries"', async () => {
      const q = await h.queue({ visibility: 1 });
      expect((await q.options()).maxDeliveries).toBe(10);
      await q.publish(0, { id: 'a' });
      for (let now = 0; now < 10; now++) {
        expect((await q.reserve(now))[0]).toMatchObject({ token: now + 1, deliveryCount: now + 1 });
      }
      await q.stats(10);
      expect(await q.inspect()).toEqual(
        view(10, { dead: [{ id: 'a', reason: 'max-deliveries', deliveryCount: 10 }] }),
      );
      expect(await q.stats(10)).toMatchObject({
        expiries: 10,
        deadLetters: { 'max-deliveries': 1 },
      });
    });

    it('R13 a job at maxDeliveries is dead-lettered instead of returning, by expiry, nack or session end', async () => {
      const q = await h.queue({ visibility: 5, maxDeliveries: 2 });
      await q.publishBatch(
        0,
        ['x', 'y', 'z', 'w'].map((id) => ({ id })),
      );
      const s = await q.openSession(0);
      await q.reserve(0, { max: 3 }); // 1 x, 2 y, 3 z
      await q.reserve(0, { session: s }); // 4 w
      expect(await q.nackUpTo(0, s, 4)).toBe(1);
      await q.stats(5); // all expire once, back in token order
      expect(await q.inspect()).toEqual(view(5, { ready: ['x', 'y', 'z', 'w'] }));
      await q.reserve(5, { max: 3 }); // 5 x, 6 y, 7 z
      await q.reserve(5, { session: s }); // 8 w
      expect(await q.nack(6, 5)).toBe(true); // x: requeue → dead
      expect(await q.nack(6, 6, { delay: 9 })).toBe(true); // y: requeue later → dead
      expect(await q.closeSession(7, s)).toBe(1); // w: session end → dead
      await q.stats(10); // z: expiry → dead
      expect(await q.inspect()).toEqual(
        view(10, {
          dead: [
            { id: 'x', reason: 'max-deliveries', deliveryCount: 2 },
            { id: 'y', reason: 'max-deliveries', deliveryCount: 2 },
            { id: 'w', reason: 'max-deliveries', deliveryCount: 2 },
            { id: 'z', reason: 'max-deliveries', deliveryCount: 2 },
          ],
        }),
      );
      expect(
        (await q.deadLetters()).map((d) => [d.id, d.deadAt, d.history.map((a) => a.outcome)]),
      ).toEqual([
        ['x', 6, ['expired', 'requeued']],
        ['y', 6, ['expired', 'requeued']],
        ['w', 7, ['requeued', 'session-ended']],
        ['z', 10, ['expired', 'expired']],
      ]);
    });

    it('R13 maxDeliveries 1 dead-letters on the first return; Infinity never does', async () => {
      const once = await h.queue({ visibility: 2, maxDeliveries: 1 });
      await once.publish(0, { id: 'a' });
      await once.reserve(0);
      await once.stats(2);
      expect(await once.inspect()).toEqual(
        view(2, { dead: [{ id: 'a', reason: 'max-deliveries', deliveryCount: 1 }] }),
      );
      const never = await h.queue({ visibility: 2, maxDeliveries: Number.POSITIVE_INFINITY });
      expect((await never.options()).maxDeliveries).toBe(Number.POSITIVE_INFINITY);
      await never.publish(0, { id: 'a' });
      for (let now = 0; now < 50; now += 2) await never.reserve(now);
      expect(await never.inspect()).toEqual(
        view(48, { active: [{ token: 25, id: 'a', deadline: 50, deliveryCount: 25 }] }),
      );
    });
  });

  describe('R14 dead letters', () => {
    it('R14 a dead job keeps its payload and history until redriven or purged', async () => {
      const q = await h.queue({ visibility: 5, maxDeliveries: 2 });
      await q.publish(0, { id: 'a', payload: { n: 1 } });
      await q.reserve(0); // 1
      await q.nack(2, 1); // requeued
      await q.reserve(3, { visibility: 2 }); // 2, expires at 5 → dead
      await q.stats(5);
      const dead = {
        id: 'a',
        payload: { n: 1 },
        reason: 'max-deliveries',
        deliveryCount: 2,
        deadAt: 5,
        history: [
          { token: 1, deliveredAt: 0, endedAt: 2, outcome: 'requeued' },
          { token: 2, deliveredAt: 3, endedAt: 5, outcome: 'expired' },
        ],
      };
      expect(await q.deadLetters()).toEqual([dead]);
      expect(await q.job('a')).toEqual({ ...dead, state: 'dead', publishedAt: 0 });
      expect(await q.publish(9, { id: 'a' })).toEqual({ id: 'a', duplicate: true });
      expect(await q.reserve(9)).toEqual([]);
      expect(await q.deadLetters()).toEqual([dead]);
    });

    it('R14 a history of more than 100 attempts keeps its first and its latest 99', async () => {
      const q = await h.queue({ visibility: 5, maxDeliveries: Number.POSITIVE_INFINITY });
      await q.publish(0, { id: 'a' });
      for (let n = 1; n <= 105; n++) {
        const [delivery] = await q.reserve(n);
        expect(delivery?.token).toBe(n);
        await q.nack(n, n);
      }
      const history = (await q.job('a'))?.history ?? [];
      expect(history).toHaveLength(100);
      expect(history.map((attempt) => attempt.token)).toEqual([
        1,
        ...Array.from({ length: 99 }, (_, index) => index + 7),
      ]);
      expect(history[0]).toEqual({ token: 1, deliveredAt: 1, endedAt: 1, outcome: 'requeued' });
    });

    it('R14 redrive moves dead jobs to the back of ready with deliveryCount 0, keeping history', async () => {
      const q = await h.queue({ visibility: 5 });
      await q.publishBatch(
        0,
        ['a', 'b', 'c'].map((id) => ({ id })),
      );
      await q.reserve(0, { max: 2 }); // 1 a, 2 b
      await q.reject(1, 2, { requeue: false });
      await q.reject(1, 1, { requeue: false, reason: 'bad' });
      expect(await q.redrive(2, ['a', 'missing'])).toBe(1);
      expect(await q.inspect()).toEqual(
        view(2, { ready: ['c', 'a'], dead: [{ id: 'b', reason: 'rejected', deliveryCount: 1 }] }),
      );
      expect(await q.job('a')).toEqual({
        id: 'a',
        payload: undefined,
        state: 'ready',
        deliveryCount: 0,
        publishedAt: 0,
        history: [{ token: 1, deliveredAt: 0, endedAt: 1, outcome: 'rejected', reason: 'bad' }],
      });
      expect(await q.redrive(3)).toBe(1);
      expect(await q.redrive(3)).toBe(0);
      expect(await q.inspect()).toEqual(view(3, { ready: ['c', 'a', 'b'] }));
      expect(await q.reserve(3, { max: 3 })).toEqual([
        {
          token: 3,
          id: 'c',
          payload: undefined,
          deadline: 8,
          deliveryCount: 1,
          redelivered: false,
        },
        {
          token: 4,
          id: 'a',
          payload: undefined,
          deadline: 8,
          deliveryCount: 1,
          redelivered: false,
        },
        {
          token: 5,
          id: 'b',
          payload: undefined,
          deadline: 8,
          deliveryCount: 1,
          redelivered: false,
        },
      ]);
      expect(await q.stats(3)).toMatchObject({ redriven: 2, dead: 0 });
    });

    it('R14 purge removes dead jobs for good (all, or those named); only dead jobs', async () => {
      const q = await h.queue({ visibility: 5 });
      await q.publishBatch(
        0,
        ['a', 'b', 'c', 'd'].map((id) => ({ id })),
      );
      await q.reserve(0, { max: 3 }); // 1 a, 2 b, 3 c
      for (const token of [1, 2]) await q.reject(1, token, { requeue: false });
      expect(await q.purge(2, ['a', 'c', 'd', 'missing'])).toBe(1);
      expect(await q.inspect()).toEqual(
        view(2, {
          ready: ['d'],
          active: [{ token: 3, id: 'c', deadline: 5, deliveryCount: 1 }],
          dead: [{ id: 'b', reason: 'rejected', deliveryCount: 1 }],
        }),
      );
      expect(await q.job('a')).toBeUndefined();
      expect(await q.purge(3)).toBe(1);
      expect(await q.purge(3)).toBe(0);
      expect(await q.deadLetters()).toEqual([]);
      expect(await q.publish(3, { id: 'b' })).toEqual({ id: 'b', duplicate: false });
      expect(await q.stats(3)).toMatchObject({ purged: 2, dead: 0, deadLetters: { rejected: 2 } });
    });
  });
});
