import { describe, expect, it } from 'vitest';
import { LeaseQueue } from '../../src/core/index.js';
import { ReadyList } from '../../src/core/ready-list.js';
import { Counted, ids } from './helpers.js';

/**
 * R14 R24 R28: a job cancelled from inside a long ready list or group and redriven joins the
 * back again; each such pair takes O(1), not a pass over every job held.
 */

describe('R14 R24 R28 a job cancelled from inside and redriven', () => {
  it('in a group of 100,000, 2,000 times, each comes back at the back of the group, in order', () => {
    const q = new LeaseQueue({ visibility: 1_000_000 });
    q.publishBatch(
      0,
      ids(0, 100_000).map((id) => ({ id, group: 'g' })),
    );
    const cycled = ids(50_000, 52_000);
    for (const id of cycled) {
      expect(q.cancel(1, id)).toBe(true);
      expect(q.redrive(1, [id])).toBe(1);
    }
    // They wait at the back of the group, in the order they came back.
    const waiting = q.inspect().waiting ?? [];
    expect(waiting).toHaveLength(99_999);
    expect(waiting.slice(0, 3)).toEqual(['j1', 'j2', 'j3']);
    expect(waiting.slice(49_998, 50_001)).toEqual(['j49999', 'j52000', 'j52001']);
    expect(waiting.slice(-2_000)).toEqual(cycled);
  });

  it('in a ready list of 100,000, 500 times, each comes back at the back of the ready list, in order', () => {
    const q = new LeaseQueue({ visibility: 1_000_000 });
    q.publishBatch(
      0,
      ids(0, 100_000).map((id) => ({ id })),
    );
    const cycled = ids(50_000, 50_500);
    for (const id of cycled) {
      expect(q.cancel(1, id)).toBe(true);
      expect(q.redrive(1, [id])).toBe(1);
    }
    const ready = q.inspect().ready;
    expect(ready).toEqual([...ids(0, 50_000), ...ids(50_500, 100_000), ...cycled]);
    expect(q.stats(2)).toMatchObject({ ready: 100_000, oldestReadyAge: 2 });
  });

  it('reads the time of no other job of the ready list, at the front or the back', () => {
    const list = new ReadyList<Counted>();
    const jobs = Array.from({ length: 10_000 }, (_, i) => new Counted(i));
    for (const job of jobs.slice(0, 100)) list.pushFront(job);
    for (const job of jobs.slice(100)) list.pushBack(job);
    Counted.reads = 0;
    for (let i = 0; i < 100; i++) {
      const job = jobs[5_000 + i] as Counted;
      list.remove(job);
      job.availableAt = 20_000 + i;
      if (i % 2 === 0) list.pushBack(job);
      else list.pushFront(job);
    }
    // A pass over the list read each time some 20,000 times.
    expect(Counted.reads).toBeLessThanOrEqual(100 * 4);
    const order = Array.from(list.values());
    expect(order).toHaveLength(10_000);
    const readdedFront = jobs.slice(5_000, 5_100).filter((_, i) => i % 2 === 1);
    const readdedBack = jobs.slice(5_000, 5_100).filter((_, i) => i % 2 === 0);
    expect(order.slice(0, 50)).toEqual([...readdedFront].reverse());
    expect(order.slice(-50)).toEqual(readdedBack);
    expect(list.oldestReadySince()).toBe(0);
  });
});
