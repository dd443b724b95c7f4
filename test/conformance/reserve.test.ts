import { describe, expect, it } from 'vitest';
import type { Delivery } from '../../src/core/index.js';
import { view } from './assertions.js';
import { useConformanceEngines } from './engines.js';
import { describeEngines } from './suite.js';

const engines = await useConformanceEngines();

describeEngines(engines, (h) => {
  describe('R6 reserve', () => {
    it('R6 reserve takes at most max jobs from the front, tokens counting from 1, deadline now + visibility', async () => {
      const q = await h.queue({ visibility: 5 });
      await q.publishBatch(0, [
        { id: 'a', payload: 'A' },
        { id: 'b', payload: 'B' },
        { id: 'c', payload: 'C' },
      ]);
      expect(await q.reserve(2)).toEqual([
        { token: 1, id: 'a', payload: 'A', deadline: 7, deliveryCount: 1, redelivered: false },
      ]);
      expect(await q.reserve(3, { max: 5, visibility: 9 })).toEqual([
        { token: 2, id: 'b', payload: 'B', deadline: 12, deliveryCount: 1, redelivered: false },
        { token: 3, id: 'c', payload: 'C', deadline: 12, deliveryCount: 1, redelivered: false },
      ]);
      expect(await q.reserve(3, { max: 5 })).toEqual([]);
      expect(await q.inspect()).toEqual(
        view(3, {
          active: [
            { token: 1, id: 'a', deadline: 7, deliveryCount: 1 },
            { token: 2, id: 'b', deadline: 12, deliveryCount: 1 },
            { token: 3, id: 'c', deadline: 12, deliveryCount: 1 },
          ],
        }),
      );
      expect(await q.stats(3)).toMatchObject({ deliveries: 3, redeliveries: 0, active: 3 });
    });

    it('R6 a job delivered again gets a new token, deliveryCount + 1 and redelivered true', async () => {
      const q = await h.queue({ visibility: 5 });
      await q.publish(0, { id: 'a' });
      await q.reserve(0); // 1
      await q.nack(1, 1); // count 1
      await q.reserve(1); // 2, expires at 6
      const [third] = await q.reserve(6);
      expect(third).toEqual({
        token: 3,
        id: 'a',
        payload: undefined,
        deadline: 11,
        deliveryCount: 3,
        redelivered: true,
      });
      expect(await q.stats(6)).toMatchObject({ deliveries: 3, redeliveries: 2, expiries: 1 });
    });

    it('R6 the queue prefetch bounds active deliveries of the whole queue', async () => {
      const q = await h.queue({ visibility: 5, prefetch: 2 });
      await q.publishBatch(0, [{ id: 'a' }, { id: 'b' }, { id: 'c' }, { id: 'd' }]);
      const s = await q.openSession(0);
      expect((await q.reserve(0, { max: 5 })).map((d) => d.token)).toEqual([1, 2]);
      expect(await q.reserve(0, { max: 5, session: s })).toEqual([]);
      expect(await q.ack(1, 1)).toBe(true);
      expect((await q.reserve(1, { max: 5, session: s })).map((d) => [d.token, d.id])).toEqual([
        [3, 'c'],
      ]);
      expect(await q.reserve(1)).toEqual([]);
      expect(await q.inspect()).toEqual(
        view(1, {
          ready: ['d'],
          active: [
            { token: 2, id: 'b', deadline: 5, deliveryCount: 1 },
            { token: 3, id: 'c', deadline: 6, deliveryCount: 1, session: s },
          ],
        }),
      );
    });

    it('R6 a session prefetch bounds that session’s live deliveries only', async () => {
      const q = await h.queue({ visibility: 5 });
      await q.publishBatch(0, [{ id: 'a' }, { id: 'b' }, { id: 'c' }, { id: 'd' }, { id: 'e' }]);
      const one = await q.openSession(0, { prefetch: 1 });
      const two = await q.openSession(0, { prefetch: 2 });
      expect((await q.reserve(0, { max: 3, session: one })).map((d) => d.id)).toEqual(['a']);
      expect(await q.reserve(0, { max: 3, session: one })).toEqual([]);
      expect((await q.reserve(0, { max: 3, session: two })).map((d) => d.id)).toEqual(['b', 'c']);
      expect((await q.reserve(0, { max: 3 })).map((d) => d.id)).toEqual(['d', 'e']);
      expect(await q.ack(0, 1)).toBe(true);
      await q.publish(0, { id: 'f' });
      expect((await q.reserve(0, { max: 3, session: one })).map((d) => [d.token, d.id])).toEqual([
        [6, 'f'],
      ]);
    });

    it('R6 an empty queue reserves nothing and takes no token', async () => {
      const q = await h.queue({ visibility: 5 });
      expect(await q.reserve(0, { max: 3 })).toEqual([]);
      await q.publish(1, { id: 'a', delay: 5 });
      expect(await q.reserve(5)).toEqual([]);
      expect((await q.reserve(6)).map((d) => d.token)).toEqual([1]);
    });

    it('R6 tokens are never reused: acked, expired, nacked and dead deliveries all keep theirs', async () => {
      const q = await h.queue({ visibility: 5, maxDeliveries: 2 });
      await q.publishBatch(0, [{ id: 'a' }, { id: 'b' }]);
      const tokens: number[] = [];
      const take = async (now: number) => {
        for (const d of await q.reserve(now, { max: 2 })) tokens.push(d.token);
      };
      await take(0); // 1 a, 2 b
      await q.ack(1, 1);
      await q.nack(1, 2);
      await take(1); // 3 b
      await take(6); // b expired and is dead (max 2): nothing
      await q.redrive(6);
      await q.publish(6, { id: 'a' });
      await take(6); // 4 b, 5 a
      expect(tokens).toEqual([1, 2, 3, 4, 5]);
      expect(await q.ack(7, 3)).toBe(false);
      expect(await q.ackMany(7, [4, 5])).toEqual([true, true]);
    });
  });

  describe('R7 fencing', () => {
    it('R7 every later delivery of a queue carries a larger token', async () => {
      const q = await h.queue({ visibility: 3, maxDeliveries: Number.POSITIVE_INFINITY });
      await q.publishBatch(0, [{ id: 'a' }, { id: 'b' }, { id: 'c' }]);
      const seen: Delivery[] = [];
      for (let now = 0; now < 30; now += 2) {
        const got = await q.reserve(now, { max: 2 });
        seen.push(...got);
        if (got[0] !== undefined && now % 4 === 0) await q.nack(now, got[0].token);
      }
      const tokens = seen.map((d) => d.token);
      expect(tokens.length).toBeGreaterThan(10);
      expect(tokens).toEqual(tokens.map((_, i) => i + 1));
      // A resource remembering the largest token it accepted refuses every older owner.
      const [latest] = await q.reserve(40);
      expect(latest?.token).toBe(tokens.length + 1);
      for (const d of seen.filter((old) => old.id === latest?.id)) {
        expect(d.token).toBeLessThan(latest?.token as number);
        expect(await q.ack(40, d.token)).toBe(false);
      }
      expect(await q.ack(40, latest?.token as number)).toBe(true);
    });
  });
});
