import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../src/core/index.js';
import type { QueueHandle } from '../../src/engine/index.js';
import { useConformanceEngines } from './engines.js';
import { describeEngines } from './suite.js';

const engines = await useConformanceEngines();

/** Publishes `count` jobs j000… and reserves them all at `now`: tokens in id order. */
async function inFlight(q: QueueHandle, count: number, now = 0): Promise<string[]> {
  const ids = Array.from({ length: count }, (_, i) => `j${String(i).padStart(3, '0')}`);
  // In batches a server takes (at most 100 entries each).
  for (let at = 0; at < ids.length; at += 50) {
    await q.publishBatch(
      now,
      ids.slice(at, at + 50).map((id) => ({ id })),
    );
  }
  for (let taken = 0; taken < count; taken += 50) await q.reserve(now, { max: 50 });
  return ids;
}

/** Every page, read with `limit`, as lists of ids. */
async function pages(q: QueueHandle, limit: number): Promise<string[][]> {
  const all: string[][] = [];
  let after: string | undefined;
  do {
    const page = await q.deliveryPage({ limit, ...(after === undefined ? {} : { after }) });
    all.push(page.deliveries.map((delivery) => delivery.id));
    after = page.next;
  } while (after !== undefined);
  return all;
}

describeEngines(engines, (h) => {
  describe('R34 live deliveries in pages', () => {
    it('R34 pages follow token order, each after the last, and the last has no next', async () => {
      const q = await h.queue({ visibility: 100 });
      await q.publishBatch(
        1,
        ['a', 'b', 'c', 'd', 'e', 'f', 'g'].map((id) => ({ id })),
      );
      const session = await q.openSession(2);
      await q.reserve(3, { session, max: 2 });
      await q.reserve(4, { max: 5 });
      expect(await pages(q, 3)).toEqual([['a', 'b', 'c'], ['d', 'e', 'f'], ['g']]);
      // A last page that is full still says no next: no empty page follows.
      expect(await pages(q, 7)).toEqual([['a', 'b', 'c', 'd', 'e', 'f', 'g']]);
      expect(await pages(q, 1)).toHaveLength(7);
      // The pages hold what deliveries() holds: delivery time, deadline, session.
      const first = await q.deliveryPage({ limit: 3 });
      expect(first.deliveries).toEqual((await q.deliveries()).slice(0, 3));
      expect(first.deliveries[0]).toEqual({
        token: 1,
        id: 'a',
        deliveredAt: 3,
        deadline: 103,
        deliveryCount: 1,
        session,
      });
      expect(first.deliveries[2]).toEqual({
        token: 3,
        id: 'c',
        deliveredAt: 4,
        deadline: 104,
        deliveryCount: 1,
      });
    });

    it('R34 by default a page holds up to 100; no delivery in flight is one empty page', async () => {
      const q = await h.queue({ visibility: 1000 });
      expect(await q.deliveryPage()).toEqual({ deliveries: [] });
      const ids = await inFlight(q, 101);
      const page = await q.deliveryPage();
      expect(page.deliveries.map((delivery) => delivery.id)).toEqual(ids.slice(0, 100));
      expect(page.next).toEqual(expect.any(String));
      const rest = await q.deliveryPage({ after: page.next });
      expect(rest).toEqual({ deliveries: [expect.objectContaining({ id: 'j100', token: 101 })] });
      // A whole page of the most there may be.
      const most = await q.deliveryPage({ limit: 1000 });
      expect(most.deliveries.map((delivery) => delivery.id)).toEqual(ids);
      expect(most.next).toBeUndefined();
    });

    it('R34 a cursor outlives the deliveries it passed; a job delivered again comes after every page read', async () => {
      const q = await h.queue({ visibility: 100 });
      await q.publishBatch(
        1,
        ['a', 'b', 'c', 'd', 'e'].map((id) => ({ id })),
      );
      await q.reserve(1, { max: 5 });
      const first = await q.deliveryPage({ limit: 2 });
      expect(first.deliveries.map((delivery) => delivery.id)).toEqual(['a', 'b']);
      // The deliveries the cursor passed end: b is acked, a given back and delivered again.
      expect(await q.ack(2, 2)).toBe(true);
      expect(await q.nack(2, 1)).toBe(true);
      const [again] = await q.reserve(3);
      expect(again).toMatchObject({ id: 'a', token: 6 });
      const second = await q.deliveryPage({ limit: 2, after: first.next });
      expect(second.deliveries.map((delivery) => delivery.id)).toEqual(['c', 'd']);
      const third = await q.deliveryPage({ limit: 2, after: second.next });
      expect(third).toEqual({
        deliveries: [
          expect.objectContaining({ id: 'e', token: 5 }),
          expect.objectContaining({ id: 'a', token: 6, deliveryCount: 2 }),
        ],
      });
      // A cursor past every live delivery reads an empty last page.
      for (const token of [3, 4, 5, 6]) expect(await q.ack(4, token)).toBe(true);
      expect(await q.deliveryPage({ after: second.next })).toEqual({ deliveries: [] });
    });

    it('R34 reading a page takes no time: a delivery past its deadline is listed until the next operation', async () => {
      const q = await h.queue({ visibility: 10 });
      await q.publish(1, { id: 'a' });
      await q.reserve(1);
      expect(await q.queueTime()).toBe(1);
      expect((await q.deliveryPage()).deliveries).toEqual([
        expect.objectContaining({ id: 'a', deadline: 11 }),
      ]);
      expect(await q.queueTime()).toBe(1);
    });

    it('R34 a bad limit, cursor or option is a typed error and changes nothing', async () => {
      const q = await h.queue({ visibility: 100 });
      await inFlight(q, 2, 1);
      const before = await q.inspect();
      for (const options of [
        { limit: 0 },
        { limit: 1001 },
        { limit: 1.5 },
        { limit: '3' },
        { after: 'x' },
        { after: '0' },
        { after: '-1' },
        { after: 2 },
        { after: '99999999999999999' },
        { limit: 2, payloads: false },
        [],
      ]) {
        const error = await q.deliveryPage(options as never).catch((e: unknown) => e);
        expect(error, JSON.stringify(options)).toBeInstanceOf(ValidationError);
        expect((error as ValidationError).code).toBe('INVALID_ARGUMENT');
      }
      expect(await q.inspect()).toEqual(before);
    });
  });
});
