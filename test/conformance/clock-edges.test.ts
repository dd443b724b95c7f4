import { describe, expect, it } from 'vitest';
import { ClockError } from '../../src/core/index.js';
import type { QueueHandle } from '../../src/engine/index.js';
import { expectRefusedUnchanged, view } from './assertions.js';
import { busyQueue } from './busy-queue.js';
import { useConformanceEngines } from './engines.js';
import { describeEngines } from './suite.js';

const engines = await useConformanceEngines();

/** Every operation that takes `now`, with arguments that would be accepted at a good `now`. */
const TIMED_OPERATIONS: [
  string,
  (q: QueueHandle, now: number, session: string) => Promise<unknown>,
][] = [
  ['publish', (q, now) => q.publish(now, { id: 'x' })],
  ['publishBatch', (q, now) => q.publishBatch(now, [{ id: 'x' }])],
  ['reserve', (q, now) => q.reserve(now)],
  ['ack', (q, now) => q.ack(now, 2)],
  ['ackMany', (q, now) => q.ackMany(now, [1, 2])],
  ['nack', (q, now) => q.nack(now, 2)],
  ['reject', (q, now) => q.reject(now, 2, { requeue: false })],
  ['extend', (q, now) => q.extend(now, 2, 100)],
  ['openSession', (q, now) => q.openSession(now)],
  ['heartbeat', (q, now, s) => q.heartbeat(now, s)],
  ['closeSession', (q, now, s) => q.closeSession(now, s)],
  ['ackUpTo', (q, now, s) => q.ackUpTo(now, s, 10)],
  ['nackUpTo', (q, now, s) => q.nackUpTo(now, s, 10)],
  ['redrive', (q, now) => q.redrive(now)],
  ['purge', (q, now) => q.purge(now)],
  ['stats', (q, now) => q.stats(now)],
];

/** Refused `now` values at clock 7 beyond the ones of time.test.ts: −∞, and the clock as text. */
const MORE_BAD_NOWS: unknown[] = [Number.NEGATIVE_INFINITY, '7', '6'];

describeEngines(engines, (h) => {
  describe('R2 the clock never goes back: more refused values', () => {
    it('R2 every timed operation refuses −Infinity and a now given as text (even the clock itself), and nothing changes', async () => {
      // A refused call changes nothing, so one busy queue serves every operation.
      const { queue, session } = await busyQueue(h);
      for (const [name, operation] of TIMED_OPERATIONS) {
        for (const now of MORE_BAD_NOWS) {
          const error = await expectRefusedUnchanged(
            queue,
            () => operation(queue, now as number, session),
            ClockError,
            'INVALID_CLOCK',
          ).catch((failure: Error) => {
            throw new Error(`${name} at ${String(now)}: ${failure.message}`, { cause: failure });
          });
          // Over HTTP `now` is the server's; JSON carries only a finite refused now back.
          if (!h.viaClient || Number.isFinite(now)) expect(Object.is(error.now, now)).toBe(true);
          expect(error.queueTime).toBe(7);
        }
      }
      expect(await queue.queueTime()).toBe(7);
    });

    it('R2 many operations at one tick: publish, reserve, ack, nack, extend and reserve again', async () => {
      const q = await h.queue({ visibility: 3 });
      await q.publish(5, { id: 'a' });
      await q.publish(5, { id: 'b' });
      await q.publish(5, { id: 'c', delay: 0 });
      const ds = await q.reserve(5, { max: 3 });
      expect(ds.map((d) => [d.token, d.deadline])).toEqual([
        [1, 8],
        [2, 8],
        [3, 8],
      ]);
      expect(await q.ack(5, 1)).toBe(true);
      expect(await q.nack(5, 2)).toBe(true);
      expect(await q.extend(5, 3, 7)).toBe(12);
      expect((await q.reserve(5))[0]).toMatchObject({
        token: 4,
        id: 'b',
        deadline: 8,
        deliveryCount: 2,
      });
      expect(await q.ack(5, 1)).toBe(false);
      expect(await q.inspect()).toEqual(
        view(5, {
          active: [
            { token: 3, id: 'c', deadline: 12, deliveryCount: 1 },
            { token: 4, id: 'b', deadline: 8, deliveryCount: 2 },
          ],
        }),
      );
      expect(await q.stats(5)).toMatchObject({
        queueTime: 5,
        acks: 1,
        nacks: 1,
        extensions: 1,
        staleAcks: 1,
      });
    });
  });

  describe('R3 every operation first advances the clock: more cases', () => {
    it('R3 a view returned by inspect() is the caller’s: changing it changes nothing in the queue', async () => {
      const q = await h.queue({ visibility: 2 });
      await q.publish(0, { id: 'a' });
      await q.reserve(0);
      const first = await q.inspect();
      first.ready.push('mutated');
      first.active.length = 0;
      expect(await q.inspect()).toEqual(
        view(0, { active: [{ token: 1, id: 'a', deadline: 2, deliveryCount: 1 }] }),
      );
      expect(await q.queueTime()).toBe(0);
      expect(await q.deadLetters()).toEqual([]);
      expect(await q.queueTime()).toBe(0);
    });

    it('R3 R8 a false ack reclaims the other due deliveries before answering', async () => {
      const q = await h.queue();
      await q.publishBatch(0, [{ id: 'a' }, { id: 'b' }, { id: 'c' }, { id: 'd' }]);
      await q.reserve(0, { visibility: 4 }); // 1 a, deadline 4
      await q.reserve(1, { visibility: 2 }); // 2 b, deadline 3
      await q.reserve(1, { visibility: 20 }); // 3 c, deadline 21
      expect(await q.ack(4, 2)).toBe(false);
      expect(await q.inspect()).toEqual(
        view(4, {
          ready: ['a', 'b', 'd'],
          active: [{ token: 3, id: 'c', deadline: 21, deliveryCount: 1 }],
        }),
      );
      expect(await q.stats(4)).toMatchObject({ staleAcks: 1, expiries: 2, acks: 0 });
    });
  });
});
