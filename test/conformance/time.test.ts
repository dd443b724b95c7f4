import { describe, expect, it } from 'vitest';
import { ClockError, SessionClosedError } from '../../src/core/index.js';
import type { QueueHandle } from '../../src/engine/index.js';
import { expectRefusedUnchanged, expectRejection, view } from './assertions.js';
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
  ['ackMany', (q, now) => q.ackMany(now, [2])],
  ['nack', (q, now) => q.nack(now, 2)],
  ['reject', (q, now) => q.reject(now, 2)],
  ['extend', (q, now) => q.extend(now, 2, 5)],
  ['openSession', (q, now) => q.openSession(now)],
  ['heartbeat', (q, now, s) => q.heartbeat(now, s)],
  ['closeSession', (q, now, s) => q.closeSession(now, s)],
  ['ackUpTo', (q, now, s) => q.ackUpTo(now, s, 1)],
  ['nackUpTo', (q, now, s) => q.nackUpTo(now, s, 1)],
  ['redrive', (q, now) => q.redrive(now)],
  ['purge', (q, now) => q.purge(now)],
  ['stats', (q, now) => q.stats(now)],
];

/** `now` values R2 refuses at clock 7: behind it, or not a safe integer ≥ 0. */
const BAD_NOWS: unknown[] = [
  6,
  0,
  7.5,
  Number.NaN,
  Number.POSITIVE_INFINITY,
  -1,
  Number.MAX_SAFE_INTEGER + 1,
  '8',
  null,
  undefined,
];

describeEngines(engines, (h) => {
  describe('R1 time is an argument', () => {
    it('R1 a new queue has clock 0 and accepts now = 0 and any larger safe integer', async () => {
      const q = await h.queue({ visibility: 5 });
      expect(await q.queueTime()).toBe(0);
      expect(await q.inspect()).toEqual(view(0));
      expect(await q.publish(0, { id: 'a' })).toEqual({ id: 'a', duplicate: false });
      const far = Number.MAX_SAFE_INTEGER - 5;
      expect(await q.reserve(far)).toEqual([
        {
          token: 1,
          id: 'a',
          payload: undefined,
          deadline: far + 5,
          deliveryCount: 1,
          redelivered: false,
        },
      ]);
      expect(await q.queueTime()).toBe(far);
      expect(await q.inspect()).toEqual(
        view(far, {
          active: [{ token: 1, id: 'a', deadline: Number.MAX_SAFE_INTEGER, deliveryCount: 1 }],
        }),
      );
      expect(await q.ack(Number.MAX_SAFE_INTEGER - 1, 1)).toBe(true);
      expect(await q.inspect()).toEqual(view(Number.MAX_SAFE_INTEGER - 1));
    });
  });

  describe('R2 the clock never goes back', () => {
    it('R2 now equal to the clock is legal: many operations happen at one tick', async () => {
      const q = await h.queue({ visibility: 5 });
      expect(await q.publish(3, { id: 'a' })).toEqual({ id: 'a', duplicate: false });
      expect(await q.publish(3, { id: 'b' })).toEqual({ id: 'b', duplicate: false });
      expect((await q.reserve(3)).map((d) => [d.token, d.id, d.deadline])).toEqual([[1, 'a', 8]]);
      expect(await q.ack(3, 1)).toBe(true);
      expect((await q.reserve(3)).map((d) => [d.token, d.id, d.deadline])).toEqual([[2, 'b', 8]]);
      expect(await q.inspect()).toEqual(
        view(3, { active: [{ token: 2, id: 'b', deadline: 8, deliveryCount: 1 }] }),
      );
    });

    it.each(TIMED_OPERATIONS)(
      'R2 %s refuses a now behind the clock or not a safe integer ≥ 0 with a ClockError, and nothing changes',
      async (_name, operation) => {
        const { queue, session } = await busyQueue(h);
        for (const now of BAD_NOWS) {
          const error = await expectRefusedUnchanged(
            queue,
            () => operation(queue, now as number, session),
            ClockError,
            'INVALID_CLOCK',
          );
          // Over HTTP `now` is the server's; JSON carries only a finite refused now back.
          if (!h.viaClient || Number.isFinite(now)) expect(error.now).toBe(now);
          expect(error.queueTime).toBe(7);
        }
        expect(await queue.queueTime()).toBe(7);
      },
    );
  });

  describe('R3 every operation first advances the clock', () => {
    it('R3 a stale ack still advances the clock, reclaims due deliveries and promotes due delayed jobs', async () => {
      const q = await h.queue({ visibility: 5 });
      await q.publish(0, { id: 'a' });
      await q.publish(0, { id: 'b', delay: 3 });
      await q.publish(0, { id: 'c' });
      expect((await q.reserve(0)).map((d) => d.token)).toEqual([1]);
      expect(await q.inspect()).toEqual(
        view(0, {
          ready: ['c'],
          delayed: [{ id: 'b', availableAt: 3 }],
          active: [{ token: 1, id: 'a', deadline: 5, deliveryCount: 1 }],
        }),
      );
      // An ack of an issued token, stale by now: every target sends it (R3 runs at 9).
      expect(await q.ack(9, 1)).toBe(false);
      // a is reclaimed to the front (R12), then b is promoted to the back.
      expect(await q.inspect()).toEqual(view(9, { ready: ['a', 'c', 'b'] }));
      expect(await q.stats(9)).toMatchObject({ staleAcks: 1, expiries: 1, acks: 0 });
    });

    it('R3 delayed jobs are promoted to the back of ready in availableAt order, then publish order', async () => {
      const q = await h.queue();
      await q.publish(0, { id: 'x', delay: 5 }); // availableAt 5
      await q.publish(0, { id: 'z', delay: 4 }); // availableAt 4, published before y
      await q.publish(1, { id: 'y', delay: 3 }); // availableAt 4
      await q.publish(1, { id: 'r' });
      expect(await q.inspect()).toEqual(
        view(1, {
          ready: ['r'],
          delayed: [
            { id: 'z', availableAt: 4 },
            { id: 'y', availableAt: 4 },
            { id: 'x', availableAt: 5 },
          ],
        }),
      );
      await q.stats(4);
      expect(await q.inspect()).toEqual(
        view(4, { ready: ['r', 'z', 'y'], delayed: [{ id: 'x', availableAt: 5 }] }),
      );
      await q.publish(4, { id: 'q' });
      await q.stats(10);
      expect(await q.inspect()).toEqual(view(10, { ready: ['r', 'z', 'y', 'q', 'x'] }));
    });

    it('R3 reclaim happens before the operation acts: a job is reserved again at its deadline', async () => {
      const q = await h.queue({ visibility: 4 });
      await q.publish(0, { id: 'a', payload: [1, 2] });
      await q.publish(0, { id: 'b', payload: null });
      await q.reserve(0);
      expect(await q.reserve(4)).toEqual([
        { token: 2, id: 'a', payload: [1, 2], deadline: 8, deliveryCount: 2, redelivered: true },
      ]);
      expect(await q.inspect()).toEqual(
        view(4, { ready: ['b'], active: [{ token: 2, id: 'a', deadline: 8, deliveryCount: 2 }] }),
      );
    });

    it('R3 a session whose heartbeat timed out ends before the operation acts', async () => {
      const q = await h.queue({ visibility: 100 });
      await q.publish(0, { id: 'a' });
      await q.publish(0, { id: 'b' });
      const s = await q.openSession(0, { timeout: 3 });
      await q.reserve(0, { session: s });
      expect(await q.reserve(3)).toEqual([
        {
          token: 2,
          id: 'a',
          payload: undefined,
          deadline: 103,
          deliveryCount: 2,
          redelivered: true,
        },
      ]);
      expect(await q.inspect()).toEqual(
        view(3, { ready: ['b'], active: [{ token: 2, id: 'a', deadline: 103, deliveryCount: 2 }] }),
      );
    });

    it('R3 an operation that then fails has still advanced the clock and reclaimed', async () => {
      const q = await h.queue({ visibility: 10 });
      await q.publish(0, { id: 'a' });
      await q.publish(0, { id: 'b' });
      const s = await q.openSession(0, { timeout: 3 });
      await q.reserve(0, { session: s }); // token 1: a, deadline 10
      await q.reserve(0); // token 2: b, deadline 10
      await expectRejection(() => q.heartbeat(11, s), SessionClosedError, 'SESSION_CLOSED');
      expect(await q.inspect()).toEqual(view(11, { ready: ['a', 'b'] }));
      expect(await q.ack(11, 1)).toBe(false);
      expect(await q.ack(11, 2)).toBe(false);
    });

    it('R3 inspection takes no time and changes nothing', async () => {
      const q = await h.queue({ visibility: 5 });
      await q.publish(0, { id: 'a' });
      await q.publish(0, { id: 'b', delay: 2 });
      await q.reserve(0);
      const expected = view(0, {
        delayed: [{ id: 'b', availableAt: 2 }],
        active: [{ token: 1, id: 'a', deadline: 5, deliveryCount: 1 }],
      });
      for (let round = 0; round < 2; round++) {
        expect(await q.inspect()).toEqual(expected);
        expect(await q.queueTime()).toBe(0);
        expect(await q.job('a')).toMatchObject({ state: 'active', token: 1, deadline: 5 });
        expect(await q.job('b')).toMatchObject({ state: 'delayed', availableAt: 2 });
        expect(await q.deadLetters()).toEqual([]);
        if (!h.viaClient) expect(await q.nextEventAt()).toBe(2); // not served over HTTP
        expect((await q.options()).visibility).toBe(5);
      }
    });
  });
});
