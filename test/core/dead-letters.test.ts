import { describe, expect, it } from 'vitest';
import { LeaseQueue } from '../../src/core/index.js';
import { queueWith, view } from './helpers.js';

describe('expiry (R12)', () => {
  it('R12 deliveries reclaimed in one step return in token order ahead of the ready jobs', () => {
    const q = queueWith(['a', 'b', 'c', 'd', 'e']);
    q.reserve(0, { visibility: 10 }); // 1 a, deadline 10
    q.reserve(0, { visibility: 3 }); // 2 b, deadline 3
    q.reserve(0, { visibility: 6 }); // 3 c, deadline 6
    expect(q.inspect().ready).toEqual(['d', 'e']);
    q.stats(10);
    expect(q.inspect()).toEqual(view(10, { ready: ['a', 'b', 'c', 'd', 'e'] }));
    expect([q.ack(10, 1), q.ack(10, 2), q.ack(10, 3)]).toEqual([false, false, false]);
    expect(q.reserve(10, { max: 3, visibility: 1 })).toEqual([
      { token: 4, id: 'a', payload: 'A', deadline: 11, deliveryCount: 2, redelivered: true },
      { token: 5, id: 'b', payload: 'B', deadline: 11, deliveryCount: 2, redelivered: true },
      { token: 6, id: 'c', payload: 'C', deadline: 11, deliveryCount: 2, redelivered: true },
    ]);
  });

  it('R12 deliveries reclaimed at different steps each go to the front at their own step', () => {
    const q = queueWith(['a', 'b', 'c', 'd', 'e']);
    q.reserve(0, { visibility: 10 });
    q.reserve(0, { visibility: 3 });
    q.reserve(0, { visibility: 6 });
    q.stats(4);
    expect(q.inspect().ready).toEqual(['b', 'd', 'e']);
    q.stats(10);
    expect(q.inspect()).toEqual(view(10, { ready: ['a', 'c', 'b', 'd', 'e'] }));
  });
});

describe('max deliveries (R13)', () => {
  it('R13 an expiring delivery with deliveryCount >= maxDeliveries is dead-lettered', () => {
    const q = queueWith(['a', 'b'], { visibility: 5, maxDeliveries: 2 });
    q.reserve(0);
    q.stats(5);
    expect(q.inspect()).toEqual(view(5, { ready: ['a', 'b'] }));
    expect(q.reserve(5)[0]).toMatchObject({ token: 2, id: 'a', deliveryCount: 2 });
    q.stats(10);
    expect(q.inspect()).toEqual(
      view(10, { ready: ['b'], dead: [{ id: 'a', reason: 'max-deliveries', deliveryCount: 2 }] }),
    );
    expect(q.reserve(10)[0]).toMatchObject({ token: 3, id: 'b' });
    expect(q.reserve(10)).toEqual([]);
  });

  it('R13 nack with requeue, with or without delay, dead-letters at the limit', () => {
    const q = queueWith(['a', 'b'], { maxDeliveries: 2 });
    q.reserve(0, { max: 2 });
    expect(q.nack(1, 1)).toBe(true);
    expect(q.nack(1, 2, { delay: 4 })).toBe(true);
    expect(q.inspect()).toEqual(view(1, { ready: ['a'], delayed: [{ id: 'b', availableAt: 5 }] }));
    q.reserve(5, { max: 2 }); // 3 a, 4 b: both deliveryCount 2
    expect(q.nack(6, 3)).toBe(true);
    expect(q.nack(6, 4, { delay: 4 })).toBe(true);
    expect(q.inspect()).toEqual(
      view(6, {
        dead: [
          { id: 'a', reason: 'max-deliveries', deliveryCount: 2 },
          { id: 'b', reason: 'max-deliveries', deliveryCount: 2 },
        ],
      }),
    );
    expect(q.stats(6).deadLetters['max-deliveries']).toBe(2);
  });

  it('R13 with maxDeliveries 1 the first failure is final; several die in token order', () => {
    const q = queueWith(['a', 'b', 'c'], { maxDeliveries: 1 });
    q.reserve(0, { visibility: 8 });
    q.reserve(0, { visibility: 2 });
    q.stats(8);
    expect(q.inspect()).toEqual(
      view(8, {
        ready: ['c'],
        dead: [
          { id: 'a', reason: 'max-deliveries', deliveryCount: 1 },
          { id: 'b', reason: 'max-deliveries', deliveryCount: 1 },
        ],
      }),
    );
  });

  it('R13 maxDeliveries Infinity never dead-letters', () => {
    const q = queueWith(['a'], { visibility: 1, maxDeliveries: Number.POSITIVE_INFINITY });
    for (let t = 0; t < 40; t++) {
      expect(q.reserve(t)[0]).toMatchObject({ token: t + 1, id: 'a', deliveryCount: t + 1 });
    }
    q.stats(40);
    expect(q.inspect()).toEqual(view(40, { ready: ['a'] }));
  });

  it('R13 the default maxDeliveries is 10', () => {
    const q = queueWith(['a'], { visibility: 1 });
    for (let t = 0; t < 10; t++) q.reserve(t);
    q.stats(10);
    expect(q.inspect().dead).toEqual([{ id: 'a', reason: 'max-deliveries', deliveryCount: 10 }]);
  });
});

describe('dead letters (R14)', () => {
  it('R14 a dead job keeps its payload and full history', () => {
    const q = new LeaseQueue({ visibility: 5, maxDeliveries: 2 });
    q.publish(0, { id: 'a', payload: { x: 1 } });
    q.reserve(0);
    expect(q.nack(2, 1)).toBe(true);
    q.reserve(3); // token 2, deadline 8
    q.stats(8);
    expect(q.deadLetters()).toMatchObject([
      {
        id: 'a',
        payload: { x: 1 },
        reason: 'max-deliveries',
        deliveryCount: 2,
        deadAt: 8,
        history: [
          { token: 1, deliveredAt: 0, endedAt: 2, outcome: 'requeued' },
          { token: 2, deliveredAt: 3, endedAt: 8, outcome: 'expired' },
        ],
      },
    ]);
  });

  it('R14 a rejection records outcome rejected with its reason', () => {
    const q = queueWith(['a', 'b']);
    q.reserve(1, { max: 2 });
    q.reject(4, 1, { requeue: false, reason: 'poison' });
    q.nack(6, 2, { requeue: false });
    expect(q.deadLetters()).toMatchObject([
      {
        id: 'a',
        reason: 'poison',
        deliveryCount: 1,
        deadAt: 4,
        history: [{ token: 1, deliveredAt: 1, endedAt: 4, outcome: 'rejected', reason: 'poison' }],
      },
      {
        id: 'b',
        reason: 'rejected',
        deliveryCount: 1,
        deadAt: 6,
        history: [{ token: 2, deliveredAt: 1, endedAt: 6, outcome: 'rejected' }],
      },
    ]);
  });

  it('R14 redrive appends to the back of ready, resets deliveryCount and keeps history', () => {
    const q = queueWith(['a', 'x'], { visibility: 5, maxDeliveries: 1 });
    q.reserve(0); // 1 a
    q.stats(5);
    expect(q.inspect()).toEqual(
      view(5, { ready: ['x'], dead: [{ id: 'a', reason: 'max-deliveries', deliveryCount: 1 }] }),
    );
    expect(q.redrive(6)).toBe(1);
    expect(q.inspect()).toEqual(view(6, { ready: ['x', 'a'] }));
    expect(q.deadLetters()).toEqual([]);
    q.reserve(6); // 2 x
    expect(q.reserve(7)).toEqual([
      { token: 3, id: 'a', payload: 'A', deadline: 12, deliveryCount: 1, redelivered: false },
    ]);
    expect(q.reject(8, 3, { requeue: false, reason: 'again' })).toBe(true);
    expect(q.deadLetters()).toMatchObject([
      {
        id: 'a',
        reason: 'again',
        deliveryCount: 1,
        deadAt: 8,
        history: [
          { token: 1, deliveredAt: 0, endedAt: 5, outcome: 'expired' },
          { token: 3, deliveredAt: 7, endedAt: 8, outcome: 'rejected', reason: 'again' },
        ],
      },
    ]);
    expect(q.stats(8)).toMatchObject({ redriven: 1, dead: 1 });
  });

  it('R14 redrive with ids moves only the named dead jobs and ignores the others', () => {
    const q = queueWith(['a', 'b', 'c', 'x']);
    q.reserve(0, { max: 3 });
    for (const token of [1, 2, 3]) q.nack(1, token, { requeue: false });
    expect(q.redrive(2, ['c', 'zzz', 'x', 'a'])).toBe(2);
    const seen = q.inspect();
    expect(seen.ready[0]).toBe('x');
    expect([...seen.ready.slice(1)].sort()).toEqual(['a', 'c']);
    expect(seen.dead).toEqual([{ id: 'b', reason: 'rejected', deliveryCount: 1 }]);
    expect(q.redrive(3, ['x', 'nope'])).toBe(0);
    expect(q.redrive(3)).toBe(1);
    expect(q.redrive(3)).toBe(0);
    expect(q.inspect().ready.slice(-1)).toEqual(['b']);
  });

  it('R14 redrive without ids moves every dead job in dead order', () => {
    const q = queueWith(['a', 'b', 'c', 'x']);
    q.reserve(0, { max: 3 });
    for (const token of [2, 3, 1]) q.nack(1, token, { requeue: false });
    expect(q.inspect().dead.map((d) => d.id)).toEqual(['b', 'c', 'a']);
    expect(q.redrive(2)).toBe(3);
    expect(q.inspect()).toEqual(view(2, { ready: ['x', 'b', 'c', 'a'] }));
  });

  it('R14 purge removes the dead jobs, and their ids can be published again', () => {
    const q = queueWith(['a', 'b', 'c']);
    q.reserve(0, { max: 2 });
    q.nack(1, 1, { requeue: false });
    q.nack(1, 2, { requeue: false });
    expect(q.publish(1, { id: 'a' }).duplicate).toBe(true);
    expect(q.purge(2)).toBe(2);
    expect(q.deadLetters()).toEqual([]);
    expect(q.inspect()).toEqual(view(2, { ready: ['c'] }));
    expect(q.purge(2)).toBe(0);
    expect(q.publish(3, { id: 'a' })).toEqual({ id: 'a', duplicate: false });
    expect(q.stats(3)).toMatchObject({ purged: 2, dead: 0, ready: 2 });
  });
});
