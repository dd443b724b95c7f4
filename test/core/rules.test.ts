import { describe, expect, it } from 'vitest';
import { ClockError } from '../../src/core/errors.js';
import { LeaseQueue } from '../../src/core/index.js';
import { expectError, queueWith, view } from './helpers.js';

describe('time (R1–R3)', () => {
  it('R1 a new queue starts at clock 0, accepts 0 and any larger safe integer tick', () => {
    const q = new LeaseQueue({ visibility: 5 });
    expect(q.queueTime).toBe(0);
    expect(q.inspect()).toEqual(view(0));
    expect(q.publish(0, { id: 'a' })).toEqual({ id: 'a', duplicate: false });
    const far = Number.MAX_SAFE_INTEGER - 10;
    const [d] = q.reserve(far);
    expect(d).toMatchObject({ token: 1, id: 'a', deadline: far + 5, deliveryCount: 1 });
    expect(q.queueTime).toBe(far);
  });

  it('R2 now equal to the clock is legal; a smaller now is a ClockError and nothing changes', () => {
    const q = queueWith(['a', 'b']);
    q.reserve(7, { visibility: 3 });
    const snapshot = q.inspect();
    expect(q.publish(7, { id: 'c' }).duplicate).toBe(false);
    expect(q.reserve(7)[0]).toMatchObject({ token: 2, id: 'b', deadline: 7 + 30000 });
    const before = q.inspect();
    expect(before.active.map((a) => a.token)).toEqual([1, 2]);
    const err = expectError(() => q.publish(6, { id: 'd' }), ClockError, 'INVALID_CLOCK');
    expect(err.queueTime).toBe(7);
    expect(err.now).toBe(6);
    expect(q.queueTime).toBe(7);
    expect(q.inspect()).toEqual(before);
    expect(snapshot.queueTime).toBe(7);
  });

  it('R3 a stale ack still advances the clock, reclaims due deliveries and promotes delayed jobs', () => {
    const q = new LeaseQueue({ visibility: 5 });
    q.publish(0, { id: 'a' });
    q.publish(0, { id: 'b', delay: 3 });
    q.publish(0, { id: 'c' });
    expect(q.reserve(0).map((d) => d.token)).toEqual([1]);
    expect(q.inspect()).toEqual(
      view(0, {
        ready: ['c'],
        delayed: [{ id: 'b', availableAt: 3 }],
        active: [{ token: 1, id: 'a', deadline: 5, deliveryCount: 1 }],
      }),
    );
    expect(q.ack(9, 999)).toBe(false);
    // a is reclaimed to the front (R12), then b is promoted to the back.
    expect(q.inspect()).toEqual(view(9, { ready: ['a', 'c', 'b'] }));
  });

  it('R3 delayed jobs are promoted in availableAt order, then publish order', () => {
    const q = new LeaseQueue();
    q.publish(0, { id: 'x', delay: 5 }); // availableAt 5
    q.publish(0, { id: 'z', delay: 4 }); // availableAt 4, published before y
    q.publish(1, { id: 'y', delay: 3 }); // availableAt 4
    q.publish(1, { id: 'r' });
    expect(q.inspect().delayed).toEqual([
      { id: 'z', availableAt: 4 },
      { id: 'y', availableAt: 4 },
      { id: 'x', availableAt: 5 },
    ]);
    q.stats(4);
    expect(q.inspect()).toEqual(
      view(4, { ready: ['r', 'z', 'y'], delayed: [{ id: 'x', availableAt: 5 }] }),
    );
    q.stats(10);
    expect(q.inspect()).toEqual(view(10, { ready: ['r', 'z', 'y', 'x'] }));
  });

  it('R3 reclaim happens before the operation: a due job can be reserved at its deadline', () => {
    const q = new LeaseQueue({ visibility: 4 });
    q.publish(0, { id: 'a', payload: [1, 2] });
    q.publish(0, { id: 'b', payload: null });
    q.reserve(0);
    const [d] = q.reserve(4);
    expect(d).toEqual({
      token: 2,
      id: 'a',
      payload: [1, 2],
      deadline: 8,
      deliveryCount: 2,
      redelivered: true,
    });
    expect(q.inspect()).toEqual(
      view(4, { ready: ['b'], active: [{ token: 2, id: 'a', deadline: 8, deliveryCount: 2 }] }),
    );
  });

  it('R3 inspection takes no time and changes nothing', () => {
    const q = queueWith(['a'], { visibility: 2 });
    q.reserve(0);
    const first = q.inspect();
    first.ready.push('mutated');
    first.active.length = 0;
    expect(q.inspect()).toEqual(
      view(0, { active: [{ token: 1, id: 'a', deadline: 2, deliveryCount: 1 }] }),
    );
    expect(q.queueTime).toBe(0);
    expect(q.deadLetters()).toEqual([]);
    expect(q.queueTime).toBe(0);
  });
});

describe('publishing (R4, R5)', () => {
  it('R4 publish appends to the back of ready, or to delayed at now + delay', () => {
    const q = new LeaseQueue();
    q.publish(2, { id: 'a', payload: { n: 1 } });
    q.publish(2, { id: 'b', delay: 0 });
    q.publish(3, { id: 'c', delay: 7 });
    q.publish(3, { id: 'd' });
    expect(q.inspect()).toEqual(
      view(3, { ready: ['a', 'b', 'd'], delayed: [{ id: 'c', availableAt: 10 }] }),
    );
    expect(q.reserve(3)[0]).toMatchObject({ id: 'a', payload: { n: 1 } });
  });

  it('R4 generated ids are unique non-empty strings', () => {
    const q = new LeaseQueue();
    const ids = Array.from({ length: 50 }, () => q.publish(0, {}));
    for (const r of ids) {
      expect(typeof r.id).toBe('string');
      expect(r.id.length).toBeGreaterThan(0);
      expect(r.duplicate).toBe(false);
    }
    expect(new Set(ids.map((r) => r.id)).size).toBe(50);
    expect(q.inspect().ready).toEqual(ids.map((r) => r.id));
  });

  it('R4 publishing an id present in ready, delayed, active or dead is a no-op duplicate', () => {
    const q = new LeaseQueue({ visibility: 10 });
    q.publish(0, { id: 'act', payload: 1 });
    q.publish(0, { id: 'rdy', payload: 2 });
    q.publish(0, { id: 'dly', payload: 3, delay: 50 });
    q.publish(0, { id: 'ded', payload: 4 });
    const [t1] = q.reserve(0);
    q.reserve(0);
    q.reserve(0);
    q.publish(0, { id: 'rdy2' });
    expect(t1?.id).toBe('act');
    const ded = q.inspect().active.find((a) => a.id === 'ded');
    expect(q.nack(1, ded?.token ?? -1, { requeue: false })).toBe(true);
    q.nack(1, 2, { requeue: true }); // rdy back to ready
    const before = q.inspect();
    expect(before).toEqual(
      view(1, {
        ready: ['rdy', 'rdy2'],
        delayed: [{ id: 'dly', availableAt: 50 }],
        active: [{ token: 1, id: 'act', deadline: 10, deliveryCount: 1 }],
        dead: [{ id: 'ded', reason: 'rejected', deliveryCount: 1 }],
      }),
    );
    for (const id of ['act', 'rdy', 'dly', 'ded']) {
      expect(q.publish(2, { id, payload: 'other', delay: 3 })).toEqual({ id, duplicate: true });
    }
    expect(q.inspect()).toEqual({ ...before, queueTime: 2 });
    expect(q.reserve(2)[0]).toMatchObject({ id: 'rdy', payload: 2 });
    expect(q.deadLetters()[0]?.payload).toBe(4);
  });

  it('R4 with the default dedupWindow 0 an acked id can be published again as a new job', () => {
    const q = queueWith(['a']);
    const [d] = q.reserve(0);
    expect(q.ack(1, d?.token ?? -1)).toBe(true);
    expect(q.publish(1, { id: 'a', payload: 'second' })).toEqual({ id: 'a', duplicate: false });
    expect(q.reserve(1)[0]).toMatchObject({
      token: 2,
      id: 'a',
      payload: 'second',
      deliveryCount: 1,
      redelivered: false,
    });
  });

  it('R4 dedupWindow remembers an acked id until ackedAt + dedupWindow (exclusive)', () => {
    const q = new LeaseQueue({ dedupWindow: 10 });
    q.publish(0, { id: 'a' });
    const [d] = q.reserve(0);
    expect(q.ack(3, d?.token ?? -1)).toBe(true);
    expect(q.publish(3, { id: 'a' })).toEqual({ id: 'a', duplicate: true });
    expect(q.publish(12, { id: 'a' })).toEqual({ id: 'a', duplicate: true });
    expect(q.inspect()).toEqual(view(12));
    expect(q.publish(13, { id: 'a' })).toEqual({ id: 'a', duplicate: false });
    expect(q.inspect()).toEqual(view(13, { ready: ['a'] }));
    expect(q.stats(13)).toMatchObject({ published: 2, duplicates: 2 });
  });

  it('R5 publishBatch commits every entry in order, duplicates included', () => {
    const q = queueWith(['x']);
    const out = q.publishBatch(1, [
      { id: 'a' },
      { id: 'x' },
      { id: 'b', delay: 4 },
      { id: 'a' },
      { id: 'c' },
    ]);
    expect(out).toEqual([
      { id: 'a', duplicate: false },
      { id: 'x', duplicate: true },
      { id: 'b', duplicate: false },
      { id: 'a', duplicate: true },
      { id: 'c', duplicate: false },
    ]);
    expect(q.inspect()).toEqual(
      view(1, { ready: ['x', 'a', 'c'], delayed: [{ id: 'b', availableAt: 5 }] }),
    );
  });
});

describe('reserving (R6, R7)', () => {
  it('R6 reserve takes from the front, at most max, with deadline, count and redelivered', () => {
    const q = new LeaseQueue({ visibility: 10 });
    q.publishBatch(0, [
      { id: 'a', payload: 'A' },
      { id: 'b', payload: 'B' },
      { id: 'c', payload: 'C' },
    ]);
    expect(q.reserve(1, { max: 2, visibility: 3 })).toEqual([
      { token: 1, id: 'a', payload: 'A', deadline: 4, deliveryCount: 1, redelivered: false },
      { token: 2, id: 'b', payload: 'B', deadline: 4, deliveryCount: 1, redelivered: false },
    ]);
    expect(q.reserve(2, { max: 5 })).toEqual([
      { token: 3, id: 'c', payload: 'C', deadline: 12, deliveryCount: 1, redelivered: false },
    ]);
    expect(q.reserve(2, { max: 5 })).toEqual([]);
    expect(q.inspect().active).toEqual([
      { token: 1, id: 'a', deadline: 4, deliveryCount: 1 },
      { token: 2, id: 'b', deadline: 4, deliveryCount: 1 },
      { token: 3, id: 'c', deadline: 12, deliveryCount: 1 },
    ]);
  });

  it('R6 the default visibility is 30000', () => {
    const q = queueWith(['a']);
    expect(q.reserve(5)[0]?.deadline).toBe(30005);
  });

  it('R6 the queue prefetch bounds active deliveries of the whole queue', () => {
    const q = queueWith(['a', 'b', 'c', 'd'], { prefetch: 2 });
    expect(q.reserve(0, { max: 5 }).map((d) => d.id)).toEqual(['a', 'b']);
    expect(q.reserve(0, { max: 5 })).toEqual([]);
    expect(q.ack(1, 1)).toBe(true);
    expect(q.reserve(1, { max: 5 }).map((d) => [d.token, d.id])).toEqual([[3, 'c']]);
    expect(q.inspect().active.map((a) => a.token)).toEqual([2, 3]);
    expect(q.inspect().ready).toEqual(['d']);
  });

  it('R6 the deadline is bounded by maxLease: now + min(visibility, maxLease)', () => {
    const q = queueWith(['a', 'b'], { maxLease: 8, visibility: 20 });
    expect(q.reserve(2)[0]?.deadline).toBe(10);
    expect(q.reserve(2, { visibility: 5 })[0]?.deadline).toBe(7);
  });

  it('R7 tokens count up from 1 by one per reservation and are never reused', () => {
    const q = queueWith(['a', 'b'], { visibility: 2 });
    const seen: number[] = [];
    for (let t = 0; t < 20; t += 2) {
      for (const d of q.reserve(t, { max: 2 })) seen.push(d.token);
      if (t === 6) q.ack(t, seen[seen.length - 1] ?? -1);
    }
    expect(seen).toEqual(Array.from({ length: seen.length }, (_, i) => i + 1));
    expect(seen.length).toBe(14);
  });
});

describe('completing (R8–R10)', () => {
  it('R8 ack of a live token removes the job; afterwards and at the deadline it is false', () => {
    const q = queueWith(['a', 'b'], { visibility: 5 });
    q.reserve(0, { max: 2 });
    expect(q.ack(4, 1)).toBe(true);
    expect(q.ack(4, 1)).toBe(false);
    expect(q.ack(5, 2)).toBe(false); // deadline 5 <= now 5: reclaimed first
    expect(q.ack(5, 77)).toBe(false);
    expect(q.inspect()).toEqual(view(5, { ready: ['b'] }));
  });

  it('R8 a stale token never completes the newer delivery of the same job', () => {
    const q = queueWith(['a'], { visibility: 5 });
    q.reserve(0);
    const [d2] = q.reserve(6);
    expect(d2).toMatchObject({ token: 2, id: 'a', deliveryCount: 2, redelivered: true });
    expect(q.ack(7, 1)).toBe(false);
    expect(q.nack(7, 1)).toBe(false);
    expect(q.extend(7, 1, 100)).toBeNull();
    expect(q.inspect()).toEqual(
      view(7, { active: [{ token: 2, id: 'a', deadline: 11, deliveryCount: 2 }] }),
    );
    expect(q.ack(8, 2)).toBe(true);
  });

  it('R9 nack with requeue puts the job at the front of ready, keeping deliveryCount', () => {
    const q = queueWith(['a', 'b', 'c']);
    q.reserve(0);
    expect(q.nack(1, 1)).toBe(true);
    expect(q.inspect()).toEqual(view(1, { ready: ['a', 'b', 'c'] }));
    expect(q.reserve(1)[0]).toMatchObject({
      token: 2,
      id: 'a',
      deliveryCount: 2,
      redelivered: true,
    });
  });

  it('R9 nack with a delay moves the job to delayed at now + delay', () => {
    const q = queueWith(['a', 'b']);
    q.reserve(0);
    expect(q.nack(2, 1, { delay: 4 })).toBe(true);
    expect(q.inspect()).toEqual(view(2, { ready: ['b'], delayed: [{ id: 'a', availableAt: 6 }] }));
    expect(q.reserve(5)[0]?.id).toBe('b');
    expect(q.reserve(5)).toEqual([]);
    expect(q.reserve(6)[0]).toMatchObject({ token: 3, id: 'a', deliveryCount: 2 });
  });

  it('R9 nack without requeue dead-letters with reason rejected or the given reason', () => {
    const q = queueWith(['a', 'b', 'c']);
    q.reserve(0, { max: 2 });
    expect(q.nack(1, 1, { requeue: false })).toBe(true);
    expect(q.reject(1, 2, { requeue: false, reason: 'poison' })).toBe(true);
    expect(q.inspect()).toEqual(
      view(1, {
        ready: ['c'],
        dead: [
          { id: 'a', reason: 'rejected', deliveryCount: 1 },
          { id: 'b', reason: 'poison', deliveryCount: 1 },
        ],
      }),
    );
  });

  it('R9 a stale nack or reject returns false and changes nothing', () => {
    const q = queueWith(['a', 'b'], { visibility: 5 });
    q.reserve(0);
    q.ack(1, 1);
    const before = q.inspect();
    expect(q.nack(1, 1)).toBe(false);
    expect(q.reject(1, 1, { requeue: false })).toBe(false);
    expect(q.nack(1, 42, { requeue: false })).toBe(false);
    expect(q.inspect()).toEqual(before);
  });

  it('R9 reject behaves exactly like nack', () => {
    const q = queueWith(['a', 'b']);
    q.reserve(0, { max: 2 });
    expect(q.reject(1, 2)).toBe(true);
    expect(q.reject(1, 1, { delay: 3 })).toBe(true);
    expect(q.inspect()).toEqual(view(1, { ready: ['b'], delayed: [{ id: 'a', availableAt: 4 }] }));
  });

  it('R10 extend sets deadline = now + visibility, and may shorten the lease', () => {
    const q = queueWith(['a', 'b'], { visibility: 5 });
    q.reserve(0, { max: 2 });
    expect(q.extend(3, 1, 10)).toBe(13);
    expect(q.extend(3, 2, 1)).toBe(4);
    expect(q.inspect().active).toEqual([
      { token: 1, id: 'a', deadline: 13, deliveryCount: 1 },
      { token: 2, id: 'b', deadline: 4, deliveryCount: 1 },
    ]);
    expect(q.ack(4, 2)).toBe(false);
    expect(q.ack(12, 1)).toBe(true);
    expect(q.inspect()).toEqual(view(12, { ready: ['b'] }));
  });

  it('R10 the deadline never passes deliveredAt + maxLease; stale extends return null', () => {
    const q = queueWith(['a'], { visibility: 4, maxLease: 10 });
    q.reserve(2);
    expect(q.extend(5, 1, 20)).toBe(12);
    expect(q.extend(9, 1, 2)).toBe(11);
    expect(q.extend(10, 1, 5)).toBe(12);
    expect(q.extend(12, 1, 5)).toBeNull();
    expect(q.extend(12, 99, 5)).toBeNull();
    expect(q.inspect()).toEqual(view(12, { ready: ['a'] }));
    expect(q.stats(12)).toMatchObject({ extensions: 3, staleExtends: 2, expiries: 1 });
  });
});
