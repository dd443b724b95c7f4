import { describe, expect, it } from 'vitest';
import { settleNeverIssued, view } from './assertions.js';
import { useConformanceEngines } from './engines.js';
import { describeEngines } from './suite.js';

const engines = await useConformanceEngines();

describeEngines(engines, (h) => {
  describe('R4 publish: more cases', () => {
    it('R4 fifty generated ids are unique non-empty strings, ready in publish order', async () => {
      const q = await h.queue();
      const results = await q.publishBatch(
        0,
        Array.from({ length: 50 }, () => ({})),
      );
      for (const r of results) {
        expect(typeof r.id).toBe('string');
        expect(r.id.length).toBeGreaterThan(0);
        expect(r.duplicate).toBe(false);
      }
      expect(new Set(results.map((r) => r.id)).size).toBe(50);
      expect((await q.inspect()).ready).toEqual(results.map((r) => r.id));
    });

    it('R4 an acked id published again (dedupWindow 0) is delivered as a first delivery', async () => {
      const q = await h.queue();
      await q.publish(0, { id: 'a', payload: 'A' });
      const [d] = await q.reserve(0);
      expect(await q.ack(1, d?.token as number)).toBe(true);
      expect(await q.publish(1, { id: 'a', payload: 'second' })).toEqual({
        id: 'a',
        duplicate: false,
      });
      expect((await q.reserve(1))[0]).toMatchObject({
        token: 2,
        id: 'a',
        payload: 'second',
        deliveryCount: 1,
        redelivered: false,
      });
    });

    it('R4 R17 publishes refused by dedupWindow count as duplicates', async () => {
      const q = await h.queue({ dedupWindow: 10 });
      await q.publish(0, { id: 'a' });
      await q.reserve(0);
      expect(await q.ack(3, 1)).toBe(true);
      expect(await q.publish(3, { id: 'a' })).toEqual({ id: 'a', duplicate: true });
      expect(await q.publish(12, { id: 'a' })).toEqual({ id: 'a', duplicate: true });
      expect(await q.publish(13, { id: 'a' })).toEqual({ id: 'a', duplicate: false });
      expect(await q.inspect()).toEqual(view(13, { ready: ['a'] }));
      expect(await q.stats(13)).toMatchObject({ published: 2, duplicates: 2 });
    });
  });

  describe('R6 reserve: defaults', () => {
    it('R6 the default visibility is 30000', async () => {
      const q = await h.queue();
      await q.publish(0, { id: 'a' });
      expect((await q.reserve(5))[0]?.deadline).toBe(30_005);
    });
  });

  describe('R9 nack and reject: more cases', () => {
    it('R9 a stale nack or reject (acked, or never issued) returns false and changes nothing', async () => {
      const q = await h.queue({ visibility: 5 });
      await q.publishBatch(0, [{ id: 'a' }, { id: 'b' }]);
      await q.reserve(0);
      expect(await q.ack(1, 1)).toBe(true);
      const before = await q.inspect();
      expect(await q.nack(1, 1)).toBe(false);
      expect(await q.reject(1, 1, { requeue: false })).toBe(false);
      const neverIssued = await settleNeverIssued(
        h,
        () => q.nack(1, 42, { requeue: false }),
        false,
      );
      expect(await q.inspect()).toEqual(before);
      expect(await q.stats(1)).toMatchObject({ nacks: 0, staleNacks: 2 + neverIssued });
    });

    it('R9 reject with a delay is nack with a delay', async () => {
      const q = await h.queue();
      await q.publishBatch(0, [{ id: 'a' }, { id: 'b' }]);
      await q.reserve(0, { max: 2 });
      expect(await q.reject(1, 2)).toBe(true);
      expect(await q.reject(1, 1, { delay: 3 })).toBe(true);
      expect(await q.inspect()).toEqual(
        view(1, { ready: ['b'], delayed: [{ id: 'a', availableAt: 4 }] }),
      );
    });
  });

  describe('R10 extend: more cases', () => {
    it('R10 a lease shortened by extend runs out at its new deadline; a lengthened one holds', async () => {
      const q = await h.queue({ visibility: 5 });
      await q.publishBatch(0, [{ id: 'a' }, { id: 'b' }]);
      await q.reserve(0, { max: 2 });
      expect(await q.extend(3, 1, 10)).toBe(13);
      expect(await q.extend(3, 2, 1)).toBe(4);
      expect((await q.inspect()).active).toEqual([
        { token: 1, id: 'a', deadline: 13, deliveryCount: 1 },
        { token: 2, id: 'b', deadline: 4, deliveryCount: 1 },
      ]);
      expect(await q.ack(4, 2)).toBe(false);
      expect(await q.ack(12, 1)).toBe(true);
      expect(await q.inspect()).toEqual(view(12, { ready: ['b'] }));
    });

    it('R10 R17 extends bounded by maxLease are counted; at the deadline extend is stale (null)', async () => {
      const q = await h.queue({ visibility: 4, maxLease: 10 });
      await q.publish(0, { id: 'a' });
      await q.reserve(2);
      expect(await q.extend(5, 1, 20)).toBe(12);
      expect(await q.extend(9, 1, 2)).toBe(11);
      expect(await q.extend(10, 1, 5)).toBe(12);
      expect(await q.extend(12, 1, 5)).toBeNull();
      const neverIssued = await settleNeverIssued(h, () => q.extend(12, 99, 5), null);
      expect(await q.inspect()).toEqual(view(12, { ready: ['a'] }));
      expect(await q.stats(12)).toMatchObject({
        extensions: 3,
        staleExtends: 1 + neverIssued,
        expiries: 1,
      });
    });
  });

  describe('R11 bulk: more cases', () => {
    it('R11 ackMany answers false for a repeated, an expired and a never-issued token', async () => {
      const q = await h.queue({ visibility: 5 });
      await q.publishBatch(0, [{ id: 'a' }, { id: 'b' }, { id: 'c' }]);
      await q.reserve(0, { max: 2 }); // 1 a, 2 b
      await q.reserve(0, { visibility: 1 }); // 3 c, expires at 1
      const neverIssued = await settleNeverIssued(h, () => q.ackMany(2, [999]), [false]);
      expect(await q.ackMany(2, [1, 1, 3, 2])).toEqual([true, false, false, true]);
      expect(await q.inspect()).toEqual(view(2, { ready: ['c'] }));
      expect(await q.stats(2)).toMatchObject({
        acks: 2,
        staleAcks: 2 + neverIssued,
        expiries: 1,
      });
    });
  });
});
