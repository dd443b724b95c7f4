import { describe, expect, it } from 'vitest';
import { build, ValidationError } from '../../src/core/index.js';
import { expectRefusedUnchanged, view } from './assertions.js';
import { useConformanceEngines } from './engines.js';
import { describeEngines } from './suite.js';

const engines = await useConformanceEngines();

describeEngines(engines, (h) => {
  describe('R33 a delivery given back unworked', () => {
    it('R33 is no delivery of its job: deliveryCount back, no attempt, never dead of max-deliveries', async () => {
      const q = await h.queue({ visibility: 10, maxDeliveries: 2 });
      await q.publishBatch(0, [{ id: 'a' }, { id: 'b' }]);
      // Given back unworked many times over: still a first delivery, never dead.
      for (let round = 0; round < 5; round += 1) {
        const [a] = await q.reserve(round, { max: 1 });
        expect(a).toMatchObject({ id: 'a', deliveryCount: 1, redelivered: false });
        expect(await q.nack(round, a?.token as number, { attempted: false })).toBe(true);
      }
      expect(await q.inspect()).toEqual(view(4, { ready: ['a', 'b'] }));
      expect(await q.job('a')).toMatchObject({ deliveryCount: 0, history: [] });
      // A worked delivery that fails counts as before (R13): the second is the last.
      const [first] = await q.reserve(5, { max: 1 });
      expect(await q.nack(5, first?.token as number)).toBe(true);
      const [second] = await q.reserve(6, { max: 1 });
      expect(second).toMatchObject({ id: 'a', deliveryCount: 2, redelivered: true });
      // Given back unworked at the limit, it goes back to ready, not to the dead set.
      expect(await q.nack(6, second?.token as number, { attempted: false })).toBe(true);
      expect(await q.job('a')).toMatchObject({
        state: 'ready',
        deliveryCount: 1,
        history: [{ token: 6, deliveredAt: 5, endedAt: 5, outcome: 'requeued' }],
      });
      const [third] = await q.reserve(7, { max: 1 });
      expect(await q.nack(7, third?.token as number)).toBe(true);
      expect(await q.inspect()).toEqual(
        view(7, { ready: ['b'], dead: [{ id: 'a', reason: 'max-deliveries', deliveryCount: 2 }] }),
      );
      // Counted as nacks, and apart as unworked; the deliveries themselves were made.
      expect(await q.stats(7)).toMatchObject({
        deliveries: 8,
        nacks: 8,
        unworked: 6,
        redeliveries: 2,
      });
    });

    it('R33 the token dies as with any nack; a delay or a session is honoured', async () => {
      const q = await h.queue({ visibility: 10 });
      await q.publishBatch(0, [{ id: 'a' }, { id: 'b' }, { id: 'c' }]);
      const [a] = await q.reserve(0, { max: 1 });
      expect(await q.nack(1, a?.token as number, { attempted: false, delay: 3 })).toBe(true);
      expect(await q.ack(1, a?.token as number)).toBe(false);
      expect(await q.nack(1, a?.token as number, { attempted: false })).toBe(false);
      expect(await q.inspect()).toEqual(
        view(1, { ready: ['b', 'c'], delayed: [{ id: 'a', availableAt: 4 }] }),
      );
      const session = await q.openSession(1);
      const taken = await q.reserve(1, { max: 2, session });
      expect(taken.map((d) => d.id)).toEqual(['b', 'c']);
      expect(await q.nackUpTo(2, session, taken[1]?.token as number, { attempted: false })).toBe(2);
      expect(await q.inspect()).toEqual(
        view(2, { ready: ['b', 'c'], delayed: [{ id: 'a', availableAt: 4 }] }),
      );
      expect(await q.job('c')).toMatchObject({ deliveryCount: 0, history: [] });
      expect(await q.stats(2)).toMatchObject({ nacks: 3, unworked: 3, staleNacks: 1 });
    });

    it('R33 build.giveBack returns deliveries unworked, the jobs in the order they were taken', async () => {
      const q = await h.queue({ visibility: 10 });
      await q.publishBatch(0, [{ id: 'a' }, { id: 'b' }, { id: 'c' }, { id: 'd' }]);
      const taken = await q.reserve(0, { max: 3 });
      const outcomes = await q.execute(1, build.giveBack(taken.map((d) => d.token)));
      expect(outcomes).toEqual([
        { ok: true, value: true },
        { ok: true, value: true },
        { ok: true, value: true },
      ]);
      expect(await q.inspect()).toEqual(view(1, { ready: ['a', 'b', 'c', 'd'] }));
      expect(await q.stats(1)).toMatchObject({ nacks: 3, unworked: 3 });
      expect(await q.job('a')).toMatchObject({ deliveryCount: 0, history: [] });
    });

    it('R33 unworked with requeue false is refused and changes nothing', async () => {
      const q = await h.queue({ visibility: 10 });
      await q.publish(0, { id: 'a' });
      const [a] = await q.reserve(0);
      const error = await expectRefusedUnchanged(
        q,
        () => q.nack(1, a?.token as number, { attempted: false, requeue: false }),
        ValidationError,
        'INVALID_ARGUMENT',
      );
      expect(error.message).toMatch(/attempted/);
      await expectRefusedUnchanged(
        q,
        // biome-ignore lint/suspicious/noExplicitAny: bad input on purpose, past the types
        () => q.nack(1, a?.token as number, { attempted: 'no' as any }),
        ValidationError,
        'INVALID_ARGUMENT',
      );
    });
  });
});
