import { describe, expect, it } from 'vitest';
import { ClockError } from '../../src/core/errors.js';
import { LeaseQueue } from '../../src/core/index.js';
import { busyQueue, expectError, queueWith, view } from './helpers.js';

describe('seed cases', () => {
  it('R12 seed: a later reservation that expires earlier still returns after the earlier token', () => {
    const q = queueWith(['job1', 'job2', 'job3', 'job4']);
    expect(q.reserve(0, { visibility: 10 })[0]).toMatchObject({
      token: 1,
      id: 'job1',
      deadline: 10,
    });
    expect(q.reserve(0, { visibility: 3 })[0]).toMatchObject({ token: 2, id: 'job2', deadline: 3 });
    q.stats(10);
    expect(q.inspect()).toEqual(view(10, { ready: ['job1', 'job2', 'job3', 'job4'] }));
  });

  it('R8 seed: a false ack reclaims the other due deliveries before answering', () => {
    const q = queueWith(['a', 'b', 'c', 'd']);
    q.reserve(0, { visibility: 4 }); // 1 a
    q.reserve(1, { visibility: 2 }); // 2 b, deadline 3
    q.reserve(1, { visibility: 20 }); // 3 c, deadline 21
    expect(q.ack(4, 2)).toBe(false);
    expect(q.inspect()).toEqual(
      view(4, {
        ready: ['a', 'b', 'd'],
        active: [{ token: 3, id: 'c', deadline: 21, deliveryCount: 1 }],
      }),
    );
    expect(q.stats(4)).toMatchObject({ staleAcks: 1, expiries: 2, acks: 0 });
  });

  it('R2 seed: many operations at one tick', () => {
    const q = new LeaseQueue({ visibility: 3 });
    q.publish(5, { id: 'a' });
    q.publish(5, { id: 'b' });
    q.publish(5, { id: 'c', delay: 0 });
    const ds = q.reserve(5, { max: 3 });
    expect(ds.map((d) => [d.token, d.deadline])).toEqual([
      [1, 8],
      [2, 8],
      [3, 8],
    ]);
    expect(q.ack(5, 1)).toBe(true);
    expect(q.nack(5, 2)).toBe(true);
    expect(q.extend(5, 3, 7)).toBe(12);
    expect(q.reserve(5)[0]).toMatchObject({ token: 4, id: 'b', deadline: 8, deliveryCount: 2 });
    expect(q.ack(5, 1)).toBe(false);
    expect(q.inspect()).toEqual(
      view(5, {
        active: [
          { token: 3, id: 'c', deadline: 12, deliveryCount: 1 },
          { token: 4, id: 'b', deadline: 8, deliveryCount: 2 },
        ],
      }),
    );
    expect(q.stats(5)).toMatchObject({
      queueTime: 5,
      acks: 1,
      nacks: 1,
      extensions: 1,
      staleAcks: 1,
    });
  });

  it('R2 seed: the busy queue fixture is what the bad-clock tests start from', () => {
    expect(busyQueue().q.queueTime).toBe(5);
  });
});

const BAD_NOW: [string, unknown][] = [
  ['1.5', 1.5],
  ['NaN', Number.NaN],
  ['Infinity', Number.POSITIVE_INFINITY],
  ['-Infinity', Number.NEGATIVE_INFINITY],
  ['-1', -1],
  ['"5"', '5'],
  ['"6"', '6'],
  ['null', null],
  ['undefined', undefined],
  ['2^53 (not safe)', 2 ** 53],
  ['4 (below the clock 5)', 4],
  ['0 (below the clock 5)', 0],
];

type Call = (q: LeaseQueue, now: number, s: string) => unknown;

const CALLS: [string, Call][] = [
  ['publish', (q, now) => q.publish(now, { id: 'new' })],
  ['publishBatch', (q, now) => q.publishBatch(now, [{ id: 'new' }])],
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
  ['nackUpTo', (q, now, s) => q.nackUpTo(now, s, 10, {})],
  ['redrive', (q, now) => q.redrive(now)],
  ['purge', (q, now) => q.purge(now)],
  ['stats', (q, now) => q.stats(now)],
];

describe('R2 every bad clock value is a ClockError before anything changes', () => {
  describe.each(BAD_NOW)('now = %s', (_label, bad) => {
    it.each(CALLS)('%s', (_name, call) => {
      const { q, s } = busyQueue();
      const before = q.inspect();
      const letters = q.deadLetters();
      const err = expectError(() => call(q, bad as number, s), ClockError, 'INVALID_CLOCK');
      expect(Object.is(err.now, bad)).toBe(true);
      expect(err.queueTime).toBe(5);
      expect(q.queueTime).toBe(5);
      expect(q.inspect()).toEqual(before);
      expect(q.deadLetters()).toEqual(letters);
      expect(q.stats(5)).toMatchObject({
        published: 5,
        deliveries: 3,
        acks: 0,
        nacks: 1,
        staleAcks: 0,
        staleNacks: 0,
        staleExtends: 0,
        extensions: 0,
        redriven: 0,
        purged: 0,
        autoAcked: 0,
        waiting: 0,
        sessions: 1,
      });
    });
  });
});
