import { describe, expect, it } from 'vitest';
import { LeaseQueue } from '../../src/core/index.js';
import { ReadyList } from '../../src/core/ready-list.js';
import { Counted, ids } from './helpers.js';

/**
 * R17 R28: after a cancel from inside the ready list, even of the job that held the oldest-ready
 * age, stats give the exact age without a pass over the ready jobs.
 */

describe('R17 R28 the oldest-ready age after cancels from inside', () => {
  it('stats after each of 500 cancels of the job holding the age, among 100,000, give the exact age', () => {
    const q = new LeaseQueue({ visibility: 1_000_000 });
    // Published in one step at 0, then one at 1: the last published at 0 holds the age.
    q.publishBatch(
      0,
      ids(0, 100_000).map((id) => ({ id })),
    );
    q.publish(1, { id: 'later' });
    for (let n = 99_999; n >= 99_500; n--) {
      expect(q.cancel(2, `j${n}`, { remove: true })).toBe(true);
      expect(q.stats(2)).toMatchObject({ ready: n + 1, oldestReadyAge: 2 });
    }
    // The age moves on with the jobs that held it.
    const taken = q.reserve(3, { max: 99_500 });
    expect(taken).toHaveLength(99_500);
    expect(q.stats(5)).toMatchObject({ ready: 1, oldestReadyAge: 4 });
  });

  it('reads the time of no other job of the ready list when asked for the oldest', () => {
    const list = new ReadyList<Counted>();
    // A promoted delayed job can be earlier than one appended before it: the minimum is inside.
    const jobs = Array.from({ length: 10_000 }, (_, i) => new Counted(10_000 - i));
    for (const job of jobs) list.pushBack(job);
    list.pushBack(new Counted(20_000));
    Counted.reads = 0;
    for (let i = 9_999; i >= 9_000; i--) {
      list.remove(jobs[i] as Counted);
      expect(list.oldestReadySince()).toBe(10_000 - i + 1);
    }
    // A pass over the list read each time some 20,000 times.
    expect(Counted.reads).toBeLessThanOrEqual(1_000 * 2);
    expect(list.length).toBe(9_001);
  });
});
