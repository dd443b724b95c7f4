import { describe, expect, it } from 'vitest';
import { SessionClosedError } from '../../src/core/index.js';
import type { QueueHandle } from '../../src/engine/index.js';
import { expectRejection, view } from './assertions.js';
import { useConformanceEngines } from './engines.js';
import { describeEngines } from './suite.js';

const engines = await useConformanceEngines({ socket: true });

/** Every operation that names a session. */
const SESSION_OPERATIONS: [string, (q: QueueHandle, now: number, s: string) => Promise<unknown>][] =
  [
    ['reserve', (q, now, s) => q.reserve(now, { session: s })],
    ['heartbeat', (q, now, s) => q.heartbeat(now, s)],
    ['closeSession', (q, now, s) => q.closeSession(now, s)],
    ['ackUpTo', (q, now, s) => q.ackUpTo(now, s, 10)],
    ['nackUpTo', (q, now, s) => q.nackUpTo(now, s, 10)],
  ];

describeEngines(engines, (h) => {
  describe('R16 sessions', () => {
    it('R16 openSession returns a new id each time; deliveries made under a session belong to it', async () => {
      const q = await h.queue({ visibility: 5 });
      await q.publishBatch(0, [{ id: 'a' }, { id: 'b' }]);
      const one = await q.openSession(0);
      const two = await q.openSession(0, { prefetch: 3, timeout: 100, ackTimeout: 50 });
      expect(typeof one).toBe('string');
      expect(typeof two).toBe('string');
      expect(one).not.toBe(two);
      await q.reserve(1, { session: two });
      await q.reserve(1, { session: one });
      expect(await q.inspect()).toEqual(
        view(1, {
          active: [
            { token: 1, id: 'a', deadline: 6, deliveryCount: 1, session: two },
            { token: 2, id: 'b', deadline: 6, deliveryCount: 1, session: one },
          ],
        }),
      );
      expect(await q.stats(1)).toMatchObject({ sessions: 2 });
    });

    it('R16 a session ends at lastHeartbeat + timeout; opening counts as a heartbeat', async () => {
      const q = await h.queue({ visibility: 100 });
      await q.publishBatch(0, [{ id: 'a' }, { id: 'b' }]);
      const s = await q.openSession(0, { timeout: 10 });
      await q.reserve(2, { session: s }); // 1 a, deadline 102
      await q.heartbeat(9, s);
      expect(await q.stats(18)).toMatchObject({ sessions: 1, active: 1 });
      expect(await q.stats(19)).toMatchObject({ sessions: 0, active: 0, sessionReleases: 1 });
      expect(await q.inspect()).toEqual(view(19, { ready: ['a', 'b'] }));
      const error = await expectRejection(
        () => q.heartbeat(19, s),
        SessionClosedError,
        'SESSION_CLOSED',
      );
      expect(error.session).toBe(s);
      expect(await q.ack(19, 1)).toBe(false);
      expect(await q.job('a')).toMatchObject({
        history: [{ token: 1, deliveredAt: 2, endedAt: 19, outcome: 'session-ended' }],
      });
      const t = await q.openSession(20, { timeout: 5 });
      expect(await q.stats(24)).toMatchObject({ sessions: 1 });
      expect(await q.stats(25)).toMatchObject({ sessions: 0 });
      await expectRejection(() => q.heartbeat(25, t), SessionClosedError, 'SESSION_CLOSED');
    });

    it('R16 ackTimeout ends the session when one of its live deliveries is held that long', async () => {
      const q = await h.queue({ visibility: 100 });
      await q.publishBatch(0, [{ id: 'a' }, { id: 'b' }, { id: 'c' }]);
      const s = await q.openSession(0, { ackTimeout: 10 });
      await q.reserve(2, { session: s }); // 1 a
      await q.reserve(5, { session: s }); // 2 b
      expect(await q.stats(11)).toMatchObject({ sessions: 1, active: 2 });
      expect(await q.stats(12)).toMatchObject({ sessions: 0, active: 0, sessionReleases: 2 });
      expect(await q.inspect()).toEqual(view(12, { ready: ['a', 'b', 'c'] }));
      await expectRejection(
        () => q.reserve(12, { session: s }),
        SessionClosedError,
        'SESSION_CLOSED',
      );
    });

    it('R16 ackTimeout counts live deliveries only: acked or expired ones do not end the session', async () => {
      const q = await h.queue({ visibility: 100 });
      await q.publishBatch(0, [{ id: 'a' }, { id: 'b' }, { id: 'c' }]);
      const s = await q.openSession(0, { ackTimeout: 10 });
      await q.reserve(0, { session: s }); // 1 a
      await q.reserve(0, { session: s, visibility: 3 }); // 2 b: expires at 3, before 10
      expect(await q.ack(1, 1)).toBe(true);
      expect(await q.stats(20)).toMatchObject({ sessions: 1, expiries: 1, sessionReleases: 0 });
      expect((await q.reserve(20, { session: s }))[0]).toMatchObject({ token: 3, id: 'b' });
    });

    it('R16 a delivery live at deliveredAt + ackTimeout ends its session then, even if seen later', async () => {
      const q = await h.queue({ visibility: 15, maxDeliveries: 1 });
      await q.publish(0, { id: 'a' });
      const s = await q.openSession(0, { ackTimeout: 10 });
      await q.reserve(0, { session: s });
      expect(await q.stats(20)).toMatchObject({ sessions: 0, sessionReleases: 1, expiries: 0 });
      expect(await q.deadLetters()).toEqual([
        {
          id: 'a',
          payload: undefined,
          reason: 'max-deliveries',
          deliveryCount: 1,
          deadAt: 20,
          history: [{ token: 1, deliveredAt: 0, endedAt: 20, outcome: 'session-ended' }],
        },
      ]);
      await expectRejection(
        () => q.reserve(20, { session: s }),
        SessionClosedError,
        'SESSION_CLOSED',
      );
    });

    it('R16 a released delivery whose own lease ran out before its session ended counts as expired', async () => {
      const q = await h.queue({ visibility: 5, maxDeliveries: 1 });
      await q.publishBatch(0, [{ id: 'a' }, { id: 'b' }]);
      const s = await q.openSession(0, { timeout: 10 });
      await q.reserve(0, { session: s }); // 1 a, deadline 5
      await q.reserve(0, { session: s, visibility: 50 }); // 2 b, deadline 50
      expect(await q.stats(20)).toMatchObject({ sessions: 0, expiries: 1, sessionReleases: 1 });
      expect((await q.deadLetters()).map((d) => [d.id, d.history[0]?.outcome])).toEqual([
        ['a', 'expired'],
        ['b', 'session-ended'],
      ]);
    });

    it('R16 closeSession releases its live deliveries at once, to the front in token order', async () => {
      const q = await h.queue({ visibility: 10 });
      await q.publishBatch(
        0,
        ['a', 'b', 'c', 'd'].map((id) => ({ id })),
      );
      const s = await q.openSession(0);
      await q.reserve(0, { session: s, max: 2 }); // 1 a, 2 b
      await q.reserve(0); // 3 c
      expect(await q.closeSession(1, s)).toBe(2);
      expect(await q.inspect()).toEqual(
        view(1, {
          ready: ['a', 'b', 'd'],
          active: [{ token: 3, id: 'c', deadline: 10, deliveryCount: 1 }],
        }),
      );
      expect(await q.ackMany(1, [1, 2])).toEqual([false, false]);
      expect(await q.job('b')).toMatchObject({
        state: 'ready',
        deliveryCount: 1,
        history: [{ token: 2, deliveredAt: 0, endedAt: 1, outcome: 'session-ended' }],
      });
      expect(await q.stats(1)).toMatchObject({ sessions: 0, sessionReleases: 2 });
      const empty = await q.openSession(1);
      expect(await q.closeSession(2, empty)).toBe(0);
    });

    it('R16 a session ended by its heartbeat timeout dead-letters what is out of deliveries (R13)', async () => {
      const q = await h.queue({ visibility: 100, maxDeliveries: 1 });
      await q.publish(0, { id: 'a' });
      const s = await q.openSession(0, { timeout: 5 });
      await q.reserve(1, { session: s });
      await q.stats(5);
      expect(await q.inspect()).toEqual(
        view(5, { dead: [{ id: 'a', reason: 'max-deliveries', deliveryCount: 1 }] }),
      );
    });

    it.each(SESSION_OPERATIONS)(
      'R16 %s naming an ended session fails with SessionClosedError, after time advanced (R3)',
      async (_name, operation) => {
        const q = await h.queue({ visibility: 5 });
        await q.publishBatch(0, [{ id: 'a' }, { id: 'b' }]);
        const s = await q.openSession(0);
        await q.reserve(0, { session: s }); // 1 a
        await q.reserve(0, { visibility: 3 }); // 2 b, deadline 3
        expect(await q.closeSession(1, s)).toBe(1);
        const error = await expectRejection(
          () => operation(q, 3, s),
          SessionClosedError,
          'SESSION_CLOSED',
        );
        expect(error.session).toBe(s);
        expect(await q.inspect()).toEqual(view(3, { ready: ['b', 'a'] }));
      },
    );
  });
});
