import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../src/core/index.js';
import { expectRefusedUnchanged, view } from './assertions.js';
import { useConformanceEngines } from './engines.js';
import { describeEngines } from './suite.js';

const engines = await useConformanceEngines();

describeEngines(engines, (h) => {
  describe('R9 R14 what went wrong in an attempt', () => {
    it('R9 a nack error is kept with its attempt, requeued or dead, and through a redrive', async () => {
      const q = await h.queue({ visibility: 10, maxDeliveries: 3 });
      await q.publish(0, { id: 'a' });
      const [first] = await q.reserve(0, { max: 1 });
      expect(await q.nack(1, first?.token as number, { error: 'TypeError: x is undefined' })).toBe(
        true,
      );
      const [second] = await q.reserve(2, { max: 1 });
      // With requeue the dead-letter reason has no place; the error has.
      expect(
        await q.nack(3, second?.token as number, {
          reason: 'ignored',
          error: 'timed out',
          delay: 2,
        }),
      ).toBe(true);
      expect(await q.job('a')).toMatchObject({
        state: 'delayed',
        history: [
          {
            token: 1,
            deliveredAt: 0,
            endedAt: 1,
            outcome: 'requeued',
            error: 'TypeError: x is undefined',
          },
          { token: 2, deliveredAt: 2, endedAt: 3, outcome: 'requeued', error: 'timed out' },
        ],
      });
      expect((await q.job('a'))?.history[1]).not.toHaveProperty('reason');
      const [third] = await q.reserve(5, { max: 1 });
      expect(
        await q.nack(6, third?.token as number, {
          requeue: false,
          reason: 'poison',
          error: 'RangeError: 🙂 too big',
        }),
      ).toBe(true);
      const [dead] = await q.deadLetters();
      expect(dead).toMatchObject({ id: 'a', reason: 'poison', deliveryCount: 3 });
      expect(dead?.history.map((a) => [a.outcome, a.reason, a.error])).toEqual([
        ['requeued', undefined, 'TypeError: x is undefined'],
        ['requeued', undefined, 'timed out'],
        ['rejected', 'poison', 'RangeError: 🙂 too big'],
      ]);
      expect(await q.redrive(7)).toBe(1);
      const [fourth] = await q.reserve(7, { max: 1 });
      // A redrive starts the count again (R14) and keeps the history, errors and all.
      expect(await q.nack(8, fourth?.token as number, { error: 'again' })).toBe(true);
      expect(await q.job('a')).toMatchObject({ state: 'ready', deliveryCount: 1 });
      expect((await q.job('a'))?.history.map((a) => a.error)).toEqual([
        'TypeError: x is undefined',
        'timed out',
        'RangeError: 🙂 too big',
        'again',
      ]);
    });

    it('R11 nackUpTo keeps its error with each attempt it ends', async () => {
      const q = await h.queue({ visibility: 10 });
      await q.publishBatch(0, [{ id: 'a' }, { id: 'b' }, { id: 'c' }]);
      const session = await q.openSession(0);
      const taken = await q.reserve(0, { max: 3, session });
      expect(
        await q.nackUpTo(1, session, taken[1]?.token as number, { error: 'lost the db' }),
      ).toBe(2);
      expect(await q.inspect()).toMatchObject({ ready: ['a', 'b'] });
      for (const id of ['a', 'b']) {
        expect((await q.job(id))?.history).toEqual([
          {
            token: id === 'a' ? 1 : 2,
            deliveredAt: 0,
            endedAt: 1,
            outcome: 'requeued',
            error: 'lost the db',
          },
        ]);
      }
      expect((await q.job('c'))?.history).toEqual([]);
    });

    it('R9 R18 an error that is empty, too long or not storable, or with attempted false, is refused and changes nothing', async () => {
      const q = await h.queue({ visibility: 10 });
      await q.publish(0, { id: 'a' });
      const [a] = await q.reserve(0, { max: 1 });
      const token = a?.token as number;
      for (const error of ['', 'x'.repeat(1025), 'nul \u0000 inside', 'lone \ud800 half', 42]) {
        await expectRefusedUnchanged(
          q,
          () => q.nack(1, token, { error } as never),
          ValidationError,
          'INVALID_ARGUMENT',
        );
      }
      await expectRefusedUnchanged(
        q,
        () => q.nack(1, token, { attempted: false, error: 'not worked' }),
        ValidationError,
        'INVALID_ARGUMENT',
      );
      // 1024 characters is the longest taken.
      expect(await q.nack(1, token, { error: 'y'.repeat(1024) })).toBe(true);
      expect((await q.job('a'))?.history[0]?.error).toBe('y'.repeat(1024));
      expect(await q.inspect()).toEqual(view(1, { ready: ['a'] }));
    });
  });
});
