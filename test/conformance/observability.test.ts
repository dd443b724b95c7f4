import { describe, expect, it } from 'vitest';
import { view } from './assertions.js';
import { useConformanceEngines } from './engines.js';
import { describeEngines } from './suite.js';

const engines = await useConformanceEngines();

describeEngines(engines, (h) => {
  describe('R17 stats', () => {
    it('R17 a new queue counts nothing', async () => {
      const q = await h.queue();
      expect(await q.stats(0)).toEqual({
        queueTime: 0,
        ready: 0,
        delayed: 0,
        active: 0,
        dead: 0,
        waiting: 0,
        sessions: 0,
        paused: false,
        oldestReadyAge: 0,
        published: 0,
        duplicates: 0,
        refused: 0,
        deliveries: 0,
        redeliveries: 0,
        acks: 0,
        nacks: 0,
        unworked: 0,
        expiries: 0,
        sessionReleases: 0,
        extensions: 0,
        staleAcks: 0,
        staleNacks: 0,
        staleExtends: 0,
        redriven: 0,
        purged: 0,
        autoAcked: 0,
        cancelled: 0,
        expired: 0,
        deadLetters: {},
        processingTime: { count: 0, sum: 0, max: 0 },
      });
    });

    it('R17 gauges and counters follow a mixed history exactly', async () => {
      const q = await h.queue({ visibility: 5, maxDeliveries: 2 });
      await q.publishBatch(0, [{ id: 'a' }, { id: 'b' }, { id: 'c' }]);
      await q.publish(0, { id: 'd', delay: 4 });
      await q.publish(0, { id: 'a' }); // duplicate
      await q.openSession(0);
      await q.reserve(1, { max: 2 }); // 1 a, 2 b: deadline 6
      await q.reserve(2); // 3 c: deadline 7
      expect(await q.extend(2, 2, 10)).toBe(12);
      expect(await q.ack(3, 1)).toBe(true); // held 2
      expect(await q.ack(3, 1)).toBe(false);
      expect(await q.nack(4, 3)).toBe(true); // d promoted at 4, then c to the front
      expect(await q.extend(4, 1, 5)).toBeNull(); // 1 is acked: stale
      expect(await q.nack(4, 1)).toBe(false);
      expect((await q.reserve(5, { max: 2 })).map((d) => [d.token, d.id])).toEqual([
        [4, 'c'],
        [5, 'd'],
      ]);
      // At 10 both expire: c is out of deliveries (2), d returns to the front.
      expect(await q.stats(10)).toEqual({
        queueTime: 10,
        ready: 1,
        delayed: 0,
        active: 1,
        dead: 1,
        waiting: 0,
        sessions: 1,
        paused: false,
        oldestReadyAge: 0,
        published: 4,
        duplicates: 1,
        refused: 0,
        deliveries: 5,
        redeliveries: 1,
        acks: 1,
        nacks: 1,
        unworked: 0,
        expiries: 2,
        sessionReleases: 0,
        extensions: 1,
        staleAcks: 1,
        staleNacks: 1,
        staleExtends: 1,
        redriven: 0,
        purged: 0,
        autoAcked: 0,
        cancelled: 0,
        expired: 0,
        deadLetters: { 'max-deliveries': 1 },
        processingTime: { count: 1, sum: 2, max: 2 },
      });
      expect(await q.ack(11, 2)).toBe(true); // held 10
      expect(await q.redrive(12)).toBe(1);
      expect(await q.purge(15)).toBe(0);
      expect(await q.inspect()).toEqual(view(15, { ready: ['d', 'c'] }));
      expect(await q.stats(15)).toEqual({
        queueTime: 15,
        ready: 2,
        delayed: 0,
        active: 0,
        dead: 0,
        waiting: 0,
        sessions: 1,
        paused: false,
        oldestReadyAge: 5,
        published: 4,
        duplicates: 1,
        refused: 0,
        deliveries: 5,
        redeliveries: 1,
        acks: 2,
        nacks: 1,
        unworked: 0,
        expiries: 2,
        sessionReleases: 0,
        extensions: 1,
        staleAcks: 1,
        staleNacks: 1,
        staleExtends: 1,
        redriven: 1,
        purged: 0,
        autoAcked: 0,
        cancelled: 0,
        expired: 0,
        deadLetters: { 'max-deliveries': 1 },
        processingTime: { count: 2, sum: 12, max: 10 },
      });
    });

    it('R17 the oldest ready job’s age counts from when it became ready', async () => {
      const q = await h.queue({ visibility: 5 });
      await q.publish(0, { id: 'x', delay: 3 });
      await q.publish(2, { id: 'y' });
      expect((await q.stats(2)).oldestReadyAge).toBe(0);
      expect((await q.stats(10)).oldestReadyAge).toBe(8); // y, ready since 2
      await q.reserve(10); // y
      expect((await q.stats(11)).oldestReadyAge).toBe(8); // x, ready since its availableAt 3
      await q.reserve(11); // x
      expect((await q.stats(12)).oldestReadyAge).toBe(0);
      await q.stats(15); // y expires at 15 and is ready again from then
      expect((await q.stats(19)).oldestReadyAge).toBe(4);
    });

    it('R17 R26 a job that arrived from a queue whose clock was ahead is no negative age', async () => {
      const target = await h.queue();
      const source = await h.queue({ deadLetterQueue: target.name });
      await source.publish(100, { id: 'x' });
      const [delivery] = await source.reserve(100);
      await source.nack(100, delivery?.token as number, { requeue: false });
      // Ready from 100 (R26), in a queue whose clock is behind: its age is 0, not 50 - 100.
      expect(await target.stats(50)).toMatchObject({ ready: 1, oldestReadyAge: 0 });
      expect((await target.stats(130)).oldestReadyAge).toBe(30);
    });
  });

  describe('job(id)', () => {
    it('R14 R17 job(id) shows a job in each state with its attempt history, and undefined once gone', async () => {
      const q = await h.queue({ visibility: 5 });
      await q.publishBatch(0, [
        { id: 'r', payload: { r: 1 } },
        { id: 'a', payload: 'A' },
        { id: 'x' },
        { id: 'w', delay: 9 },
      ]);
      await q.reserve(1); // 1 r
      await q.nack(2, 1); // r back to the front
      await q.reserve(2, { max: 2 }); // 2 r, 3 a
      await q.nack(3, 2, { requeue: false, reason: 'broken' });
      await q.reserve(3); // 4 x
      expect(await q.ack(4, 4)).toBe(true);
      expect(await q.job('r')).toEqual({
        id: 'r',
        payload: { r: 1 },
        state: 'dead',
        deliveryCount: 2,
        publishedAt: 0,
        reason: 'broken',
        deadAt: 3,
        history: [
          { token: 1, deliveredAt: 1, endedAt: 2, outcome: 'requeued' },
          { token: 2, deliveredAt: 2, endedAt: 3, outcome: 'rejected', reason: 'broken' },
        ],
      });
      expect(await q.job('a')).toEqual({
        id: 'a',
        payload: 'A',
        state: 'active',
        deliveryCount: 1,
        publishedAt: 0,
        token: 3,
        deadline: 7,
        history: [],
      });
      expect(await q.job('w')).toEqual({
        id: 'w',
        payload: undefined,
        state: 'delayed',
        deliveryCount: 0,
        publishedAt: 0,
        availableAt: 9,
        history: [],
      });
      expect(await q.job('x')).toBeUndefined();
      expect(await q.job('never')).toBeUndefined();
      await q.stats(7); // a expires
      expect(await q.job('a')).toEqual({
        id: 'a',
        payload: 'A',
        state: 'ready',
        deliveryCount: 1,
        publishedAt: 0,
        history: [{ token: 3, deliveredAt: 2, endedAt: 7, outcome: 'expired' }],
      });
    });
  });

  describe.skipIf(h.viaClient)('nextEventAt()', () => {
    it('R3 nextEventAt is the earliest time at which time alone changes the queue', async () => {
      const q = await h.queue({ visibility: 10 });
      expect(await q.nextEventAt()).toBeUndefined();
      await q.publish(0, { id: 'a' });
      expect(await q.nextEventAt()).toBeUndefined(); // ready jobs wait for no time
      await q.publish(0, { id: 'b', delay: 8 });
      expect(await q.nextEventAt()).toBe(8);
      await q.reserve(1); // a, deadline 11
      expect(await q.nextEventAt()).toBe(8);
      await q.stats(8); // b ready
      expect(await q.nextEventAt()).toBe(11);
      const s = await q.openSession(9, { timeout: 1 });
      expect(await q.nextEventAt()).toBe(10);
      await q.closeSession(9, s);
      expect(await q.nextEventAt()).toBe(11);
      await q.extend(9, 1, 100);
      expect(await q.nextEventAt()).toBe(109);
      expect(await q.ack(9, 1)).toBe(true);
      expect(await q.nextEventAt()).toBeUndefined();
    });

    it('R16 nextEventAt includes a session’s ack timeout when it comes before the lease deadline', async () => {
      const q = await h.queue({ visibility: 100 });
      await q.publishBatch(0, [{ id: 'a' }, { id: 'b' }]);
      const s = await q.openSession(0, { ackTimeout: 30 });
      await q.reserve(5, { session: s, visibility: 20 }); // deadline 25 before 35: no ack timer
      expect(await q.nextEventAt()).toBe(25);
      await q.reserve(6, { session: s }); // deadline 106, ack timeout at 36
      expect(await q.nextEventAt()).toBe(25);
      expect(await q.ack(7, 1)).toBe(true);
      expect(await q.nextEventAt()).toBe(36);
    });
  });
});
